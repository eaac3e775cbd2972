"""The HTTP API of ``rho serve``, over a real server process and a real finished mission."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from filelock import FileLock

from support.repos import git
from support.repos import init_home_repo as make_repo
from support.rho import run_rho as rho
from support.stores import import_tasks, mission_ids
from support.stores import spec as task

from ._world import World, running_server

ROUTES = [
    "/v1/missions",
    "/v1/missions/{id}",
    "/v1/missions/{id}/graph",
    "/v1/missions/{id}/events",
    "/v1/missions/{id}/logs/task_2",
    "/v1/tasks/graph",
    "/v1/no-such-route",
]
# Ways of not sending the token: (headers, query).
BAD_CREDENTIALS = {
    "missing": ({}, ""),
    "wrong bearer": ({"Authorization": "Bearer not-the-token-0123456789"}, ""),
    "empty authorization": ({"Authorization": ""}, ""),
    "bearer without token": ({"Authorization": "Bearer"}, ""),
    "basic scheme": ({"Authorization": "Basic dXNlcjpwYXNz"}, ""),
    "wrong api key": ({"X-API-Key": "not-the-token-0123456789"}, ""),
    "empty api key": ({"X-API-Key": ""}, ""),
    "wrong query token": ({}, "?access_token=not-the-token-0123456789"),
    "empty query token": ({}, "?access_token="),
}


def _route(world: World, route: str) -> str:
    return route.replace("{id}", world.mission_id)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("credentials", list(BAD_CREDENTIALS))
def test_every_v1_route_refuses_a_missing_wrong_or_empty_token(
    world: World, route: str, credentials: str
) -> None:
    headers, query = BAD_CREDENTIALS[credentials]
    response = world.server.get(_route(world, route) + query, **headers)
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/json"
    assert response.headers["www-authenticate"] == 'Bearer realm="rho"'
    assert set(response.json()) == {"error"}
    assert world.mission_id not in response.text


@pytest.mark.parametrize("route", [r for r in ROUTES if not r.endswith(("events", "route"))])
def test_the_query_token_opens_no_route_but_the_event_stream(world: World, route: str) -> None:
    response = world.server.get(f"{_route(world, route)}?access_token={world.server.token}")
    assert response.status_code == 401


def test_a_right_token_is_taken_from_either_header_or_the_event_stream_query(
    world: World,
) -> None:
    token = world.server.token
    assert token is not None
    bearer = world.server.get("/v1/missions", Authorization=f"bearer {token}")
    api_key = world.server.get("/v1/missions", **{"X-API-Key": token})
    stream = world.server.get(f"/v1/missions/{world.mission_id}/events?access_token={token}")
    assert (bearer.status_code, api_key.status_code, stream.status_code) == (200, 200, 200)
    assert bearer.json() == api_key.json()


def test_health_and_page_need_no_token_and_the_page_holds_none(world: World) -> None:
    health = world.server.get("/healthz")
    page = world.server.get("/")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert world.server.token
    assert world.server.token not in page.text
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy
    assert "connect-src 'self'" in policy
    assert "http://" not in page.text.replace("http://www.w3.org/2000/svg", "")


def test_missions_lists_ids_statuses_counts_and_times(world: World) -> None:
    body = world.server.get("/v1/missions", **world.server.auth()).json()
    record = json.loads((world.mission_dir / "mission.json").read_text())
    assert body == {
        "missions": [
            {
                "id": world.mission_id,
                "status": "partial",
                "started_at": record["started_at"],
                "completed_at": record["completed_at"],
                "features": 3,
                "counts": {
                    "pending": 1,
                    "in_progress": 0,
                    "completed": 1,
                    "failed": 1,
                    "cancelled": 0,
                },
                "waves": 2,
                "joined_waves": 1,
                "what": ", ".join(f["description"] for f in record["features"][:2]) + " +1 more",
                "merged": None,
                # t1 landed; t1 and t2 each ran once.
                "integration": "1 merge, 2 agent runs per landed task",
            }
        ]
    }


def test_a_mission_is_its_mission_json_as_stored(world: World) -> None:
    response = world.server.get(f"/v1/missions/{world.mission_id}", **world.server.auth())
    assert response.headers["content-type"] == "application/json"
    assert response.content == (world.mission_dir / "mission.json").read_bytes()


def test_the_mission_graph_is_what_rho_graph_export_prints(world: World) -> None:
    response = world.server.get(f"/v1/missions/{world.mission_id}/graph", **world.server.auth())
    export = rho(
        "graph", "export", "--mission-dir", str(world.mission_dir), cwd=world.repo, home=world.home
    )
    assert export.code == 0, export.stderr
    assert response.text == export.stdout


def test_the_task_graph_is_what_rho_graph_export_prints(world: World) -> None:
    response = world.server.get("/v1/tasks/graph", **world.server.auth())
    export = rho("graph", "export", cwd=world.repo, home=world.home)
    assert export.code == 0, export.stderr
    assert response.text == export.stdout


@pytest.mark.parametrize("route", ["mission", "tasks"])
def test_a_graph_route_takes_the_repository_scope_of_rho_graph_export(
    world: World, route: str
) -> None:
    path = f"/v1/missions/{world.mission_id}/graph" if route == "mission" else "/v1/tasks/graph"
    source = ["--mission-dir", str(world.mission_dir)] if route == "mission" else []
    response = world.server.get(f"{path}?repository=acme%2Fwidgets", **world.server.auth())
    export = rho(
        "graph", "export", *source, "--repository", "acme/widgets", cwd=world.repo, home=world.home
    )
    assert export.code == 0, export.stderr
    assert response.status_code == 200
    assert response.text == export.stdout
    assert '"repository_id": "acme/widgets"' in response.text


@pytest.mark.parametrize("scope", ["", "%20%20", "a%07b", "x" * 300])
@pytest.mark.parametrize("route", ["mission", "tasks"])
def test_a_bad_repository_scope_is_400_in_the_clis_words(
    world: World, route: str, scope: str
) -> None:
    path = f"/v1/missions/{world.mission_id}/graph" if route == "mission" else "/v1/tasks/graph"
    response = world.server.get(f"{path}?repository={scope}", **world.server.auth())
    value = httpx.QueryParams(f"repository={scope}")["repository"]
    export = rho("graph", "export", "--repository", value, cwd=world.repo, home=world.home)
    assert export.code == 2
    assert response.status_code == 400
    assert f"error: {response.json()['error']}" == export.stderr.strip()


def test_a_log_tail_is_the_last_lines_of_a_feature_log(world: World) -> None:
    auth = world.server.auth()
    whole = world.server.get(f"/v1/missions/{world.mission_id}/logs/task_2", **auth).json()
    last = world.server.get(f"/v1/missions/{world.mission_id}/logs/task_2?tail=1", **auth).json()
    none = world.server.get(f"/v1/missions/{world.mission_id}/logs/task_3", **auth).json()
    log = (world.mission_dir / "logs" / "task_2.log").read_text().splitlines()
    # The task's output: rho's own line before and after each attempt is left out.
    assert log[0].startswith("== rho: task_2 attempt 1: ")
    assert log[-1] == "== rho: task_2 attempt 1 failed: command failed: exit code 3 =="
    log = log[1:-1]
    assert whole == {"feature_id": "task_2", "lines": log[-40:]}
    assert last == {"feature_id": "task_2", "lines": log[-1:]}
    assert none == {"feature_id": "task_3", "lines": None}  # blocked: it never ran


@pytest.mark.parametrize("tail", ["0", "-1", "abc", "1001", "1e3", ""])
def test_a_bad_tail_is_a_400(world: World, tail: str) -> None:
    path = f"/v1/missions/{world.mission_id}/logs/task_2?tail={tail}"
    response = world.server.get(path, **world.server.auth())
    assert response.status_code == 400
    assert response.json() == {"error": "tail must be a number of lines from 1 to 1000"}


# Ids that try to leave the missions folder, or to name it otherwise.
TRAVERSALS = [
    "..",
    "%2e%2e",
    "..%2f..%2f..%2fetc%2fpasswd",
    "..%2F..%2Fmission.json",
    "%2F..%2F..",
    "..%5c..%5c",
    ".rho",
    "DEADBEEF",
    "deadbee",
    "deadbeef0",
    "dead%20beef",
    "deadbeef%00",
    "deadbeef%2F..%2F..",
]


@pytest.mark.parametrize("suffix", ["", "/graph", "/events", "/logs/task_2"])
@pytest.mark.parametrize("mission_id", TRAVERSALS)
def test_ids_that_look_like_paths_are_refused_and_read_nothing(
    world: World, mission_id: str, suffix: str
) -> None:
    response = world.server.get(f"/v1/missions/{mission_id}{suffix}", **world.server.auth())
    assert response.status_code in (400, 404)
    assert set(response.json()) == {"error"}
    assert "root:" not in response.text
    assert "schema_version" not in response.text


@pytest.mark.parametrize(
    "feature",
    [
        "..%2Fmission.json",
        "..%2F..%2F..%2Fetc%2Fpasswd",
        "task_9",
        "TASK_1",
        "task_1.log",
        "%2e%2e",
    ],
)
def test_a_log_of_anything_but_a_feature_of_the_mission_is_refused(
    world: World, feature: str
) -> None:
    path = f"/v1/missions/{world.mission_id}/logs/{feature}"
    response = world.server.get(path, **world.server.auth())
    assert response.status_code == 404
    assert "schema_version" not in response.text


@pytest.mark.parametrize("suffix", ["", "/graph", "/events", "/logs/task_2"])
def test_an_unknown_mission_is_a_404(world: World, suffix: str) -> None:
    response = world.server.get(f"/v1/missions/0123abcd{suffix}", **world.server.auth())
    assert (response.status_code, response.json()) == (
        404,
        {"error": "no mission 0123abcd in this repository"},
    )


def test_a_mission_folder_that_is_a_link_is_not_served(world: World, tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere"
    subprocess.run(["cp", "-a", str(world.mission_dir), str(copy)], check=True)
    link = world.repo / ".rho" / "missions" / "0badf00d"
    os.symlink(copy, link)
    try:
        listed = world.server.get("/v1/missions", **world.server.auth()).json()
        direct = world.server.get("/v1/missions/0badf00d", **world.server.auth())
    finally:
        link.unlink()
    assert [row["id"] for row in listed["missions"]] == [world.mission_id]
    assert direct.status_code == 404


def test_the_server_answers_while_the_mission_and_store_locks_are_held(world: World) -> None:
    git_dir = Path(git(world.repo, world.home, "rev-parse", "--absolute-git-dir").strip())
    run_lock = FileLock(str(git_dir / f"rho-mission-{world.mission_id}.lock"))
    store_lock = FileLock(str(world.repo / ".rho" / "tasks.json.lock"))
    with run_lock.acquire(timeout=5), store_lock.acquire(timeout=5):
        answers = [
            world.server.get(_route(world, route), **world.server.auth()).status_code
            for route in ROUTES[:-1]
        ]
    assert answers == [200] * 6


def test_only_get_is_allowed(world: World) -> None:
    response = httpx.post(
        world.server.base + "/v1/missions", headers=world.server.auth(), timeout=10
    )
    assert response.status_code == 405


def test_the_log_of_a_waves_checks_is_served_by_its_stage_name(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    repo = make_repo(tmp_path / "repo", home)
    import_tasks(repo, [task("task_1", "echo made > made.txt")], home=home)
    check = "echo 'checks said: marker-check-4e1f'; exit 1"
    result = rho("mission", "--from-tasks", "--verify", check, cwd=repo, home=home)
    assert result.code == 1, result.stdout + result.stderr
    (mission_id,) = mission_ids(repo)
    with running_server(repo, home) as server:
        auth = server.auth()
        checks = server.get(f"/v1/missions/{mission_id}/logs/verify-1", **auth)
        assert checks.status_code == 200
        assert "checks said: marker-check-4e1f" in checks.json()["lines"]
        assert server.get(f"/v1/missions/{mission_id}/logs/verify-2", **auth).status_code == 404


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8765", "10.0.0.5", "[::2]:80"])
def test_a_foreign_host_header_is_refused_token_or_not(world: World, host: str) -> None:
    # DNS rebinding: a page of another site reaching a loopback server under its own name.
    for headers in ({}, world.server.auth()):
        response = world.server.get("/v1/missions", Host=host, **headers)
        assert response.status_code == 400
        assert "is not served here" in response.json()["error"]


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]"])
def test_the_loopback_names_are_served(world: World, host: str) -> None:
    port = world.server.url.rsplit(":", 1)[1].strip("/")
    response = world.server.get("/v1/missions", Host=f"{host}:{port}", **world.server.auth())
    assert response.status_code == 200


def test_latest_names_the_mission_started_last(world: World) -> None:
    by_id = world.server.get(f"/v1/missions/{world.mission_id}", **world.server.auth())
    latest = world.server.get("/v1/missions/latest", **world.server.auth())
    assert latest.status_code == 200
    assert latest.content == by_id.content
    graph = world.server.get("/v1/missions/latest/graph", **world.server.auth())
    assert graph.status_code == 200
