"""mission.json's bytes at each join, each feature dumped again only when it changed.

mission.json is rewritten at every join. At 1,000 features one ``model_dump_json`` of the whole
document costs more than the rest of a join's bookkeeping, though a join changes the features
of one wave and adds one wave join. `MissionTextCache` keeps each feature's and each join's
JSON, keyed on `feature_key` and `join_key` (every field, copied), and splices the texts into
the dump of the mission without its features and joins. The bytes
are those of ``mission.model_dump_json(indent=2)`` plus a newline: a test compares them at
every join of real missions and after random changes.

Decision: docs/decisions/0510-mission-records.md
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress, count
from operator import itemgetter, ne
from typing import TYPE_CHECKING, TypeVar, get_origin

from ._document import Conflict, Feature, Handoff, Verification, WaveJoin

if TYPE_CHECKING:
    from ._document import MissionDocument

__all__ = [
    "FeatureKey",
    "JoinKey",
    "MissionTextCache",
    "RenderedKeys",
    "feature_key",
    "join_key",
    "key_blockers",
    "key_end",
]

FeatureKey = tuple[object, ...]
JoinKey = tuple[object, ...]
_Name = TypeVar("_Name", str, int)

_INDENT = "    "
# The fields of a feature and of a join, read by name from the model's ``__dict__`` (where
# pydantic keeps them): those holding a model are read apart, as tuples of that model's fields.
_HELD_APART = ("handoff", "conflict", "attempt_usage")
_feature_fields = itemgetter(*(name for name in Feature.model_fields if name not in _HELD_APART))
_handoff_fields = itemgetter(*Handoff.model_fields)
_conflict_fields = itemgetter(*Conflict.model_fields)
_join_fields = itemgetter(*(name for name in WaveJoin.model_fields if name != "verification"))
_verification_fields = itemgetter(*Verification.model_fields)
# A join's fields that hold lists (its ids), also copied into tuples.
_join_lists = itemgetter(
    *(name for name, field in WaveJoin.model_fields.items() if get_origin(field.annotation) is list)
)


def feature_key(feature: Feature) -> FeatureKey:
    """Every field of *feature* as values that cannot change: equal keys, equal features.

    ``(id, blockers, handoff, conflict, attempts' usage, *the other fields)``: the blockers and
    the usage records (frozen) are also copied into tuples, and the handoff and the conflict
    each stand as a tuple of their fields (their lists copied too), so that a list changed
    in place, or a handoff edited in place, never changes a key already kept, and two equal
    handoffs compare without pydantic's ``__eq__``. The fields are read by name from the
    model's ``__dict__``: a third of the cost of reading each attribute.
    """
    values = feature.__dict__
    handoff = values["handoff"]
    kept = None
    if handoff is not None:
        kept = (*_handoff_fields(handoff.__dict__), tuple(handoff.files_changed))
    met = values["conflict"]
    if met is not None:
        met = (*_conflict_fields(met.__dict__), tuple(met.paths), tuple(met.with_))
    used = tuple(values["attempt_usage"])  # frozen records: the tuple cannot change
    blockers = tuple(values["blocked_by"])
    return (values["id"], blockers, kept, met, used, *_feature_fields(values))


def key_blockers(key: FeatureKey) -> tuple[str, ...]:
    """The blockers held in *key* (a `feature_key`), as listed."""
    blockers = key[1]
    assert isinstance(blockers, tuple)
    return blockers


# Where a `feature_key` holds the feature's end (``completed_at``): after id, blockers, handoff,
# conflict, attempts' usage.
_END_AT = 5 + [name for name in Feature.model_fields if name not in _HELD_APART].index(
    "completed_at"
)


def key_end(key: FeatureKey) -> str | None:
    """The end (``completed_at``) held in *key* (a `feature_key`)."""
    end = key[_END_AT]
    assert end is None or isinstance(end, str)
    return end


def join_key(join: WaveJoin) -> JoinKey:
    """Every field of *join* as values that cannot change, its wave number first: its lists
    (ids) also copied into tuples, its verification as a tuple of its fields. Equal keys,
    equal joins."""
    values = join.__dict__
    lists = tuple(map(tuple, _join_lists(values)))
    checked = tuple(
        tuple(value) if isinstance(value, list) else value  # its culprits: copied, like the ids
        for value in _verification_fields(values["verification"].__dict__)
    )
    return (values["wave"], lists, checked, *_join_fields(values))


class RenderedKeys:
    """The keys of the items (features, or wave joins) a cache last rendered, in order: which
    items its next render must look at again.

    An item needs a look when its key differs from the one rendered at its position, or when
    the cache remade its part since that render (a feature's end noted, a render that failed
    half-way): that part may be the one of another key, even if the item went back to the
    rendered one since. The others are as rendered, so a join looks at what changed: the
    comparison of two lists of keys is all it pays for the rest.
    """

    def __init__(self) -> None:
        self._keys: list[tuple[object, ...]] = []
        self._positions: dict[object, int] = {}  # by an item's name (its key's first value)
        self._remade: set[object] = set()
        self._known = False  # False: nothing rendered yet, or forgotten

    def remade(self, name: object) -> None:
        """Note that the cache remade the part of the item named *name* outside a render."""
        self._remade.add(name)

    def forget(self) -> None:
        """Have the next render look at every item (what the cache kept changed wholesale)."""
        self._known = False

    def rendered_key(self, at: int) -> tuple[object, ...] | None:
        """The key rendered at position *at*, or None past the last render's end."""
        return self._keys[at] if at < len(self._keys) else None

    def to_look_at(self, keys: Sequence[tuple[object, ...]]) -> Sequence[int]:
        """The positions of *keys* whose items the render must look at, in order: those added
        at the end since (a new wave join) among them."""
        last = self._keys
        if not self._known or len(last) > len(keys) or len(self._positions) != len(last):
            return range(len(keys))  # the first render, items gone, or a name twice
        looked = set(compress(count(), map(ne, keys, last)))  # stops at the shorter list
        # A remade item that is not where it was rendered is at a position whose key changed.
        looked.update(at for name in self._remade if (at := self._positions.get(name)) is not None)
        return [*sorted(looked), *range(len(last), len(keys))]

    def rendered(self, keys: Sequence[tuple[object, ...]], looked: Sequence[int]) -> None:
        """Record *keys* as rendered, after a render that looked at the positions *looked*."""
        if isinstance(looked, range):
            self._keys = list(keys)
            self._positions = {key[0]: at for at, key in enumerate(keys)}
        else:
            replaced = len(self._keys)
            for at in looked:  # in order: those past the last rendering's end are appended
                if at < replaced:
                    self._keys[at] = keys[at]
                else:
                    self._keys.append(keys[at])
                self._positions[keys[at][0]] = at
        self._remade.clear()
        self._known = True


class MissionTextCache:
    """The JSON of one mission's features and wave joins, kept between two renderings of
    mission.json."""

    def __init__(self) -> None:
        self._texts: dict[str, tuple[FeatureKey, bytes]] = {}  # by feature id
        self._joins: dict[int, tuple[JoinKey, bytes]] = {}  # by wave number
        # The texts of the last rendering (features, wave joins), in order, and the keys they
        # were made for: an item whose key is the one rendered at its position keeps its text.
        self._listed: list[list[bytes]] = [[], []]
        self._rendered = (RenderedKeys(), RenderedKeys())

    def feature_text(self, feature: Feature, key: FeatureKey) -> bytes:
        """*feature*'s JSON as it stands in mission.json's list (indented by four spaces, in
        UTF-8), dumped again only when *key* (its `feature_key`) changed."""
        return _kept_text(self._texts, feature.id, key, feature)

    def render(
        self,
        mission: MissionDocument,
        keys: Sequence[FeatureKey],
        join_keys: Sequence[JoinKey],
    ) -> bytes:
        """The bytes of ``mission.model_dump_json(indent=2) + "\n"``; *keys* are the
        `feature_key` of each of its features, *join_keys* the `join_key` of each wave join,
        in order."""
        features, joins = mission.features, mission.wave_joins
        empty: dict[str, object] = {"features": [], "wave_joins": []}
        text = mission.model_copy(update=empty).model_dump_json(indent=2)
        if len(self._texts) > len(features):  # features went away (rare): drop their texts
            present = {feature.id for feature in features}
            self._texts = {i: kept for i, kept in self._texts.items() if i in present}
        feature_texts = self._list(0, keys, lambda at: self.feature_text(features[at], keys[at]))
        kept = self._joins
        join_texts = self._list(
            1, join_keys, lambda at: _kept_text(kept, joins[at].wave, join_keys[at], joins[at])
        )
        lists = {"features": feature_texts, "wave_joins": join_texts}
        return _spliced(text, {name: items for name, items in lists.items() if items})

    def _list(
        self, which: int, keys: Sequence[tuple[object, ...]], text_at: Callable[[int], bytes]
    ) -> list[bytes]:
        """The texts of one list (0: features, 1: wave joins): the last rendering's, with those
        of the items that changed since made again by *text_at* (a position)."""
        rendered = self._rendered[which]
        looked = rendered.to_look_at(keys)
        if isinstance(looked, range):
            texts = [text_at(at) for at in looked]
        else:
            texts = self._listed[which].copy()
            for at in looked:  # in order: those past the last rendering's end are appended
                if at < len(texts):
                    texts[at] = text_at(at)
                else:
                    texts.append(text_at(at))
        self._listed[which] = texts
        rendered.rendered(keys, looked)
        return texts


def _kept_text(
    texts: dict[_Name, tuple[tuple[object, ...], bytes]],
    name: _Name,
    key: tuple[object, ...],
    model: Feature | WaveJoin,
) -> bytes:
    """*model*'s JSON as an item of a top-level list of mission.json (indented by four
    spaces, in UTF-8): the one kept under *name* when it was made for *key*, else dumped and
    kept."""
    kept = texts.get(name)
    if kept is not None and kept[0] == key:
        return kept[1]
    text = (_INDENT + model.model_dump_json(indent=2).replace("\n", "\n" + _INDENT)).encode()
    texts[name] = (key, text)
    return text


def _spliced(text: str, lists: dict[str, list[bytes]]) -> bytes:
    """The bytes of *text* (a mission's JSON with ``"<name>": []`` for each list of *lists*)
    with each list's items (in UTF-8) in it, and a newline at the end.

    One join makes the whole file: each joined copy of ~1 MB costs ~0.5 ms, mostly in page
    faults on its new memory, and an item's bytes are kept between joins.
    """
    cuts = []
    for name in lists:
        empty = f'\n  "{name}": []'  # a string value cannot hold a raw newline: only the key's
        cuts.append((text.index(empty) + len(empty) - 1, name))  # at the list's "]"
    parts: list[bytes] = []
    start = 0
    for cut, name in sorted(cuts):  # found in the small text, not in the spliced one
        listed = [b",\n"] * (2 * len(lists[name]))  # the items and their separators, as in
        listed[0::2] = lists[name]  # graph.assemble_graph
        listed[-1] = b"\n  "
        parts += (text[start:cut].encode(), b"\n", *listed)
        start = cut
    parts += (text[start:].encode(), b"\n")
    return b"".join(parts)
