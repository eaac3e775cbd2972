#!/bin/sh
# A stand-in for a coding agent: deterministic, offline, and shaped like the real ones.
#
# rho runs it in the task's worktree with the RHO_* environment. It reads the task from
# $RHO_TASK_PROMPT_FILE (whose first line is "# <task subject>") and then, like an agent:
#   - appends "<task id>: <subject>" to NOTES.md and commits that itself (as aider does);
#   - writes tasks/<task id>.txt and leaves it uncommitted (as Claude Code and Codex do):
#     rho commits whatever a task leaves in its worktree, committed or not;
#   - fails its first attempt when the prompt says "flaky", after leaving a half-done file
#     behind, to show that a retry (--retries N) starts again from a clean worktree.
#
# Called with arguments, as an agent's command line would call it (claude -p "$(cat ...)",
# aider --message-file ...), it checks that one of them is the prompt itself or the prompt
# file's path, so that a recipe which loses the prompt on the way fails loudly. Other
# arguments (the agent's flags) are ignored.
#
# Run as a resolver (rho mission --resolve ..., RHO_STAGE=resolve), it is stand-in-resolver.sh
# of this folder: the same agent, given a conflict instead of a task.
#
# Exit 0: done. Exit 1: the flaky first attempt. Exit 2: not run by rho, or the prompt did not
# arrive through the arguments.
set -eu

if [ "${RHO_STAGE:-}" = resolve ]; then
    here=$(CDPATH='' cd -- "$(dirname -- "$(readlink -f -- "$0")")" && pwd)
    exec "$here/stand-in-resolver.sh" "$@"
fi

prompt_file=${RHO_TASK_PROMPT_FILE:-}
if [ -z "$prompt_file" ] || [ ! -r "$prompt_file" ]; then
    echo "stand-in-agent: no readable RHO_TASK_PROMPT_FILE; run me through rho mission" >&2
    exit 2
fi
prompt=$(cat "$prompt_file")

if [ "$#" -gt 0 ]; then
    found=no
    for argument in "$@"; do
        if [ "$argument" = "$prompt" ] || [ "$argument" = "$prompt_file" ]; then
            found=yes
        fi
    done
    if [ "$found" = no ]; then
        echo "stand-in-agent: none of my arguments is the prompt or its file: $*" >&2
        exit 2
    fi
fi

subject=$(sed -n '1s/^# //p' "$prompt_file")
task=${RHO_TASK_ID:?}
attempt=${RHO_ATTEMPT:-1}
echo "stand-in-agent: $task attempt $attempt: $subject"

if [ "$attempt" = 1 ] && printf '%s\n' "$prompt" | grep -qi flaky; then
    echo "half done" > "$task.partial"
    echo "stand-in-agent: $task is flaky: failing attempt 1" >&2
    exit 1
fi

printf '%s: %s\n' "$task" "$subject" >> NOTES.md
git add NOTES.md
git -c user.name="stand-in agent" -c user.email=stand-in-agent@example.invalid \
    -c commit.gpgsign=false commit --quiet --no-verify -m "$task: note" -- NOTES.md

mkdir -p tasks
printf '%s\nattempt %s\n' "$subject" "$attempt" > "tasks/$task.txt"
