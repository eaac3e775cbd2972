"""Write a mission's graph at each join in time proportional to what changed since the last.

A join changes the features of one wave, the mission node and one new wave-join node; the
other facts of a 1,000-feature graph are as they were. `MissionGraphCache` keeps the bytes of
every fact as `graph.dump_graph` writes them, grouped in fragments (per feature: its state, and
its links; per wave join; the mission's own facts), each keyed on everything the projection
reads for it (``_projection.feature_state_facts``, ``feature_link_facts``, ``wave_facts``
say what), and re-projects only the fragments whose key changed. The bytes are those of the
full projection, ``dump_graph(mission_graph(mission))``: a test compares them at every join of
real missions.

Fragments are built by the projection's own functions, so every fact is still checked by the
graph's models as it is made; the document-wide checks (ids unique, every reference present)
hold by construction (fragments are made from unique feature ids and wave numbers, edges only
point at features of the mission) and are checked again on ids when the set of ids changes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graph import (
    Edge,
    Event,
    GraphBuilder,
    GraphValidationError,
    Node,
    Ref,
    Scope,
    assemble_graph,
    fact_text,
)

from ._projection import (
    feature_link_facts,
    feature_ref,
    feature_state_facts,
    mission_facts,
    mission_scope,
    mission_times,
    wave_facts,
)

if TYPE_CHECKING:
    from ._models import Feature, MissionDocument, WaveJoin

__all__ = ["MissionGraphCache", "cache_for"]

# What builds one fragment's facts into a builder: a projection function and its arguments.
_Maker = Callable[..., None]
Fact = Node | Edge | Event
# Missions whose fragments stay in memory (one process rarely saves more than one at a time).
_KEPT_MISSIONS = 4
_SECTIONS = ("nodes", "edges", "events")


@dataclass
class _Fragment:
    """The ids of the facts one fragment made (per section), and the key they were made for."""

    key: object
    ids: tuple[list[str], list[str], list[str]]
    targets: frozenset[str]


@dataclass
class _Section:
    """One list of the document: the bytes of each fact by id, and the ids in order."""

    texts: dict[str, bytes] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    dirty: bool = True

    def ordered(self) -> list[bytes]:
        if self.dirty:
            self.order = sorted(self.texts)
            self.dirty = False
        texts = self.texts
        return [texts[fact_id] for fact_id in self.order]


class _FeatureRefs(Mapping[str, Ref]):
    """The refs of a mission's features, made on demand (a fragment names only a few)."""

    def __init__(self, mission_id: str, ids: frozenset[str]) -> None:
        self.mission_id = mission_id
        self.ids = ids

    def __getitem__(self, feature_id: str) -> Ref:
        if feature_id not in self.ids:
            raise KeyError(feature_id)
        return feature_ref(self.mission_id, feature_id)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.ids))

    def __len__(self) -> int:
        return len(self.ids)


