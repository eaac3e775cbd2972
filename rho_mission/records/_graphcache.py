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

Decision: docs/decisions/0510-mission-records.md
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from operator import itemgetter
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

from ._missionbytes import (
    FeatureKey,
    JoinKey,
    RenderedKeys,
    feature_key,
    join_key,
    key_blockers,
    key_end,
)
from ._projection import (
    feature_link_facts,
    feature_ref,
    feature_state_facts,
    integration_attributes,
    latest_stamp,
    mission_facts,
    mission_latest,
    mission_scope,
    mission_start,
    wave_facts,
)

if TYPE_CHECKING:
    from ._document import Feature, MissionDocument, WaveJoin

__all__ = ["MissionGraphCache"]

# What builds one fragment's facts into a builder, given the mission's start (``created``).
_Maker = Callable[..., None]
Fact = Node | Edge | Event
_SECTIONS = ("nodes", "edges", "events")


@dataclass
class _Fragment:
    """The ids of the facts one fragment made (per section), and the key they were made for."""

    key: object
    ids: tuple[list[str], list[str], list[str]]
    targets: frozenset[str]


@dataclass
class _Section:
    """One list of the document: the bytes of each fact by id, and the same in id order.

    The ordered lists are kept in step with every change (``bisect``), so that a join that
    replaces a few hundred facts of thousands never sorts or copies the whole list again.
    """

    texts: dict[str, bytes] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    ordered: list[bytes] = field(default_factory=list)

    def put(self, fact_id: str, text: bytes) -> None:
        """Set the bytes of *fact_id*, new or not."""
        at = bisect_left(self.order, fact_id)
        if fact_id in self.texts:
            self.ordered[at] = text
        else:
            self.order.insert(at, fact_id)
            self.ordered.insert(at, text)
        self.texts[fact_id] = text

    def remove(self, fact_id: str) -> None:
        """Forget *fact_id*, if it is there."""
        if self.texts.pop(fact_id, None) is not None:
            at = bisect_left(self.order, fact_id)
            del self.order[at]
            del self.ordered[at]


