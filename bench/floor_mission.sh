#!/usr/bin/env bash
# The git floor of a wave-by-wave mission: the git work any orchestrator of this kind
# needs per task, as a tight loop, for bench/bench_repo_size.py to time beside rho.
#
# Usage: bench/floor_mission.sh REPO TASKS_FILE [PREFIX]
#
# TASKS_FILE holds one task a line, "wave<TAB>id<TAB>command", sorted by wave (any labels; a
# new label starts a new wave). PREFIX (default "floor") names the branches: PREFIX/<id> per task
# and PREFIX/integration, which must not exist yet. From REPO's HEAD:
#
#   - a pool of FLOOR_WORKERS (default 4) worktrees, made once with `git worktree add --detach`
#     (one after another) in FLOOR_POOL (default REPO.PREFIX-pool, which must not exist);
#   - per task, in a free pooled worktree (4 tasks at a time, handed out through a FIFO of slot
#     numbers): `git checkout -q -B PREFIX/<id> <wave start>`, the command with /bin/sh -c,
#     `git add -A`, `git commit -q`;
#   - after each wave, serially per task in file order: `git merge-tree --write-tree` of the
#     integration head and the task's branch, `git commit-tree` of that tree with both parents,
#     `git update-ref` of PREFIX/integration (old value checked); the next wave starts from it;
#   - at the end the pool is removed (`git worktree remove --force`).
#
# Prints the integration head. Exits 1 when a task, a merge (a conflict) or a git call fails,
# leaving the pool and branches for inspection; 2 on bad arguments.
set -euo pipefail

if (($# < 2 || $# > 3)); then
    echo "usage: $0 REPO TASKS_FILE [PREFIX]" >&2
    exit 2
fi
repo=$(cd "$1" && pwd)
tasks_file=$2
prefix=${3:-floor}
workers=${FLOOR_WORKERS:-4}
pool=${FLOOR_POOL:-$repo.$prefix-pool}
integration=refs/heads/$prefix/integration

waves=()
ids=()
commands=()
while IFS=$'\t' read -r wave id command; do
    [[ -z $wave ]] && continue
    waves+=("$wave")
    ids+=("$id")
    commands+=("$command")
done <"$tasks_file"
count=${#ids[@]}
if ((count == 0)); then
    echo "floor: no task in $tasks_file" >&2
    exit 2
fi

state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT

head=$(git -C "$repo" rev-parse --verify 'HEAD^{commit}')
git -C "$repo" update-ref "$integration" "$head" ""

# One after another: a `worktree add` reads the others' half-made .git/worktrees entries.
mkdir "$pool"
for ((slot = 0; slot < workers; slot++)); do
    git -C "$repo" worktree add -q --detach "$pool/$slot" "$head"
done

# The free slots: a FIFO holding one line per free worktree; a task takes one and gives it back.
mkfifo "$state/slots"
exec 3<>"$state/slots"
for ((slot = 0; slot < workers; slot++)); do
    echo "$slot" >&3
done

run_task() { # slot id command start
    local tree=$pool/$1
    git -C "$tree" checkout -q -B "$prefix/$2" "$4" &&
        (cd "$tree" && /bin/sh -c "$3") &&
        git -C "$tree" add -A &&
        git -C "$tree" commit -q -m "task $2"
}

index=0
while ((index < count)); do
    wave=${waves[index]}
    first=$index
    pids=()
    while ((index < count)) && [[ ${waves[index]} == "$wave" ]]; do
        read -r -u 3 slot
        {
            code=0
            run_task "$slot" "${ids[index]}" "${commands[index]}" "$head" || code=$?
            echo "$slot" >&3
            exit "$code"
        } &
        pids+=("$!")
        index=$((index + 1))
    done
    failed=0
    for pid in "${pids[@]}"; do
        wait "$pid" || failed=1
    done
    if ((failed)); then
        echo "floor: a task of wave $wave failed" >&2
        exit 1
    fi
    for ((task = first; task < index; task++)); do
        branch=$prefix/${ids[task]}
        if ! tree=$(git -C "$repo" merge-tree --write-tree "$head" "$branch"); then
            echo "floor: $branch does not merge cleanly into $integration" >&2
            exit 1
        fi
        new=$(git -C "$repo" commit-tree "$tree" -p "$head" -p "$branch" -m "merge ${ids[task]}")
        git -C "$repo" update-ref "$integration" "$new" "$head"
        head=$new
    done
done
exec 3>&-

for ((slot = 0; slot < workers; slot++)); do
    git -C "$repo" worktree remove --force "$pool/$slot"
done
rmdir "$pool"
echo "$head"
