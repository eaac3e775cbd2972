"""Record the answers of a real ``rho serve`` that the three SDK clients are tested against.

Run from the repository root: ``.venv/bin/python sdk/contract/record.py``. It makes a scratch
repository, runs a mission there (``t1`` completes, ``t2`` fails, ``t3`` waits for ``t2``), starts
``rho serve`` with the token ``contract-token-of-the-sdks``, and writes into this folder:

- one file per answer (the body as the server sent it) and ``answers.json``, which names, for
  each request path (query included), the status, the content type and the file;
- ``tampered-graph.json``: the mission's graph with one edge's target changed to a node the
  graph does not hold, which every client must refuse with its invalid-graph error.

The recorded files are committed; run this again only when the API changes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
RHO = Path(sys.executable).with_name("rho")
TOKEN = "contract-token-of-the-sdks"
_URL = re.compile(r"^rho serve: (http://[^/]+)/")


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch) / "project"
        env = _env(Path(scratch))
        _mission(repo, env)
        token_file = Path(scratch) / "token"
        token_file.write_text(TOKEN, encoding="utf-8")
        server = subprocess.Popen(
            [str(RHO), "serve", "--port", "0", "--token-file", str(token_file)],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            match = _URL.match(server.stdout.readline())
            assert match is not None, "rho serve printed no URL"
            _record(match.group(1), repo)
        finally:
            server.kill()
            server.wait()


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RHO_", "GIT_"))}
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t.invalid",
    )
    return env


def _mission(repo: Path, env: dict[str, str]) -> None:
    def run(*args: str) -> None:
        subprocess.run(args, cwd=repo, env=env, check=False, capture_output=True)

    repo.mkdir()
    run("git", "init", "-q", "-b", "main")
    run("git", "commit", "-q", "--allow-empty", "-m", "start")
    run(str(RHO), "task", "add", "Write a", "--command", "echo a > a.txt")
    run(str(RHO), "task", "add", "Fail", "--command", "echo trying; exit 3")
    run(str(RHO), "task", "add", "After the failure", "--command", "true", "--blocked-by", "task_2")
    run(str(RHO), "mission", "--from-tasks")


def _record(base: str, repo: Path) -> None:
    (mission_id,) = [p.name for p in (repo / ".rho" / "missions").iterdir()]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    scoped = f"/v1/missions/{mission_id}/graph?repository=acme%2Fwidgets"
    requests = {
        "missions": ("/v1/missions", auth),
        "mission": (f"/v1/missions/{mission_id}", auth),
        "mission-graph": (f"/v1/missions/{mission_id}/graph", auth),
        "mission-graph-scoped": (scoped, auth),
        "task-graph": ("/v1/tasks/graph", auth),
        "log": (f"/v1/missions/{mission_id}/logs/task_2?tail=5", auth),
        "events": (f"/v1/missions/{mission_id}/events", auth),
        "error-401": ("/v1/missions", {"Authorization": "Bearer wrong"}),
        "error-404": ("/v1/missions/ffffffff", auth),
        "error-400": (f"/v1/missions/{mission_id}/logs/task_2?tail=0", auth),
        "error-400-scope": ("/v1/tasks/graph?repository=%20", auth),
    }
    answers = []
    with httpx.Client(base_url=base, timeout=30) as http:
        for name, (path, headers) in requests.items():
            response = http.get(path, headers=headers)
            suffix = ".txt" if name == "events" else ".json"
            (HERE / f"{name}{suffix}").write_bytes(response.content)
            answers.append(
                {
                    "name": name,
                    "path": path,
                    "status": response.status_code,
                    "content_type": response.headers["content-type"].split(";")[0],
                    "file": f"{name}{suffix}",
                    "authorized": headers is auth,
                }
            )
    graph = json.loads((HERE / "mission-graph.json").read_bytes())
    graph["edges"][0]["to"]["id"] = f"rho/mission-feature/{mission_id}/ghost"
    (HERE / "tampered-graph.json").write_text(json.dumps(graph, indent=2) + "\n", encoding="utf-8")
    index = {"token": TOKEN, "mission_id": mission_id, "answers": answers}
    (HERE / "answers.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(repo / ".rho" / "worktrees", ignore_errors=True)


if __name__ == "__main__":
    main()
