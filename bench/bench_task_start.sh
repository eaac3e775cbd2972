#!/bin/sh
# How long a task waits to start: a 30-task chain of tasks that each note when their
# first command ran; from the mission's journal, the median time from the engine's dispatch (and
# from the supervisor's start, the "process" event) to that first command.
#
# Run: bench/bench_task_start.sh [RHO] (default: .venv/bin/rho), and the same with
# RHO_TASK_CGROUPS=0 to see the cost of the move into each task's cgroup, or with the rho of
# another release (bench_scale.py installs them under /tmp/rho-old*). Nothing asserts on speed.
set -eu
RHO=$(realpath "${1:-.venv/bin/rho}")
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
mkdir "$SCRATCH/repo" "$SCRATCH/starts"
cd "$SCRATCH/repo"
git init -q -b main
for i in $(seq 1 200); do echo "$i" > "f$i.txt"; done
git add . && git -c user.name=b -c user.email=b@b commit -qm base
STARTS="$SCRATCH/starts" python3 - > "$SCRATCH/tasks.json" <<'PY'
import json, os
command = f'echo $(date +%s.%N) > {os.environ["STARTS"]}/$RHO_TASK_ID'
tasks = [
    {
        "id": f"t{i:03d}",
        "subject": "note the start",
        "status": "pending",
        "metadata": {"command": command},
        "dependencies": [{"targetId": f"t{i - 1:03d}", "type": "blocks"}] if i else [],
    }
    for i in range(30)
]
print(json.dumps({"tasks": tasks}))
PY
"$RHO" task import "$SCRATCH/tasks.json" > /dev/null
"$RHO" mission --from-tasks --workers 4 > /dev/null 2>&1
STARTS="$SCRATCH/starts" python3 - <<'PY'
import glob, json, os, statistics
from datetime import datetime

def at(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()

(journal,) = glob.glob(".rho/missions/*/journal.jsonl")
seen = {}
for line in open(journal):
    entry = json.loads(line)
    if entry["event"] in ("dispatch", "process") and entry.get("feature_id"):
        seen.setdefault(entry["feature_id"], {})[entry["event"]] = at(entry["at"])
waits = {"dispatch": [], "process": []}
for task, events in seen.items():
    started = float(open(os.path.join(os.environ["STARTS"], task)).read())
    for event, when in events.items():
        waits[event].append((started - when) * 1000)
for event, values in waits.items():
    print(f"{event} -> the task's first command: {statistics.median(values):.1f} ms (median of {len(values)})")
PY
