#!/usr/bin/env python3
"""A stand-in for a planning agent: deterministic, offline, shaped like the real ones.

rho runs it once, in a worktree of the mission's base, with the RHO_* environment. It reads
the prompt from $RHO_PROMPT_FILE and writes a plan (rho.plan/v1) to $RHO_PLAN_FILE, as an agent
told to would. Its plan has one feature per prompt line of the form

    - ID: SUBJECT
    - ID: SUBJECT (after ID, ID...)

(the second form gives the feature its blockers); the PRD is the prompt's text. A prompt with
no such line gives a plan without features, which rho refuses, as it would an agent's.

Called with arguments, as an agent's command line would call it (claude -p "$(cat ...)"), it
checks that one of them is the prompt itself or the prompt file's path, so that a recipe which
loses the prompt on the way fails loudly. Other arguments (the agent's flags) are ignored.

Exit 0: plan written. Exit 2: not run by rho, or the prompt did not arrive.
"""

from __future__ import annotations

import json
import os
import re
import sys

_LINE = re.compile(r"^\s*-\s+([A-Za-z0-9_][A-Za-z0-9._-]*):\s+(.+?)(?:\s+\(after\s+([^)]*)\))?\s*$")
# rho appends the plan's format to the prompt under this line; the user's words come before.
_RHO_PART = "\n---\n\n## The plan rho needs"


def main() -> int:
    prompt_file = os.environ.get("RHO_PROMPT_FILE", "")
    plan_file = os.environ.get("RHO_PLAN_FILE", "")
    if not prompt_file or not plan_file:
        print(
            "stand-in-planner: no RHO_PROMPT_FILE or RHO_PLAN_FILE; run me through rho",
            file=sys.stderr,
        )
        return 2
    with open(prompt_file, encoding="utf-8") as handle:
        prompt = handle.read()
    # "$(cat FILE)" drops the file's last newlines: compare without them.
    given = {arg.rstrip("\n") for arg in sys.argv[1:]}
    if len(sys.argv) > 1 and not given & {prompt.rstrip("\n"), prompt_file}:
        print("stand-in-planner: the prompt did not arrive through the arguments", file=sys.stderr)
        return 2
    words = prompt.split(_RHO_PART, 1)[0]
    features = []
    for line in words.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        ident, subject, after = match.groups()
        blockers = [b.strip() for b in (after or "").split(",") if b.strip()]
        features.append(
            {
                "id": ident,
                "subject": subject,
                "description": f"Build: {subject}",
                "blockers": blockers,
            }
        )
    plan = {"schema_version": "rho.plan/v1", "prd": words.strip(), "features": features}
    with open(plan_file, "w", encoding="utf-8") as handle:
        json.dump(plan, handle, indent=2)
    print(f"stand-in-planner: {len(features)} feature(s) planned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