class MissionGraphCache:
    """The facts of one mission's graph, kept as bytes between two renderings."""

    def __init__(self) -> None:
        self._fragments: dict[tuple[object, ...], _Fragment] = {}
        self._sections = tuple(_Section() for _ in _SECTIONS)
        # The feature ids the fragments were made with: which blockers have an edge.
        self._ids: frozenset[str] = frozenset()
        # Fragments made since the last check of references, and whether a node went away.
        self._unchecked: list[_Fragment] = []
        self._nodes_dropped = False
        self._counts = [0, 0, 0]  # facts made per section, to tell a duplicate id

    def render(self, mission: MissionDocument) -> bytes:
        """The bytes of ``dump_graph(mission_graph(mission))``, re-projecting what changed.

        Raises:
            GraphValidationError: a fact breaks the contract (as the full projection would).
        """
        created, latest = mission_times(mission)
        scope = mission_scope(mission)
        ids = frozenset(f.id for f in mission.features)
        if ids != self._ids:  # rare (a resume with features added): every link may differ
            self._forget_all()
            self._ids = ids
        refs = _FeatureRefs(mission.id, ids)
        waves = {i: n for n, wave in enumerate(mission.waves, 1) for i in wave}
        context = (mission.id, scope.repository_id, created)
        seen: set[tuple[object, ...]] = set()
        fragments = self._fragments

        def build(name: tuple[object, ...], key: object, make: _Maker, *args: object) -> None:
            # *args* are bound only on a miss: most fragments of a join's save are hits.
            seen.add(name)
            cached = fragments.get(name)
            if cached is None or cached.key != key:
                self._replace(name, key, lambda builder: make(builder, *args), scope, created)

        build(
            ("mission",),
            (context, latest, _mission_key(mission)),
            _mission_part,
            mission,
            created,
            latest,
        )
        for feature in mission.features:
            wave = waves.get(feature.id, 0)
            state_key = (context, wave, _state_key(feature))
            build(("state", feature.id), state_key, _state_part, mission, feature, created, wave)
            links_key = (context, tuple(feature.blocked_by))
            build(("links", feature.id), links_key, _links_part, mission, feature, refs, created)
        for join in mission.wave_joins:
            join_key = (context, join.model_dump_json())
            build(("wave", join.wave), join_key, _wave_part, mission, join, refs)
        for gone in self._fragments.keys() - seen:
            self._drop(gone)
        return self._assemble(latest, scope)

    def _replace(
        self,
        name: tuple[object, ...],
        key: object,
        make: Callable[[GraphBuilder], None],
        scope: Scope,
        created: str,
    ) -> None:
        builder = GraphBuilder(generated_at=created, scope=scope)
        make(builder)
        new: tuple[Sequence[Fact], ...] = (builder.nodes, builder.edges, builder.events)
        old = self._fragments.get(name)
        for index, (section, facts) in enumerate(zip(self._sections, new, strict=True)):
            ids = [fact.id for fact in facts]
            if old is None or old.ids[index] != ids:
                section.dirty = True
                for gone in old.ids[index] if old is not None else ():
                    section.texts.pop(gone, None)
            for fact in facts:
                section.texts[fact.id] = fact_text(fact)
        node_ids, edge_ids, event_ids = ([fact.id for fact in facts] for facts in new)
        for index, ids in enumerate((node_ids, edge_ids, event_ids)):
            self._counts[index] += len(ids) - (len(old.ids[index]) if old is not None else 0)
        if old is not None and old.ids[0] != node_ids:
            self._nodes_dropped = True
        fragment = _Fragment(key, (node_ids, edge_ids, event_ids), _targets(builder))
        self._fragments[name] = fragment
        self._unchecked.append(fragment)

    def _drop(self, name: tuple[object, ...]) -> None:
        fragment = self._fragments.pop(name)
        self._nodes_dropped = self._nodes_dropped or bool(fragment.ids[0])
        for index, ids in enumerate(fragment.ids):
            self._counts[index] -= len(ids)
        for section, ids in zip(self._sections, fragment.ids, strict=True):
            for gone in ids:
                section.texts.pop(gone, None)
            section.dirty = True

    def _forget_all(self) -> None:
        self._fragments.clear()
        self._sections = tuple(_Section() for _ in _SECTIONS)
        self._unchecked.clear()
        self._counts = [0, 0, 0]

    def _assemble(self, latest: str, scope: Scope) -> bytes:
        if any(section.dirty for section in self._sections):
            self._check_references()
        nodes, edges, events = (section.ordered() for section in self._sections)
        return assemble_graph(latest, scope, nodes, edges, events)

    def _check_references(self) -> None:
        """Ids unique and references present, as ``validate_graph`` checks: for the fragments
        made since the last check, or for all of them when a node went away."""
        for section, count, name in zip(self._sections, self._counts, _SECTIONS, strict=True):
            if len(section.texts) != count:  # two fragments made a fact of one id
                message = f"mission graph {name}: an id is used twice"
                raise GraphValidationError(message, fact="graph")
        nodes = self._sections[0].texts
        checked = self._fragments.values() if self._nodes_dropped else self._unchecked
        for fragment in checked:
            missing = sorted(t for t in fragment.targets if t not in nodes)
            if missing:
                raise GraphValidationError(
                    f"mission graph references missing node {missing[0]}", fact="graph"
                )
        self._unchecked = []
        self._nodes_dropped = False


def _mission_part(
    builder: GraphBuilder, mission: MissionDocument, created: str, latest: str
) -> None:
    mission_facts(builder, mission, created, latest)


def _state_part(
    builder: GraphBuilder, mission: MissionDocument, feature: Feature, created: str, wave: int
) -> None:
    feature_state_facts(builder, mission, feature, created, wave)


def _links_part(
    builder: GraphBuilder,
    mission: MissionDocument,
    feature: Feature,
    refs: Mapping[str, Ref],
    created: str,
) -> None:
    feature_link_facts(builder, mission, feature, refs, created)


def _wave_part(
    builder: GraphBuilder, mission: MissionDocument, join: WaveJoin, refs: Mapping[str, Ref]
) -> None:
    wave_facts(builder, mission, join, refs)


def _mission_key(mission: MissionDocument) -> tuple[object, ...]:
    """What the mission's node reads (``_projection._mission_attributes``), besides the times."""
    statuses = [f.status for f in mission.features]
    return (
        mission.status,
        mission.completed_at,
        len(mission.features),
        statuses.count("completed"),
        statuses.count("failed"),
        len(mission.wave_joins),
        len(mission.waves),
        mission.config.max_workers,
        mission.prompt,
        mission.base_commit,
        mission.integration_branch,
    )


def _state_key(feature: Feature) -> tuple[object, ...]:
    """Every field of *feature* (its node and event read most of them), its blockers copied:
    a list changed in place must not change a key already kept."""
    fields = feature.__dict__  # pydantic keeps the fields there; read at 1,000 features a join
    return (*fields.values(), tuple(fields["blocked_by"]))


def _targets(builder: GraphBuilder) -> frozenset[str]:
    own = {node.id for node in builder.nodes}
    targets = {e.source.id for e in builder.edges} | {e.target.id for e in builder.edges}
    targets |= {e.subject.id for e in builder.events}
    return frozenset(targets - own)


_CACHES: OrderedDict[str, MissionGraphCache] = OrderedDict()


def cache_for(mission: MissionDocument) -> MissionGraphCache:
    """The fact cache of *mission* (by its folder), made on first use; the least recently used
    of more than a few missions is dropped (its next save re-projects everything)."""
    cache = _CACHES.pop(mission.dir, None) or MissionGraphCache()
    _CACHES[mission.dir] = cache
    while len(_CACHES) > _KEPT_MISSIONS:
        _CACHES.popitem(last=False)
    return cache
