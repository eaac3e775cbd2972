"""The portable graph contract ``rho.graph/v1``: models, validation, scope, files, renderings.

- ``_model``: the envelope and its facts (nodes, edges, events), as pydantic models;
- ``_validate``: the contract's checks, in order, the first failure the answer;
- ``_build``: the pieces projections build graphs from (``GraphBuilder``, ``make_node``...);
- ``_scope``: the repository a graph speaks about (``scope.repository_id``);
- ``_io``: graph files, deterministic bytes, atomic private writes, bounded reads;
- ``_render``: Mermaid and Graphviz dot for people;
- ``_errors``: ``GraphError``, the root of every error of this package and its subpackages.

Two subpackages build on the format and are imported by name, each with its own public names:
``graph.cloud`` (the upload to Rho Cloud: privacy normalization, limits, the mission summary,
a repository's settings, the sync) and ``graph.swarm`` (the signed ``chio.swarm.task-graph.v1``
document: its model, verifier and signer).

Direction: imports neither ``taskstore`` nor ``rho_mission``, nor its own subpackages
(``graph.cloud`` and ``graph.swarm`` import the format, never each other); never mutates a task
store or a mission, and never schedules work.

Decision: docs/decisions/0201-portable-graph.md, docs/decisions/0902-graph-by-concept.md
"""

from __future__ import annotations

from ._build import DEFAULT_PRODUCER as DEFAULT_PRODUCER
from ._build import GraphBuilder as GraphBuilder
from ._build import format_timestamp as format_timestamp
from ._build import make_edge as make_edge
from ._build import make_event as make_event
from ._build import make_node as make_node
from ._build import sha256_hex as sha256_hex
from ._errors import GraphDocumentError as GraphDocumentError
from ._errors import GraphError as GraphError
from ._errors import GraphReferenceError as GraphReferenceError
from ._errors import GraphSchemaVersionError as GraphSchemaVersionError
from ._errors import GraphValidationError as GraphValidationError
from ._io import MAX_GRAPH_FILE_BYTES as MAX_GRAPH_FILE_BYTES
from ._io import MISSION_GRAPH_FILENAME as MISSION_GRAPH_FILENAME
from ._io import assemble_graph as assemble_graph
from ._io import dump_graph as dump_graph
from ._io import fact_text as fact_text
from ._io import load_mission_graph as load_mission_graph
from ._io import read_graph_file as read_graph_file
from ._io import write_graph as write_graph
from ._model import EDGE_KINDS as EDGE_KINDS
from ._model import EVENT_TYPES as EVENT_TYPES
from ._model import NODE_KINDS as NODE_KINDS
from ._model import SCHEMA_VERSION as SCHEMA_VERSION
from ._model import Edge as Edge
from ._model import EdgeKind as EdgeKind
from ._model import Event as Event
from ._model import EventType as EventType
from ._model import Evidence as Evidence
from ._model import GraphDocument as GraphDocument
from ._model import Node as Node
from ._model import NodeKind as NodeKind
from ._model import Provenance as Provenance
from ._model import Ref as Ref
from ._model import Scope as Scope
from ._model import document_data as document_data
from ._model import sort_facts as sort_facts
from ._render import render_dot as render_dot
from ._render import render_mermaid as render_mermaid
from ._scope import MAX_REPOSITORY_ID_CHARS as MAX_REPOSITORY_ID_CHARS
from ._scope import check_repository_id as check_repository_id
from ._scope import repository_id_for_folder as repository_id_for_folder
from ._scope import with_repository_id as with_repository_id
from ._validate import validate_graph as validate_graph

__all__ = [
    "DEFAULT_PRODUCER",
    "EDGE_KINDS",
    "EVENT_TYPES",
    "MAX_GRAPH_FILE_BYTES",
    "MAX_REPOSITORY_ID_CHARS",
    "MISSION_GRAPH_FILENAME",
    "NODE_KINDS",
    "SCHEMA_VERSION",
    "Edge",
    "EdgeKind",
    "Event",
    "EventType",
    "Evidence",
    "GraphBuilder",
    "GraphDocument",
    "GraphDocumentError",
    "GraphError",
    "GraphReferenceError",
    "GraphSchemaVersionError",
    "GraphValidationError",
    "Node",
    "NodeKind",
    "Provenance",
    "Ref",
    "Scope",
    "assemble_graph",
    "check_repository_id",
    "document_data",
    "dump_graph",
    "fact_text",
    "format_timestamp",
    "load_mission_graph",
    "make_edge",
    "make_event",
    "make_node",
    "read_graph_file",
    "render_dot",
    "render_mermaid",
    "repository_id_for_folder",
    "sha256_hex",
    "sort_facts",
    "validate_graph",
    "with_repository_id",
    "write_graph",
]
