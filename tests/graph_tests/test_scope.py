"""Repository scope: one ``repository_id`` on the envelope and every fact, and its default."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from graph import (
    MAX_REPOSITORY_ID_CHARS,
    GraphValidationError,
    check_repository_id,
    document_data,
    dump_graph,
    repository_id_for_folder,
    with_repository_id,
)
from graph.cloud import prepare_for_cloud

from ._docs import sample


def _scopes(data: dict[str, Any]) -> list[dict[str, str]]:
    facts = data["nodes"] + data["edges"] + data["events"]
    return [data["scope"], *(fact.get("scope", {}) for fact in facts)]


def test_the_repository_id_goes_on_the_envelope_and_every_fact() -> None:
    doc = sample()
    doc["scope"] = {"tenant_id": "t", "project_id": "p"}
    doc["nodes"][0]["scope"] = {"project_id": "other", "repository_id": "old"}
    data = document_data(with_repository_id(doc, "app"))
    scopes = _scopes(data)
    assert {scope["repository_id"] for scope in scopes} == {"app"}
    assert scopes[0] == {"tenant_id": "t", "project_id": "p", "repository_id": "app"}
    assert scopes[1] == {"project_id": "other", "repository_id": "app"}


def test_same_input_and_scope_give_the_same_bytes() -> None:
    once = dump_graph(with_repository_id(sample(), "app"))
    assert dump_graph(with_repository_id(sample(), "app")) == once
    assert dump_graph(with_repository_id(with_repository_id(sample(), "app"), "app")) == once
    assert dump_graph(with_repository_id(sample(), "other")) != once


def test_scoping_does_not_change_its_input() -> None:
    doc = sample()
    before = copy.deepcopy(doc)
    with_repository_id(doc, "app")
    assert doc == before


def test_the_repository_id_reaches_rho_cloud_in_clear_and_changes_the_sync_id() -> None:
    prepared = prepare_for_cloud(with_repository_id(sample(), "app"))
    assert prepared.document.scope.repository_id == "app"
    assert {node.scope.repository_id for node in prepared.document.nodes} == {"app"}
    assert prepared.sync_id != prepare_for_cloud(sample()).sync_id


@pytest.mark.parametrize(
    ("repository_id", "message"),
    [
        ("", "repository id is blank"),
        (" \t", "repository id is blank"),
        ("a\nb", "repository id holds a control character (U+000A)"),
        ("a\x85b", "repository id holds a control character (U+0085)"),
        ("x" * 256, "repository id is 256 characters; the limit is 255"),
    ],
)
def test_an_unusable_repository_id_is_refused(repository_id: str, message: str) -> None:
    with pytest.raises(GraphValidationError, match=rf"^{re.escape(message)}$") as caught:
        with_repository_id(sample(), repository_id)
    assert (caught.value.fact, caught.value.exit_code) == ("graph", 2)
    with pytest.raises(GraphValidationError):
        check_repository_id(repository_id)


@pytest.mark.parametrize("repository_id", ["app", "acme/app", "x" * MAX_REPOSITORY_ID_CHARS, "é"])
def test_a_usable_repository_id_is_returned(repository_id: str) -> None:
    assert check_repository_id(repository_id) == repository_id


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        ("/work/app", "app"),
        ("/work/app/", "app"),
        ("relative/app", "app"),
        (Path("/work/my app"), "my app"),
        ("/", None),
        ("/work/bad\nname", None),
        ("/work/" + "x" * 256, None),
    ],
)
def test_the_default_repository_id_is_the_folder_basename(
    folder: str | Path, expected: str | None
) -> None:
    assert repository_id_for_folder(folder) == expected
