"""The portable graph contract ``rho.graph/v1``: models, validation, files, renderings, upload.

This package knows the envelope and its facts (nodes, edges, events), validates them, scopes
them to a repository, writes and reads graph files deterministically, renders them (Mermaid,
Graphviz dot), prepares them for Rho Cloud (privacy normalization and limits) and uploads them,
with the endpoint, project and token a repository keeps in ``.rho/cloud.json``. It never
imports ``taskstore`` or ``rho_mission``, never mutates a task store or a mission, and never
schedules work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported on first use (below)
    from ._swarm import issuer_for as issuer_for
    from ._swarm import load_signing_key as load_signing_key
    from ._swarm import parse_trusted_keys as parse_trusted_keys
    from ._swarm import public_key_hex as public_key_hex
    from ._swarm import sign_swarm_task_graph as sign_swarm_task_graph
    from ._swarm import verify_swarm_task_graph as verify_swarm_task_graph

from ._build import DEFAULT_PRODUCER as DEFAULT_PRODUCER
from ._build import GraphBuilder as GraphBuilder
from ._build import format_timestamp as format_timestamp
from ._build import make_edge as make_edge
from ._build import make_event as make_event
from ._build import make_node as make_node
from ._build import sha256_hex as sha256_hex
from ._cloud import MAX_ATTRIBUTES as MAX_ATTRIBUTES
from ._cloud import MAX_BODY_BYTES as MAX_BODY_BYTES
from ._cloud import MAX_EDGES as MAX_EDGES
from ._cloud import MAX_EVENTS as MAX_EVENTS
from ._cloud import MAX_FACTS as MAX_FACTS
from ._cloud import MAX_KEY_CHARS as MAX_KEY_CHARS
from ._cloud import MAX_NODES as MAX_NODES
from ._cloud import MAX_VALUE_CHARS as MAX_VALUE_CHARS
from ._cloud import PreparedGraph as PreparedGraph
from ._cloud import canonical_json as canonical_json
from ._cloud import is_sensitive_key as is_sensitive_key
from ._cloud import prepare_for_cloud as prepare_for_cloud
from ._errors import CloudSettingsError as CloudSettingsError
from ._errors import GraphDocumentError as GraphDocumentError
from ._errors import GraphError as GraphError
from ._errors import GraphLimitError as GraphLimitError
from ._errors import GraphReferenceError as GraphReferenceError
from ._errors import GraphSchemaVersionError as GraphSchemaVersionError
from ._errors import GraphSyncError as GraphSyncError
from ._errors import GraphValidationError as GraphValidationError
from ._errors import SensitiveKeyCollisionError as SensitiveKeyCollisionError
from ._errors import SwarmGraphRejected as SwarmGraphRejected
from ._errors import SwarmKeyError as SwarmKeyError
from ._errors import failure_code as failure_code
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
from ._settings import CLOUD_SETTINGS_FILENAME as CLOUD_SETTINGS_FILENAME
from ._settings import CloudSettings as CloudSettings
from ._settings import check_endpoint as check_endpoint
from ._settings import check_project_id as check_project_id
from ._settings import check_token as check_token
from ._settings import cloud_settings_path as cloud_settings_path
from ._settings import read_cloud_settings as read_cloud_settings
from ._settings import write_cloud_settings as write_cloud_settings
from ._summary import summarize_mission_graph as summarize_mission_graph
from ._swarm_model import SWARM_TASK_GRAPH_SCHEMA as SWARM_TASK_GRAPH_SCHEMA
from ._swarm_model import SwarmGraphEdge as SwarmGraphEdge
from ._swarm_model import SwarmGraphJoin as SwarmGraphJoin
from ._swarm_model import SwarmGraphNode as SwarmGraphNode
from ._swarm_model import SwarmTaskGraph as SwarmTaskGraph
from ._swarm_model import canonical_swarm_bytes as canonical_swarm_bytes
from ._swarm_model import parse_swarm_json as parse_swarm_json
from ._swarm_model import parse_swarm_task_graph as parse_swarm_task_graph
from ._swarm_model import read_swarm_document as read_swarm_document
from ._swarm_model import swarm_graph_sha256 as swarm_graph_sha256
from ._sync import SyncResult as SyncResult
from ._sync import request_body as request_body
from ._sync import sync_graph as sync_graph
from ._validate import validate_graph as validate_graph

__all__ = [
    "CLOUD_SETTINGS_FILENAME",
    "DEFAULT_PRODUCER",
    "EDGE_KINDS",
    "EVENT_TYPES",
    "MAX_ATTRIBUTES",
    "MAX_BODY_BYTES",
    "MAX_EDGES",
    "MAX_EVENTS",
    "MAX_FACTS",
    "MAX_GRAPH_FILE_BYTES",
    "MAX_KEY_CHARS",
    "MAX_NODES",
    "MAX_REPOSITORY_ID_CHARS",
    "MAX_VALUE_CHARS",
    "MISSION_GRAPH_FILENAME",
    "NODE_KINDS",
    "SCHEMA_VERSION",
    "SWARM_TASK_GRAPH_SCHEMA",
    "CloudSettings",
    "CloudSettingsError",
    "Edge",
    "EdgeKind",
    "Event",
    "EventType",
    "Evidence",
    "GraphBuilder",
    "GraphDocument",
    "GraphDocumentError",
    "GraphError",
    "GraphLimitError",
    "GraphReferenceError",
    "GraphSchemaVersionError",
    "GraphSyncError",
    "GraphValidationError",
    "Node",
    "NodeKind",
    "PreparedGraph",
    "Provenance",
    "Ref",
    "Scope",
    "SensitiveKeyCollisionError",
    "SwarmGraphEdge",
    "SwarmGraphJoin",
    "SwarmGraphNode",
    "SwarmGraphRejected",
    "SwarmKeyError",
    "SwarmTaskGraph",
    "SyncResult",
    "assemble_graph",
    "canonical_json",
    "canonical_swarm_bytes",
    "check_endpoint",
    "check_project_id",
    "check_repository_id",
    "check_token",
    "cloud_settings_path",
    "document_data",
    "dump_graph",
    "fact_text",
    "failure_code",
    "format_timestamp",
    "is_sensitive_key",
    "issuer_for",
    "load_mission_graph",
    "load_signing_key",
    "make_edge",
    "make_event",
    "make_node",
    "parse_swarm_json",
    "parse_swarm_task_graph",
    "parse_trusted_keys",
    "prepare_for_cloud",
    "public_key_hex",
    "read_cloud_settings",
    "read_graph_file",
    "read_swarm_document",
    "render_dot",
    "render_mermaid",
    "repository_id_for_folder",
    "request_body",
    "sha256_hex",
    "sign_swarm_task_graph",
    "sort_facts",
    "summarize_mission_graph",
    "swarm_graph_sha256",
    "sync_graph",
    "validate_graph",
    "verify_swarm_task_graph",
    "with_repository_id",
    "write_cloud_settings",
    "write_graph",
]

# Signing and verifying load ``cryptography`` (~30 ms), which most commands (a mission, the
# task store's) never need: those functions are imported on first use.
_SIGNING = frozenset(
    {
        "issuer_for",
        "load_signing_key",
        "parse_trusted_keys",
        "public_key_hex",
        "sign_swarm_task_graph",
        "verify_swarm_task_graph",
    }
)


if TYPE_CHECKING:

    def __getattr__(name: str) -> object: ...

else:
    import lazy_loader

    __getattr__, _, _ = lazy_loader.attach(__name__, submod_attrs={"_swarm": sorted(_SIGNING)})
