"""The upload of a portable graph to Rho Cloud, and the privacy rules it keeps.

- ``_prepare``: ``prepare_for_cloud``, the document that may leave the machine: no tenant id,
  sensitive and unknown attributes as SHA-256 digests, evidence uris hashed, Rho Cloud's bounds
  (``MAX_NODES``...) held, and the RFC 8785 body whose digest is the sync id;
- ``_vocabulary``: the allow-list, the attributes rho itself writes and the shape of each value;
- ``_summary``: a mission's summary (the mission and its wave joins), which always fits;
- ``_settings``: a repository's endpoint, project and token in ``.rho/cloud.json``;
- ``_sync``: ``sync_graph``, the one request (``httpx``, loaded by the upload alone);
- ``_errors``: the upload's errors, below ``graph.GraphError``.

Direction: imports the portable format (``graph``), never ``graph.swarm``, ``taskstore`` or
``rho_mission``. Nothing here sends anything but ``sync_graph``, called explicitly.

Decision: docs/decisions/0301-cloud-settings.md, docs/decisions/0302-cloud-allow-lists.md,
docs/decisions/0902-graph-by-concept.md
"""

from __future__ import annotations

from ._errors import CloudSettingsError as CloudSettingsError
from ._errors import GraphLimitError as GraphLimitError
from ._errors import GraphSyncError as GraphSyncError
from ._errors import SensitiveKeyCollisionError as SensitiveKeyCollisionError
from ._prepare import MAX_ATTRIBUTES as MAX_ATTRIBUTES
from ._prepare import MAX_BODY_BYTES as MAX_BODY_BYTES
from ._prepare import MAX_EDGES as MAX_EDGES
from ._prepare import MAX_EVENTS as MAX_EVENTS
from ._prepare import MAX_FACTS as MAX_FACTS
from ._prepare import MAX_KEY_CHARS as MAX_KEY_CHARS
from ._prepare import MAX_NODES as MAX_NODES
from ._prepare import MAX_VALUE_CHARS as MAX_VALUE_CHARS
from ._prepare import PreparedGraph as PreparedGraph
from ._prepare import canonical_json as canonical_json
from ._prepare import is_sensitive_key as is_sensitive_key
from ._prepare import prepare_for_cloud as prepare_for_cloud
from ._settings import CLOUD_SETTINGS_FILENAME as CLOUD_SETTINGS_FILENAME
from ._settings import CloudSettings as CloudSettings
from ._settings import check_endpoint as check_endpoint
from ._settings import check_project_id as check_project_id
from ._settings import check_token as check_token
from ._settings import cloud_settings_path as cloud_settings_path
from ._settings import read_cloud_settings as read_cloud_settings
from ._settings import write_cloud_settings as write_cloud_settings
from ._summary import summarize_mission_graph as summarize_mission_graph
from ._sync import SyncResult as SyncResult
from ._sync import request_body as request_body
from ._sync import sync_graph as sync_graph

__all__ = [
    "CLOUD_SETTINGS_FILENAME",
    "MAX_ATTRIBUTES",
    "MAX_BODY_BYTES",
    "MAX_EDGES",
    "MAX_EVENTS",
    "MAX_FACTS",
    "MAX_KEY_CHARS",
    "MAX_NODES",
    "MAX_VALUE_CHARS",
    "CloudSettings",
    "CloudSettingsError",
    "GraphLimitError",
    "GraphSyncError",
    "PreparedGraph",
    "SensitiveKeyCollisionError",
    "SyncResult",
    "canonical_json",
    "check_endpoint",
    "check_project_id",
    "check_token",
    "cloud_settings_path",
    "is_sensitive_key",
    "prepare_for_cloud",
    "read_cloud_settings",
    "request_body",
    "summarize_mission_graph",
    "sync_graph",
    "write_cloud_settings",
]
