"""The script of a test's model: turns and the usage each answer reports."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "NO_USAGE",
    "SIDE_USAGE",
    "TURN_USAGE",
    "Fail",
    "Hang",
    "Reply",
    "RunCommand",
    "Turn",
    "Usage",
    "WriteFile",
]


@dataclass(frozen=True)
class Usage:
    """Tokens one answer reports: *input_tokens* counts all input, *cached_tokens* included."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
        )


NO_USAGE = Usage(0, 0)
TURN_USAGE = Usage(1000, 50)
SIDE_USAGE = Usage(100, 7)


@dataclass(frozen=True)
class WriteFile:
    """Call the agent's file-writing tool: create *path* (as the CLI wants it) holding *content*."""

    path: str
    content: str
    usage: Usage = TURN_USAGE


@dataclass(frozen=True)
class RunCommand:
    """Call the agent's shell tool with *command*."""

    command: str
    usage: Usage = TURN_USAGE


@dataclass(frozen=True)
class Reply:
    """Answer with final text, no tool call."""

    text: str
    usage: Usage = TURN_USAGE


@dataclass(frozen=True)
class Fail:
    """From here on, answer every request with HTTP *status* (500, 429, ...)."""

    status: int


@dataclass(frozen=True)
class Hang:
    """From here on, answer no request: hold it until the server stops (*streaming*: after the
    headers of an event stream, as a model that stalls mid-answer)."""

    streaming: bool = False


Turn = WriteFile | RunCommand | Reply | Fail | Hang
