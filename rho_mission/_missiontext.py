"""mission.json's bytes at each join, each feature dumped again only when it changed.

mission.json is rewritten at every join. At 1,000 features one ``model_dump_json`` of the whole
document costs more than the rest of a join's bookkeeping, though a join changes the features
of one wave. `MissionTextCache` keeps each feature's JSON, keyed on `feature_key` (every field,
copied), and splices the texts into the dump of the mission without its features. The bytes
are those of ``mission.model_dump_json(indent=2)`` plus a newline: a test compares them at
every join of real missions and after random changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

from ._models import Feature, Handoff

if TYPE_CHECKING:
    from ._models import MissionDocument

__all__ = ["FeatureKey", "MissionTextCache", "feature_key", "key_blockers"]

FeatureKey = tuple[object, ...]

# Every field, in declaration order; the two that hold mutable values are copied below.
_FEATURE_FIELDS = tuple(Feature.model_fields)
_HANDOFF_FIELDS = tuple(Handoff.model_fields)
_feature_values = attrgetter(*_FEATURE_FIELDS)
_handoff_values = attrgetter(*_HANDOFF_FIELDS)
_BLOCKED_BY = _FEATURE_FIELDS.index("blocked_by")
_HANDOFF = _FEATURE_FIELDS.index("handoff")
_FILES_CHANGED = _HANDOFF_FIELDS.index("files_changed")
# Where the features go in the dump of a mission without them: the key's own line (a string
# value cannot hold a raw newline, so this text is only ever the key itself).
_NO_FEATURES = '\n  "features": []'
_INDENT = "    "


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


class MissionTextCache:
    """The JSON of one mission's features, kept between two renderings of mission.json."""

    def __init__(self) -> None:
        self._texts: dict[str, tuple[FeatureKey, str]] = {}

    def feature_text(self, feature: Feature, key: FeatureKey) -> str:
        """*feature*'s JSON as it stands in mission.json's list (indented by four spaces),
        dumped again only when *key* (its `feature_key`) changed."""
        kept = self._texts.get(feature.id)
        if kept is not None and kept[0] == key:
            return kept[1]
        text = _INDENT + feature.model_dump_json(indent=2).replace("\n", "\n" + _INDENT)
        self._texts[feature.id] = (key, text)
        return text

    def render(self, mission: MissionDocument, keys: Sequence[FeatureKey]) -> bytes:
        """The bytes of ``mission.model_dump_json(indent=2) + "\\n"``; *keys* are the
        `feature_key` of each of its features, in order."""
        features = mission.features
        shell = mission.model_copy(update={"features": []}).model_dump_json(indent=2)
        if not features:
            return f"{shell}\n".encode()
        if len(self._texts) > len(features):  # features went away (rare): drop their texts
            present = {feature.id for feature in features}
            self._texts = {i: kept for i, kept in self._texts.items() if i in present}
        texts = [self.feature_text(f, k) for f, k in zip(features, keys, strict=True)]
        cut = shell.index(_NO_FEATURES) + len(_NO_FEATURES) - 1  # at the list's "]"
        listed = ",\n".join(texts)
        return f"{shell[:cut]}\n{listed}\n  {shell[cut:]}\n".encode()