class _FeatureRefs(Mapping[str, Ref]):
    """The refs of a mission's features, made on demand (a fragment names only a few)."""

    def __init__(self, mission_id: str, ids: frozenset[str]) -> None:
        self.mission_id = mission_id
        self.ids = ids
        self.made: dict[str, Ref] = {}  # refs are never changed once made: kept between joins

    def __getitem__(self, feature_id: str) -> Ref:
        if feature_id not in self.ids:
            raise KeyError(feature_id)
        ref = self.made.get(feature_id)
        if ref is None:
            ref = self.made[feature_id] = feature_ref(self.mission_id, feature_id)
        return ref

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
        self._ids_changed = False  # a fact came or went: references are checked again
        self._counts = [0, 0, 0]  # facts made per section, to tell a duplicate id
        # What the last render read of the mission, for features prepared before the next one.
        self._context: tuple[str, str | None, str] | None = None
        self._scope: Scope | None = None
        self._waves: dict[str, int] = {}
        self._waves_seen: tuple[tuple[str, ...], ...] = ()  # the waves ``_waves`` was made of
        self._refs: _FeatureRefs | None = None
        # The keys of the features and of the wave joins last rendered: a render looks at
        # those that changed since, or whose fragments were made again since (a note).
        self._rendered = (RenderedKeys(), RenderedKeys())
        self._features_latest: str | None = None  # the latest end of those rendered features

    def render(
        self,
        mission: MissionDocument,
        keys: Sequence[FeatureKey] | None = None,
        join_keys: Sequence[JoinKey] | None = None,
    ) -> bytes:
        """The bytes of ``dump_graph(mission_graph(mission))``, re-projecting what changed.

        *keys*, *join_keys*: the `feature_key` of each feature and the `join_key` of each wave
        join, in order, when the caller has them.

        Raises:
            GraphValidationError: a fact breaks the contract (as the full projection would).
        """
        if keys is None:
            keys = [feature_key(feature) for feature in mission.features]
        # A plain mission's graph has no wave-join nodes (``_projection._features_and_waves``).
        plain = mission.planning is not None and mission.planning.plain
        joins = [] if plain else mission.wave_joins
        if join_keys is None or plain:
            join_keys = [join_key(join) for join in joins]
        created = mission_start(mission)
        scope = mission_scope(mission)
        ids = frozenset(map(itemgetter(0), keys))  # each key starts with its feature's id
        if ids != self._ids:  # rare (a resume with features added): every link may differ
            self._forget_all()
            self._ids = ids
        if self._refs is None or self._refs.mission_id != mission.id or self._refs.ids != ids:
            self._refs = _FeatureRefs(mission.id, ids)
        refs = self._refs
        self._read_waves(mission)
        context = (mission.id, scope.repository_id, created)
        if context != self._context:  # every fragment's key holds it
            for rendered in self._rendered:
                rendered.forget()
        self._context = context
        self._scope = scope
        features = mission.features
        looked = self._rendered[0].to_look_at(keys)
        features_latest = self._latest_end(keys, looked)
        latest = mission_latest(mission, features_latest)
        fragments = self._fragments
        name: tuple[object, ...] = ("mission",)
        key: object = (context, latest, _mission_key(mission))
        cached = fragments.get(name)
        if cached is None or cached.key != key:
            self._replace(name, key, partial(_mission_part, mission=mission, latest=latest))
        for at in looked:
            feature, values = features[at], keys[at]
            self._feature_state(mission, feature, values)
            name, key = ("links", feature.id), (context, key_blockers(values))
            cached = fragments.get(name)
            if cached is None or cached.key != key:
                make = partial(_links_part, mission=mission, feature=feature, refs=refs)
                self._replace(name, key, make)
        looked_joins = self._rendered[1].to_look_at(join_keys)
        for at in looked_joins:
            join = joins[at]
            name, key = ("wave", join.wave), (context, join_keys[at])
            cached = fragments.get(name)
            if cached is None or cached.key != key:
                self._replace(name, key, partial(_wave_part, mission=mission, join=join, refs=refs))
        # Feature fragments go with the set of ids (above); only a join can go on its own (a
        # resume drops the joins of the waves it runs again).
        if len(fragments) > 1 + 2 * len(ids) + len(joins):
            waves = {join.wave for join in joins}
            for gone in [n for n in fragments if n[0] == "wave" and n[1] not in waves]:
                self._drop(gone)
        graph = self._assemble(latest, scope)
        self._rendered[0].rendered(keys, looked)
        self._rendered[1].rendered(join_keys, looked_joins)
        self._features_latest = features_latest  # kept with the keys it was made of
        return graph

    def _latest_end(self, keys: Sequence[FeatureKey], looked: Sequence[int]) -> str | None:
        """The latest of the features' ends (`latest_stamp`), from the last render's and the
        ends of the features looked at, unless one of those held the last render's latest
        (it may have gone back: a resume runs a feature again); then from every feature's."""
        rendered = self._rendered[0]
        if isinstance(looked, range):  # every feature looked at: nothing rendered to go by
            return latest_stamp(map(key_end, keys))
        last = self._features_latest
        for at in looked:
            before = rendered.rendered_key(at)
            if last is not None and before is not None and key_end(before) == last:
                return latest_stamp(map(key_end, keys))
        return latest_stamp([last, *(key_end(keys[at]) for at in looked)])

    def _read_waves(self, mission: MissionDocument) -> None:
        """Each feature's wave number, made again only when the plan's waves changed."""
        waves = tuple(map(tuple, mission.waves))
        if waves != self._waves_seen:
            self._waves = {i: n for n, wave in enumerate(waves, 1) for i in wave}
            self._waves_seen = waves
            self._rendered[0].forget()  # a state fragment's key holds its feature's wave

    def prepare_feature(self, mission: MissionDocument, feature: Feature, key: FeatureKey) -> None:
        """Make the facts of *feature*'s state now (it just ended), for the next `render`;
        *key* is its `feature_key`.

        The engine calls this as each feature ends, while the wave's other features run, so
        that the join's render finds them made. The key is the one `render` computes, from
        the mission as the last render saw it: if anything it reads changed since, the
        render makes the facts again. Before a first render there is nothing to go by.
        """
        if self._context is None or feature.id not in self._ids:
            return
        self._feature_state(mission, feature, key)

    def _feature_state(
        self, mission: MissionDocument, feature: Feature, values: FeatureKey
    ) -> None:
        assert self._context is not None  # set by render before any feature is projected
        wave = self._waves.get(feature.id, 0)
        name, key = ("state", feature.id), (self._context, wave, values)
        cached = self._fragments.get(name)
        if cached is None or cached.key != key:
            make = partial(_state_part, mission=mission, feature=feature, wave=wave)
            self._replace(name, key, make)

    def _replace(self, name: tuple[object, ...], key: object, make: _Maker) -> None:
        assert self._context is not None  # set by render, as the scope
        assert self._scope is not None
        created = self._context[2]
        builder = GraphBuilder(generated_at=created, scope=self._scope)
        make(builder, created=created)
        new: tuple[Sequence[Fact], ...] = (builder.nodes, builder.edges, builder.events)
        old = self._fragments.get(name)
        node_ids, edge_ids, event_ids = ([fact.id for fact in facts] for facts in new)
        for index, (section, facts) in enumerate(zip(self._sections, new, strict=True)):
            if old is not None and old.ids[index] != (node_ids, edge_ids, event_ids)[index]:
                self._ids_changed = True
                for gone in old.ids[index]:
                    section.remove(gone)
            elif old is None and facts:
                self._ids_changed = True
            for fact in facts:
                section.put(fact.id, fact_text(fact))
        for index, ids in enumerate((node_ids, edge_ids, event_ids)):
            self._counts[index] += len(ids) - (len(old.ids[index]) if old is not None else 0)
        if old is not None and old.ids[0] != node_ids:
            self._nodes_dropped = True
        fragment = _Fragment(key, (node_ids, edge_ids, event_ids), _targets(builder))
        self._fragments[name] = fragment
        self._unchecked.append(fragment)
        self._remade(name)

    def _remade(self, name: tuple[object, ...]) -> None:
        """Note that the fragment *name* was made (or dropped) since the last render."""
        if name[0] == "wave":
            self._rendered[1].remade(name[1])
        elif name[0] != "mission":  # a feature's state or links
            self._rendered[0].remade(name[1])

    def _drop(self, name: tuple[object, ...]) -> None:
        fragment = self._fragments.pop(name)
        self._remade(name)
        self._nodes_dropped = self._nodes_dropped or bool(fragment.ids[0])
        for index, ids in enumerate(fragment.ids):
            self._counts[index] -= len(ids)
        for section, ids in zip(self._sections, fragment.ids, strict=True):
            for gone in ids:
                section.remove(gone)
        self._ids_changed = True

    def _forget_all(self) -> None:
        self._fragments.clear()
        self._sections = tuple(_Section() for _ in _SECTIONS)
        self._unchecked.clear()
        self._counts = [0, 0, 0]
        self._ids_changed = True
        for rendered in self._rendered:
            rendered.forget()

    def _assemble(self, latest: str, scope: Scope) -> bytes:
        if self._ids_changed:
            self._check_references()
        nodes, edges, events = (section.ordered for section in self._sections)
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
        self._ids_changed = False


