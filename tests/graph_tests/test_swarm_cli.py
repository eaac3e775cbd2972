"""``rho graph verify-swarm`` and ``rho graph sign-swarm`` as real processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import rfc8785

from support.rho import Result, run_rho

from ._swarm_vectors import NOW, SEED, TRUSTED, VALID_SHA256, VECTORS, base, fixture

_NOW = ("--now", str(NOW))


def _verify(
    tmp_path: Path, file: Path | str, *args: str, env: dict[str, str] | None = None
) -> Result:
    return run_rho("graph", "verify-swarm", str(file), *args, cwd=tmp_path, home=tmp_path, env=env)


def test_the_valid_fixture_prints_its_graph_sha256(tmp_path: Path) -> None:
    result = _verify(tmp_path, VECTORS / "valid-recursive-delegation.task-graph.json",
                     "--trusted-key", TRUSTED, *_NOW)  # fmt: skip
    assert (result.code, result.stdout, result.stderr) == (0, f"graphSha256 {VALID_SHA256}\n", "")


@pytest.mark.parametrize(
    ("name", "reason", "code"),
    [
        ("graph-cycle", "swarm task graph cycle at task-child-a",
         "proof-room.negative.swarm-task-graph-cycle-at-task-child-a"),
        ("max-depth-exceeded", "swarm task exceeds max depth: task-child-a",
         "proof-room.negative.swarm-task-exceeds-max-depth"),
    ],
)  # fmt: skip
def test_a_rejected_fixture_prints_its_reason_and_code_and_exits_1(
    tmp_path: Path, name: str, reason: str, code: str
) -> None:
    file = VECTORS / f"{name}.task-graph.json"
    result = _verify(tmp_path, file, "--trusted-key", TRUSTED, *_NOW)
    assert (result.code, result.stdout) == (1, f"rejected: {reason}\ncode: {code}\n")
    as_json = _verify(tmp_path, file, "--trusted-key", TRUSTED, *_NOW, "--json")
    verdict = {"accepted": False, "reason": reason, "code": code}
    assert (as_json.code, as_json.json()) == (1, verdict)


def test_keys_may_be_pinned_by_the_environment(tmp_path: Path) -> None:
    file = VECTORS / "valid-recursive-delegation.task-graph.json"
    pinned = {"RHO_SWARM_TRUSTED_KEYS": f"{'ab' * 32},{TRUSTED}"}
    result = _verify(tmp_path, file, *_NOW, "--json", env=pinned)
    assert (result.code, result.json()) == (0, {"accepted": True, "graphSha256": VALID_SHA256})


def test_the_clock_decides_without_now(tmp_path: Path) -> None:
    # The fixtures were made to expire on 2027-01-15; their creation lies in the past.
    file = VECTORS / "valid-recursive-delegation.task-graph.json"
    result = _verify(tmp_path, file, "--trusted-key", TRUSTED, "--json")
    verdict = result.json()
    assert verdict.get("graphSha256") == VALID_SHA256 or verdict["reason"] == (
        "swarm task graph is expired"
    )


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{", "swarm task graph is not valid JSON: expecting property name enclosed in double"),
        (b"[]", "swarm task graph is not valid JSON: not an object"),
        (b'{"a": 1, "a": 2}', 'swarm task graph is not valid JSON: duplicate key "a"'),
        (b"\xff", "swarm task graph is not valid JSON: 'utf-8' codec can't decode"),
        (b"[" * 100_000, "swarm task graph is not valid JSON: nested too deeply"),
    ],
)
def test_an_unparseable_file_is_a_rejection_with_the_parsers_reason(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    file = tmp_path / "graph.json"
    file.write_bytes(content)
    result = _verify(tmp_path, file, "--trusted-key", TRUSTED, *_NOW)
    assert result.code == 1
    first, code = result.stdout.splitlines()
    assert first.lower().startswith(f"rejected: {reason}".lower())
    assert code == "code: proof-room.negative.swarm-task-graph-is-not-valid-json"


def test_a_missing_file_is_a_rejection(tmp_path: Path) -> None:
    result = _verify(tmp_path, "absent.json", "--trusted-key", TRUSTED)
    assert (result.code, result.stdout) == (
        1,
        "rejected: swarm task graph unreadable: no such file or directory: absent.json\n"
        "code: proof-room.negative.swarm-task-graph-unreadable\n",
    )


@pytest.mark.parametrize("key", ["xyz", "ab" * 31])
def test_a_malformed_trusted_key_is_bad_input(tmp_path: Path, key: str) -> None:
    result = _verify(tmp_path, "absent.json", "--trusted-key", key)
    assert result.code == 2
    assert result.stderr_lines[0].startswith(
        "error: bad trusted key (--trusted-key or RHO_SWARM_TRUSTED_KEYS): not an Ed25519 public"
    )
    assert result.out == b""


def _key_file(tmp_path: Path) -> Path:
    key = tmp_path / "issuer.key"
    key.write_text(SEED.hex())
    return key


def test_sign_swarm_reproduces_the_fixtures_signature(tmp_path: Path) -> None:
    source = VECTORS / "valid-recursive-delegation.task-graph.json"
    result = run_rho("graph", "sign-swarm", str(source), "--key-file", str(_key_file(tmp_path)),
                     cwd=tmp_path, home=tmp_path)  # fmt: skip
    assert result.code == 0, result.stderr
    assert result.out == rfc8785.dumps(fixture("valid-recursive-delegation")) + b"\n"


def test_sign_swarm_writes_a_private_file_that_verifies(tmp_path: Path) -> None:
    draft = {**base(), "issuer": "", "signature": ""}
    source = tmp_path / "draft.json"
    source.write_text(json.dumps(draft))
    out = tmp_path / "signed.json"
    key = str(_key_file(tmp_path))
    result = run_rho("graph", "sign-swarm", str(source), "--key-file", key, "--out", str(out),
                     cwd=tmp_path, home=tmp_path)  # fmt: skip
    assert (result.code, result.out) == (0, b"")
    assert out.stat().st_mode & 0o777 == 0o600
    assert _verify(tmp_path, out, "--trusted-key", TRUSTED, *_NOW).code == 0


def test_sign_swarm_refuses_a_graph_of_the_wrong_shape(tmp_path: Path) -> None:
    draft = {**base(), "maxFanout": 1}
    source = tmp_path / "draft.json"
    source.write_text(json.dumps(draft))
    result = run_rho("graph", "sign-swarm", str(source), "--key-file", str(_key_file(tmp_path)),
                     cwd=tmp_path, home=tmp_path)  # fmt: skip
    assert (result.code, result.stderr_lines) == (
        2,
        ["error: cannot sign: swarm task exceeds max fanout: root"],
    )


def test_sign_swarm_refuses_a_key_file_of_another_shape(tmp_path: Path) -> None:
    key = tmp_path / "issuer.key"
    key.write_text("not a key")
    source = VECTORS / "valid-recursive-delegation.task-graph.json"
    result = run_rho("graph", "sign-swarm", str(source), "--key-file", str(key),
                     cwd=tmp_path, home=tmp_path)  # fmt: skip
    assert result.code == 2
    assert result.stderr_lines[0].startswith("error: key file holds neither a 32-byte seed")
