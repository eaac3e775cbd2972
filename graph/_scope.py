"""Repository scope: which repository a graph speaks about (``scope.repository_id``).

Rho's command line scopes every graph to a repository, by default the basename of the
repository's folder. `with_repository_id` puts one id on the envelope and on every fact, so
that a graph exported or uploaded under a scope says so throughout; `repository_id_for_folder`
gives the default for a folder. The id is metadata in clear (like ``project_id``): a user who
would rather not send a folder name passes another one.

Decision: docs/decisions/0201-portable-graph.md
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from ._errors import GraphValidationError
from ._model import Edge, Event, GraphDocument, Node, Scope
from ._validate import validate_graph

__all__ = [
    "MAX_REPOSITORY_ID_CHARS",
    "check_repository_id",
    "repository_id_for_folder",
    "with_repository_id",
]

# A folder name is at most 255 bytes on the common file systems; an id is a name, not a text.
MAX_REPOSITORY_ID_CHARS = 255
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

_Fact = TypeVar("_Fact", Node, Edge, Event)


def check_repository_id(repository_id: str) -> str:
    """Return *repository_id* when it can name a repository in a scope.

    Raises:
        GraphValidationError: the id is blank, longer than 255 characters, or holds a
            control character (a line break would forge lines in every rendering).
    """
    problem = _problem(repository_id)
    if problem is not None:
        raise GraphValidationError(problem, fact="graph")
    return repository_id


def _problem(repository_id: str) -> str | None:
    if not repository_id.strip():
        return "repository id is blank"
    if len(repository_id) > MAX_REPOSITORY_ID_CHARS:
        return (
            f"repository id is {len(repository_id)} characters;"
            f" the limit is {MAX_REPOSITORY_ID_CHARS}"
        )
    control = _CONTROL.search(repository_id)
    if control is not None:
        # The id itself is not shown: a control character would garble the message's line.
        return f"repository id holds a control character (U+{ord(control.group()):04X})"
    return None


def repository_id_for_folder(folder: str | os.PathLike[str]) -> str | None:
    """The default repository id of a repository at *folder*: its basename, if usable.

    None when the basename could not be an id (``/``, a control character, too long), so that
    a mission in an oddly named folder still writes its graph, only without a repository.
    """
    name = os.path.basename(os.path.normpath(os.fspath(folder)))
    return name if _problem(name) is None else None


def with_repository_id(doc: GraphDocument | Mapping[str, Any], repository_id: str) -> GraphDocument:
    """Return a copy of *doc* whose envelope and every fact carry ``repository_id``.

    The rest of each scope (``project_id``, ``tenant_id``) is kept. Scoping a graph again to
    the id it already carries everywhere changes nothing, so same input and scope, same bytes.

    Raises:
        GraphValidationError: *doc* breaks the contract, or the id is not usable (see
            `check_repository_id`).
    """
    check_repository_id(repository_id)
    graph = validate_graph(doc)
    return graph.model_copy(
        update={
            "scope": _scoped(graph.scope, repository_id),
            "nodes": [_scoped_fact(node, repository_id) for node in graph.nodes],
            "edges": [_scoped_fact(edge, repository_id) for edge in graph.edges],
            "events": [_scoped_fact(event, repository_id) for event in graph.events],
        }
    )


def _scoped(scope: Scope, repository_id: str) -> Scope:
    return scope.model_copy(update={"repository_id": repository_id})


def _scoped_fact(fact: _Fact, repository_id: str) -> _Fact:
    return fact.model_copy(update={"scope": _scoped(fact.scope, repository_id)})
