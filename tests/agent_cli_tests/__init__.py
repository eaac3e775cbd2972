"""Tests of the real agent CLIs (claude, codex, gemini, aider) against a scripted model server."""