# What makes one fragment's facts: a projection function with all but the builder and the
# mission's start bound (``functools.partial``), called by ``MissionGraphCache._replace``.


def _mission_part(
    builder: GraphBuilder, *, mission: MissionDocument, latest: str, created: str
) -> None:
    mission_facts(builder, mission, created, latest)


def _state_part(
    builder: GraphBuilder, *, mission: MissionDocument, feature: Feature, wave: int, created: str
) -> None:
    feature_state_facts(builder, mission, feature, created, wave)


def _links_part(
    builder: GraphBuilder,
    *,
    mission: MissionDocument,
    feature: Feature,
    refs: Mapping[str, Ref],
    created: str,
) -> None:
    feature_link_facts(builder, mission, feature, refs, created)


def _wave_part(
    builder: GraphBuilder,
    *,
    mission: MissionDocument,
    join: WaveJoin,
    refs: Mapping[str, Ref],
    created: str,
) -> None:
    del created  # a join's facts carry its own times
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
        None if mission.planning is None else mission.planning.model_dump_json(),
        mission.usage,
        mission.budget_stop,
        mission.config.budget_usd,
        mission.config.budget_tokens,
        mission.config.budget_hard,
        tuple(sorted(integration_attributes(mission).items())),
    )


def _targets(builder: GraphBuilder) -> frozenset[str]:
    own = {node.id for node in builder.nodes}
    targets = {e.source.id for e in builder.edges} | {e.target.id for e in builder.edges}
    targets |= {e.subject.id for e in builder.events}
    return frozenset(targets - own)
