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
# of this folder: the same agent, given a conflict instead of a task; run as a planner
# (RHO_PLAN_FILE set: --planner-agent), it is stand-in-planner.py.
#
# Run under an agent's name (a link named claude, codex, gemini or aider on PATH, as the tests
# do), it ends by printing what it spent in that agent's documented machine-readable shape
# (see README.md, "What a mission costs"): claude's result object, codex's JSON lines, gemini's
# stats, aider's token line. What it spends: STAND_IN_COST_USD dollars (default 0.25) and
# STAND_IN_TOKENS_IN / _OUT / _CACHED tokens (1200 / 300 / 800). As claude, given
# --max-budget-usd X below that cost, it stops as claude does at its cap: half done, the
# result's subtype error_max_budget_usd, exit 1.
#
# Exit 0: done. Exit 1: the flaky first attempt, or claude's budget stop. Exit 2: not run by
# rho, or the prompt did not arrive through the arguments.
set -eu

name=$(basename -- "$0")
cost=${STAND_IN_COST_USD:-0.25}
tokens_in=${STAND_IN_TOKENS_IN:-1200}
tokens_out=${STAND_IN_TOKENS_OUT:-300}
tokens_cached=${STAND_IN_TOKENS_CACHED:-800}

# What it spent, as the agent named $name reports it; $1: claude's subtype, $2: the cost.
report() {
    fresh=$((tokens_in - tokens_cached))
    case "$name" in
    claude)
        error=false
        [ "$1" = success ] || error=true
        printf '{"type":"result","subtype":"%s","is_error":%s,"duration_ms":1200,' "$1" "$error"
        printf '"num_turns":3,"result":"stand-in: %s","session_id":"stand-in-%s",' "$task" "$task"
        printf '"total_cost_usd":%s,"usage":{"input_tokens":%s,' "$2" "$fresh"
        printf '"cache_creation_input_tokens":0,"cache_read_input_tokens":%s,' "$tokens_cached"
        printf '"output_tokens":%s,"service_tier":"standard"},' "$tokens_out"
        printf '"modelUsage":{"claude-sonnet-4-5":{"inputTokens":%s,"outputTokens":%s,' \
            "$fresh" "$tokens_out"
        printf '"cacheReadInputTokens":%s,"cacheCreationInputTokens":0,"costUSD":%s}}}\n' \
            "$tokens_cached" "$2"
        ;;
    codex)
        printf '{"type":"thread.started","thread_id":"stand-in-%s"}\n' "$task"
        printf '{"type":"turn.started"}\n'
        printf '{"type":"item.completed","item":{"id":"item_0","type":"agent_message",'
        printf '"text":"stand-in: %s"}}\n' "$task"
        printf '{"type":"turn.completed","usage":{"input_tokens":%s,' "$tokens_in"
        printf '"cached_input_tokens":%s,"output_tokens":%s}}\n' "$tokens_cached" "$tokens_out"
        ;;
    gemini)
        printf '{\n  "response": "stand-in: %s",\n  "stats": {\n    "models": {\n' "$task"
        printf '      "gemini-2.5-pro": {\n        "api": {"totalRequests": 2},\n'
        printf '        "tokens": {"prompt": %s, "candidates": %s, "total": %s, ' \
            "$tokens_in" "$tokens_out" "$((tokens_in + tokens_out))"
        printf '"cached": %s, "thoughts": 0, "tool": 0}\n      }\n    }\n  }\n}\n' \
            "$tokens_cached"
        ;;
    aider)
        printf 'Tokens: %s sent, %s cache hit, %s received. Cost: $%s message, $%s session.\n' \
            "$((tokens_in - tokens_cached))" "$tokens_cached" "$tokens_out" "$2" "$2"
        ;;
    esac
}

here=$(CDPATH='' cd -- "$(dirname -- "$(readlink -f -- "$0")")" && pwd)
if [ "${RHO_STAGE:-}" = resolve ] || [ -n "${RHO_PLAN_FILE:-}" ]; then
    # A resolver, or the planner (--planner-agent): the stand-ins of this folder do the work;
    # this agent reports what it spent, as it does for a task.
    task=${RHO_TASK_ID:-plan}
    if [ "${RHO_STAGE:-}" = resolve ]; then
        "$here/stand-in-resolver.sh" "$@"
    else
        "$here/stand-in-planner.py" "$@"
    fi
    report success "$cost"
    exit 0
fi

prompt_file=${RHO_TASK_PROMPT_FILE:-}
if [ -z "$prompt_file" ] || [ ! -r "$prompt_file" ]; then
    echo "stand-in-agent: no readable RHO_TASK_PROMPT_FILE; run me through rho mission" >&2
    exit 2
fi
prompt=$(cat "$prompt_file")

cap=
if [ "$#" -gt 0 ]; then
    found=no
    after=
    for argument in "$@"; do
        if [ "$argument" = "$prompt" ] || [ "$argument" = "$prompt_file" ]; then
            found=yes
        fi
        [ "$after" = --max-budget-usd ] && cap=$argument
        after=$argument
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
    report error_during_execution "$cost"
    exit 1
fi

if [ "$name" = claude ] && [ -n "$cap" ] && awk "BEGIN { exit !($cost > $cap) }"; then
    echo "half done" > "$task.partial"
    report error_max_budget_usd "$cap"
    exit 1
fi

printf '%s: %s\n' "$task" "$subject" >> NOTES.md
git add NOTES.md
git -c user.name="stand-in agent" -c user.email=stand-in-agent@example.invalid \
    -c commit.gpgsign=false commit --quiet --no-verify -m "$task: note" -- NOTES.md

mkdir -p tasks
printf '%s\nattempt %s\n' "$subject" "$attempt" > "tasks/$task.txt"
report success "$cost"
