"""mission.json's bytes at each join, each feature dumped again only when it changed.

mission.json is rewritten at every join. At 1,000 features one ``model_dump_json`` of the whole
document costs more than the rest of a join's bookkeeping, though a join changes the features
of one wave and adds one wave join. `MissionTextCache` keeps each feature's and each join's
JSON, keyed on `feature_key` and `join_key` (every field, copied), and splices the texts into
the dump of the mission without its features and joins. The bytes
are those of ``mission.model_dump_json(indent=2)`` plus a newline: a test compares them at
every join of real missions and after random changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, TypeVar, get_origin

from ._models import Feature, Handoff, Verification, WaveJoin

if TYPE_CHECKING:
    from ._models import MissionDocument

__all__ = ["FeatureKey", "JoinKey", "MissionTextCache", "feature_key", "join_key", "key_blockers"]

FeatureKey = tuple[object, ...]
JoinKey = tuple[object, ...]
_Name = TypeVar("_Name", str, int)

# Every field, in declaration order; the two that hold mutable values are copied below.
_FEATURE_FIELDS = tuple(Feature.model_fields)
_HANDOFF_FIELDS = tuple(Handoff.model_fields)
_feature_values = attrgetter(*_FEATURE_FIELDS)
_handoff_values = attrgetter(*_HANDOFF_FIELDS)
_BLOCKED_BY = _FEATURE_FIELDS.index("blocked_by")
_HANDOFF = _FEATURE_FIELDS.index("handoff")
_FILES_CHANGED = _HANDOFF_FIELDS.index("files_changed")
_INDENT = "    "
_join_values = attrgetter(*WaveJoin.model_fields)
_verification_values = attrgetter(*Verification.model_fields)
# Where a join holds lists (its ids), and its verification, among its fields in order.
_JOIN_LISTS = tuple(
    at
    for at, field in enumerate(WaveJoin.model_fields.values())
    if get_origin(field.annotation) is list
)
_VERIFICATION = tuple(WaveJoin.model_fields).index("verification")


def feature_key(feature: Feature) -> FeatureKey:
    """Every field of *feature* as values that cannot change: equal keys, equal features.

    The blockers and the handoff (with its list of files) are copied into tuples, so that a
    list changed in place, or a handoff edited in place, never changes a key already kept.
    """
    values = list(_feature_values(feature))
    values[_BLOCKED_BY] = tuple(values[_BLOCKED_BY])
    handoff = values[_HANDOFF]
    if handoff is not None:
        fields = list(_handoff_values(handoff))
        fields[_FILES_CHANGED] = tuple(fields[_FILES_CHANGED])
        values[_HANDOFF] = tuple(fields)
    return tuple(values)


def key_blockers(key: FeatureKey) -> tuple[str, ...]:
    """The blockers held in *key* (a `feature_key`), as listed."""
    blockers = key[_BLOCKED_BY]
    assert isinstance(blockers, tuple)
    return blockers


def join_key(join: WaveJoin) -> JoinKey:
    """Every field of *join* as values that cannot change (its lists copied into tuples, its
    verification into a tuple of its fields): equal keys, equal joins."""
    values = list(_join_values(join))
    for at in _JOIN_LISTS:
        values[at] = tuple(values[at])
    values[_VERIFICATION] = _verification_values(values[_VERIFICATION])
    return tuple(values)


class MissionTextCache:
    """The JSON of one mission's features and wave joins, kept between two renderings of
    mission.json."""

    def __init__(self) -> None:
        self._texts: dict[str, tuple[FeatureKey, str]] = {}  # by feature id
        self._joins: dict[int, tuple[JoinKey, str]] = {}  # by wave number

    def feature_text(self, feature: Feature, key: FeatureKey) -> str:
        """*feature*'s JSON as it stands in mission.json's list (indented by four spaces),
        dumped again only when *key* (its `feature_key`) changed."""
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
        if features:
            texts = [self.feature_text(f, k) for f, k in zip(features, keys, strict=True)]
            text = _spliced(text, "features", texts)
        if joins:
            kept = self._joins
            texts = [_kept_text(kept, j.wave, k, j) for j, k in zip(joins, join_keys, strict=True)]
            text = _spliced(text, "wave_joins", texts)
        return f"{text}\n".encode()


def _kept_text(
    texts: dict[_Name, tuple[tuple[object, ...], str]],
    name: _Name,
    key: tuple[object, ...],
    model: Feature | WaveJoin,
) -> str:
    """*model*'s JSON as an item of a top-level list of mission.json (indented by four
    spaces): the one kept under *name* when it was made for *key*, else dumped and kept."""
    kept = texts.get(name)
    if kept is not None and kept[0] == key:
        return kept[1]
    text = _INDENT + model.model_dump_json(indent=2).replace("\n", "\n" + _INDENT)
    texts[name] = (key, text)
    return text


def _spliced(text: str, name: str, items: list[str]) -> str:
    """*text* (a mission's JSON with ``"<name>": []``) with *items* as that list."""
    empty = f'\n  "{name}": []'  # a string value cannot hold a raw newline: only the key's line
    cut = text.index(empty) + len(empty) - 1  # at the list's "]"
    listed = ",\n".join(items)
    return f"{text[:cut]}\n{listed}\n  {text[cut:]}"
