"""Durable writes of a mission folder: mission.json and mission-graph.json, atomically, 0600."""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from taskstore import StagedFile, stage_atomic, write_atomic

from ._folders import private_folder
from ._graphcache import MissionGraphCache
from ._missiontext import FeatureKey, JoinKey, MissionTextCache, feature_key, join_key

if TYPE_CHECKING:
    from ._models import Feature, MissionDocument

__all__ = [
    "folder_anchor",
    "note_feature_end",
    "prepare_mission_dir",
    "save_mission",
    "save_mission_after",
]

# Missions whose file caches stay in memory (one process rarely saves more than one at a time).
_KEPT_MISSIONS = 4


@dataclass
class _MissionFiles:
    """What the last save of one mission made: each feature's JSON, each fact's bytes."""

    text: MissionTextCache = field(default_factory=MissionTextCache)
    graph: MissionGraphCache = field(default_factory=MissionGraphCache)


_CACHES: OrderedDict[str, _MissionFiles] = OrderedDict()


def _files_of(mission: MissionDocument) -> _MissionFiles:
    """The caches of *mission* (by its folder), made on first use; the least recently used of
    more than a few missions is dropped (its next save dumps and projects everything)."""
    files = _CACHES.pop(mission.dir, None) or _MissionFiles()
    _CACHES[mission.dir] = files
    while len(_CACHES) > _KEPT_MISSIONS:
        _CACHES.popitem(last=False)
    return files


def folder_anchor(folder: Path, repo: Path) -> Path:
    """Where the symlink checks of *folder* start: the repository root for a folder below
    ``<repo>/.rho``, else the folder's parent (a mission folder the user put elsewhere)."""
    folder = Path(os.path.abspath(folder))
    return repo if folder.is_relative_to(repo / ".rho") else folder.parent


def prepare_mission_dir(folder: Path, repo: Path) -> None:
    """Create the mission folder, its ``logs/`` and ``prompts/``, each 0700, never via a symlink.

    Raises:
        UnsafePathError: a symbolic link (or a file) stands where one of these folders goes.
    """
    anchor = folder_anchor(folder, repo)
    for sub in ("logs", "prompts"):
        private_folder(folder / sub, anchor)


def save_mission(mission: MissionDocument) -> None:
    """Rewrite mission.json, then mission-graph.json, each atomically with fsync.

    mission.json goes first: it is the record a resume reads; the graph is derived from it.
    Their bytes are those of ``mission.model_dump_json(indent=2)`` and of
    ``dump_graph(mission_graph(mission))``, made again only where the mission changed since
    its last save in this process (``_missiontext``, ``_graphcache``).
    """
    folder = Path(mission.dir)
    files, keys, join_keys = _files_of(mission), *_keys(mission)
    record = files.text.render(mission, keys, join_keys)
    # mission.json reaches the disk while the graph is made (the GIL is free during I/O);
    # the graph is written only once mission.json is, and never if mission.json failed.
    written = _writer().submit(write_atomic, folder / "mission.json", record)
    try:
        graph = files.graph.render(mission, keys, join_keys)
    finally:
        written.result()
    _replace_keeping_blocks(folder / "mission-graph.json", graph)


async def save_mission_after(
    mission: MissionDocument, first: Callable[[], Coroutine[Any, Any, None]]
) -> None:
    """`save_mission`, its files made and written while *first* runs, put in place once
    *first* is done.

    For a join: *first* is the task store's write of the wave's ends, which must reach the disk
    before the join does. Meanwhile a worker thread makes both files and writes each beside
    its place, fsynced (the store's write waits on fsync most of its time); once *first* is
    done they are renamed into place in `save_mission`'s order. Nothing else may change
    *mission* until this returns.
    """
    failures: dict[str, Exception] = {}  # each raised bare, not in a task group's exception

    async def first_of_all() -> None:
        try:
            await first()
        except Exception as exc:
            failures["first"] = exc

    staged: list[StagedFile] = []
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(first_of_all)
            try:
                staged = await anyio.to_thread.run_sync(_render_and_stage, mission)
            except Exception as exc:
                failures["files"] = exc
        if failures:
            raise failures.get("first") or failures["files"]
        record, graph = staged
        record.commit()
        _commit_keeping_blocks(graph)
    finally:
        for file in staged:
            file.discard()  # nothing, once committed


