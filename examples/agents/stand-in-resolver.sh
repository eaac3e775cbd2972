#!/bin/sh
# A stand-in for an agent that resolves a merge conflict: deterministic, offline, and for the
# commonest conflict of parallel agents only: each side appended lines to the same file (a
# registry, an __init__.py, a changelog).
#
# rho runs it (rho mission --resolve ...) in a worktree holding the conflicted merge: git's
# markers in the files, the unmerged paths in the index, $RHO_CONFLICT_FILE naming the brief.
# For every unmerged path it keeps both sides' lines, ours first, drops the markers (and the
# base's lines of a diff3-style conflict), and marks the path resolved with "git add", which a
# resolver need not do (rho stages what a resolver leaves; this one shows that one that does
# still works). It does not commit: rho commits the merge.
#
# Called with arguments, as an agent's command line would call it, it checks that one of them
# is the prompt or the prompt file's path, like stand-in-agent.sh. Exit 0: resolved. Exit 2:
# not run by rho's resolve stage, or the prompt did not arrive.
set -eu

brief=${RHO_CONFLICT_FILE:-}
prompt_file=${RHO_TASK_PROMPT_FILE:-}
if [ -z "$brief" ] || [ ! -r "$brief" ] || [ ! -r "$prompt_file" ]; then
    echo "stand-in-resolver: no readable RHO_CONFLICT_FILE; run me through rho mission --resolve" >&2
    exit 2
fi

if [ "$#" -gt 0 ]; then
    prompt=$(cat "$prompt_file")
    found=no
    for argument in "$@"; do
        if [ "$argument" = "$prompt" ] || [ "$argument" = "$prompt_file" ]; then
            found=yes
        fi
    done
    if [ "$found" = no ]; then
        echo "stand-in-resolver: none of my arguments is the prompt or its file: $*" >&2
        exit 2
    fi
fi

resolved=""
newline='
'
old_ifs=$IFS
IFS=$newline
for path in $(git diff --name-only --diff-filter=U); do
    IFS=$old_ifs
    kept="$path.stand-in-resolver"
    sed -e '/^||||||| /,/^=======$/d' -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' \
        "$path" > "$kept"
    cat "$kept" > "$path"
    rm -f "$kept"
    git add -- "$path"
    resolved="$resolved $path"
done
IFS=$old_ifs
echo "stand-in-resolver: ${RHO_TASK_ID:?}: kept both sides in:${resolved:- nothing}"
