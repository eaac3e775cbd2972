"""Durable writes of a mission folder: mission.json and mission-graph.json, atomically, 0600.

Decision: docs/decisions/0510-mission-records.md
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio

from taskstore import StagedFile, commit_in_order, stage_atomic, write_atomic

from ..containment._folders import folder_anchor, private_folder
from ._graphcache import MissionGraphCache
from ._missionbytes import FeatureKey, JoinKey, MissionTextCache, feature_key, join_key

if TYPE_CHECKING:
    from ._document import Feature, MissionDocument

__all__ = [
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
    its last save in this process (``_missionbytes``, ``_graphcache``). A graph that cannot be
    made still leaves the new mission.json.
    """
    record, graph = _render(mission, keep_record=True)
    for unlinked in _commit_in_order(_stage_both(Path(mission.dir), record, graph)):
        # Not a join's save (those are in the path of the next wave): the folder is left with
        # no second name in it, for whoever looks once the run has ended.
        unlinked.result()


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
        _commit_in_order(staged)
    finally:
        for file in staged:
            file.discard()  # nothing, once committed


def _render_and_stage(mission: MissionDocument) -> list[StagedFile]:
    """mission.json and the graph, made, then each staged beside its place (see `StagedFile`)."""
    return _stage_both(Path(mission.dir), *_render(mission, keep_record=False))


def _render(mission: MissionDocument, *, keep_record: bool) -> tuple[bytes, bytes]:
    """The bytes of mission.json and of the graph; if the graph cannot be made and
    *keep_record*, mission.json is written before the error goes on."""
    files, keys, join_keys = _files_of(mission), *_keys(mission)
    record = files.text.render(mission, keys, join_keys)
    try:
        return record, files.graph.render(mission, keys, join_keys)
    except BaseException:
        if keep_record:
            write_atomic(Path(mission.dir) / "mission.json", record)
        raise


def _stage_both(folder: Path, record: bytes, graph: bytes) -> list[StagedFile]:
    """mission.json and the graph, each staged beside its place at the same time: the writer
    thread stages mission.json while this one stages the graph.

    Both are made before either is staged: the writer thread needs the GIL between its
    system calls, which a render holds for the interpreter's switch interval (5 ms) at a time;
    two threads that mostly wait on the disk share it without waiting.
    """
    staging = _writer().submit(stage_atomic, folder / "mission.json", record)
    try:
        staged_graph = stage_atomic(folder / "mission-graph.json", graph)
    except BaseException:
        _discard_once_staged(staging)
        raise
    try:
        return [staging.result(), staged_graph]
    except BaseException:
        staged_graph.discard()
        raise


def _commit_in_order(staged: list[StagedFile]) -> list[Future[None]]:
    """Put staged mission.json, then the staged graph, in place (`commit_in_order`), each
    replaced file's blocks freed by the writer thread afterwards.

    Renaming over a file frees the old one's blocks inside rename(); where the file system
    discards freed blocks at once (``mount -o discard``), that costs ~2 ms for each of the two
    files at 1,000 features (0.9 MB and 4 MB), in the join's path. A second name keeps each
    old file until the writer thread unlinks it, after the save. A crash may leave that name
    behind; the next save removes it. Returns the writer's removals, for a caller that waits.
    """
    second_names = [_second_name(file) for file in staged]
    try:
        commit_in_order(staged)
    finally:
        removals = [_writer().submit(_remove_aside, name) for name in second_names if name]
    return removals


def _second_name(file: StagedFile) -> _Aside | None:
    """A second name for the file *file* replaces (``.<name>.replaced``), or None where there
    is no file yet (the first save) or the file system has no hard links. Made, and later
    unlinked, in the folder the file was staged in (its descriptor, never its path again)."""
    folder = os.dup(file.folder_fd)
    second = _Aside(folder, f".{file.path.name}.replaced")
    try:
        _remove_aside(second, close=False)  # a crash's leftover, or the last save's
        name = file.path.name
        os.link(name, second.name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
    except OSError:
        os.close(folder)
        return None
    return second


class _Aside(NamedTuple):
    """A second name (``name``) in the folder that ``folder`` (a descriptor) holds open."""

    folder: int
    name: str


def _remove_aside(aside: _Aside, *, close: bool = True) -> None:
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(aside.name, dir_fd=aside.folder)
    finally:
        if close:
            os.close(aside.folder)


def _discard_once_staged(staging: Future[StagedFile]) -> None:
    """Remove what *staging* staged, once it is done. The graph's error is the one reported:
    if staging failed too, it left nothing behind (`stage_atomic`)."""
    with contextlib.suppress(Exception):
        staging.result().discard()


def _keys(mission: MissionDocument) -> tuple[list[FeatureKey], list[JoinKey]]:
    """The keys of every feature and wave join: one of each per save serves both files."""
    keys = [feature_key(feature) for feature in mission.features]
    return keys, [join_key(join) for join in mission.wave_joins]


# The writer of this process, by pid: a forked child has none of its parent's threads.
_WRITERS: dict[int, ThreadPoolExecutor] = {}
_WRITERS_GUARD = threading.Lock()


def _writer() -> ThreadPoolExecutor:
    """One thread that stages mission.json while the graph is staged, and unlinks the files a
    save replaced (made on first use, in each process)."""
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
