#!/bin/bash
# What git offers to make a worktree's first checkout (and its later scans) cheaper, measured:
# checkout.workers (parallel checkout: 1, 2, 0 = one per core) for the first fill of a new
# worktree, and core.untrackedCache for status and add --all, on a repository of N files.
# Three rounds; ORDER="0 2 1" runs the workers in another order (the first of a round pays the
# deletion of the previous worktree's files). Run: bench/bench_first_checkout.sh [N]
set -e
N=${1:-20000}
R=${TMPDIR:-/tmp}/rho-first-checkout-$N
if [ ! -d $R ]; then
  mkdir -p $R && cd $R && git init -q -b main
  python3 - <<PY
import os
for i in range($N):
    d=f"d{i//500:03}"; os.makedirs(d, exist_ok=True)
    open(f"{d}/f{i:05}.txt","w").write("".join(f"line {j} of file {i}\n" for j in range(20)))
PY
  git add -A && git -c user.name=a -c user.email=a@a -c gc.auto=0 commit -qm init && git gc -q
fi
cd $R
t() { local s=$(date +%s.%N); "$@" >/dev/null 2>&1; local e=$(date +%s.%N); echo "$(echo "$e - $s" | bc)"; }
for round in 1 2 3; do
  for w in ${ORDER:-1 2 0}; do
    rm -rf $R-wt; git worktree prune
    git worktree add -q --detach --no-checkout $R-wt HEAD
    echo "round $round checkout.workers=$w: $(t git -C $R-wt -c checkout.workers=$w -c checkout.thresholdForParallelism=1 checkout -q --detach --force HEAD)"
  done
  echo "round $round status plain: $(t git -C $R-wt status --porcelain=v2 --untracked-files=all --ignored=matching)"
  echo "round $round status untrackedCache: $(t git -C $R-wt -c core.untrackedCache=true status --porcelain=v2 --untracked-files=all --ignored=matching)"
  echo "round $round status untrackedCache again: $(t git -C $R-wt -c core.untrackedCache=true status --porcelain=v2 --untracked-files=all --ignored=matching)"
  echo "round $round add --all plain: $(t git -C $R-wt add --all)"
  echo "round $round add --all untrackedCache: $(t git -C $R-wt -c core.untrackedCache=true add --all)"
  echo "round $round checkout -b: $(t git -C $R-wt checkout -q --force -b b$round HEAD)"
  echo "round $round clean: $(t git -C $R-wt clean -ffdxq)"
done
rm -rf $R-wt; git worktree prune