def _render_and_stage(mission: MissionDocument) -> list[StagedFile]:
    """mission.json and the graph, made and each staged beside its place (see `StagedFile`);
    mission.json is written by the writer thread while the graph is made, as in `save_mission`."""
    files, keys, join_keys = _files_of(mission), *_keys(mission)
    folder = Path(mission.dir)
    record = files.text.render(mission, keys, join_keys)
    staging = _writer().submit(stage_atomic, folder / "mission.json", record)
    try:
        graph = stage_atomic(
            folder / "mission-graph.json", files.graph.render(mission, keys, join_keys)
        )
    except BaseException:
        _discard_once_staged(staging)
        raise
    try:
        return [staging.result(), graph]
    except BaseException:
        graph.discard()
        raise


def _discard_once_staged(staging: Future[StagedFile]) -> None:
    """Remove what *staging* staged, once it is done. The graph's error is the one reported:
    if staging failed too, it left nothing behind (`stage_atomic`)."""
    with contextlib.suppress(Exception):
        staging.result().discard()


def _keys(mission: MissionDocument) -> tuple[list[FeatureKey], list[JoinKey]]:
    """The keys of every feature and wave join: one of each per save serves both files."""
    keys = [feature_key(feature) for feature in mission.features]
    return keys, [join_key(join) for join in mission.wave_joins]


def _replace_keeping_blocks(path: Path, data: bytes) -> None:
    """`write_atomic`, with the replaced file's blocks freed by the writer thread afterwards
    (see `_commit_keeping_blocks`)."""
    _commit_keeping_blocks(stage_atomic(path, data))


def _commit_keeping_blocks(staged: StagedFile) -> None:
    """`StagedFile.commit`, with the replaced file's blocks freed by the writer thread after.

    Renaming over a file frees the old one's blocks inside rename(); where the file system
    discards freed blocks at once (``mount -o discard``), that costs ~2 ms for the 4 MB graph
    of 1,000 features, in the join's path. A second name keeps the old file until the writer
    thread unlinks it, after the join. A crash may leave that name behind; the next save
    removes it. Where hard links are not supported, the rename frees the blocks itself.
    """
    path = staged.path
    displaced = path.with_name(f".{path.name}.replaced")
    _unlink(displaced)  # a crash's leftover, or the last save's not yet unlinked
    try:
        os.link(path, displaced)
    except OSError:  # no file yet (the first save), or a file system without hard links
        staged.commit()
        return
    try:
        staged.commit()
    finally:
        _writer().submit(_unlink, displaced)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


# The writer of this process, by pid: a forked child has none of its parent's threads.
_WRITERS: dict[int, ThreadPoolExecutor] = {}
_WRITERS_GUARD = threading.Lock()


def _writer() -> ThreadPoolExecutor:
    """One thread that writes mission.json beside the graph's rendering, and unlinks the
    replaced graph after a save (made on first use, in each process)."""
    pid = os.getpid()
    with _WRITERS_GUARD:
        if pid not in _WRITERS:
            _WRITERS.clear()
            _WRITERS[pid] = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rho-save")
        return _WRITERS[pid]


def note_feature_end(mission: MissionDocument, feature: Feature) -> None:
    """Make *feature*'s part of both files now that it ended, for the join's save.

    Called as each feature ends, while the wave's other features still run: the join then
    finds most of its wave made and writes sooner. Nothing is written here; a part made for a
    feature that changes again before the save (a failed merge) is made again by the save.
    """
    if mission.dir not in _CACHES:
        return  # never saved in this process: the first save makes everything anyway
    files = _files_of(mission)
    key = feature_key(feature)
    files.text.feature_text(feature, key)
    files.graph.prepare_feature(mission, feature, key)
