"""Triage suggestions: which group (a metadata field, `source`, `collection` or a folder
level `path:N`) a file belongs to, from the indexed content nearest to it. Pure.

Design notes: docs/internals.md, `retrieve/suggest.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..records import Hit

DEPTH = 20  # neighbours per chunk of the file
HIGH = (0.5, 0.25)  # (score, margin) at least, for `high`
MEDIUM = (0.3, 0.1)
NONE = "(none)"


@dataclass(frozen=True, slots=True)
class GroupSuggestion:
    group: str
    score: float
    margin: float  # score minus the best other group's score
    band: str  # high, medium or low
    chunks: int  # how many neighbour chunks of this group were counted
    best: tuple[Hit, ...]  # the (at most two) chunks of the group that matched best

    def as_json(self) -> dict[str, object]:
        return {
            "group": self.group,
            "score": round(self.score, 4),
            "margin": round(self.margin, 4),
            "confidence": self.band,
            "neighbour_chunks": self.chunks,
            "best_chunks": [
                {
                    "id": h.id,
                    "source": h.source,
                    "path": h.path,
                    "heading": h.heading,
                    "start_line": h.start_line,
                    "end_line": h.end_line,
                    "score": round(h.score, 4),
                }
                for h in self.best
            ],
        }


def group_key(group_by: str) -> Callable[[Hit], str]:
    """The group of a hit: `source`, `collection`, `path:N` (the N-th folder of its path,
    `(root)` for a file above that level) or a metadata field (`(none)` when absent)."""
    field = group_by.strip()
    if not field:
        raise ConfigError("--group-by needs a field, `source` or `path:N`")
    if field.startswith("path:"):
        try:
            level = int(field[5:])
        except ValueError:
            level = 0
        if level < 1:
            raise ConfigError(f"--group-by path:N needs a folder level N >= 1, got {field!r}")

        def by_folder(hit: Hit) -> str:
            folders = hit.path.replace("\\", "/").split("/")[:-1]
            return folders[level - 1] if len(folders) >= level else "(root)"

        return by_folder
    if field in ("source", "collection"):
        return lambda hit: getattr(hit, field) or NONE

    def by_metadata(hit: Hit) -> str:
        value: Any = hit.metadata.get(field)
        if value is None or value == "":
            return NONE
        if isinstance(value, list):
            return ", ".join(str(v) for v in value)
        return str(value)

    return by_metadata


def band(score: float, margin: float) -> str:
    if score >= HIGH[0] and margin >= HIGH[1]:
        return "high"
    if score >= MEDIUM[0] and margin >= MEDIUM[1]:
        return "medium"
    return "low"


def suggest_groups(
    weights: Sequence[float],
    neighbours: Sequence[Sequence[Hit]],
    key: Callable[[Hit], str],
    *,
    exclude: Callable[[Hit], bool] = lambda hit: False,
    depth: int = DEPTH,
    k: int = 3,
) -> list[GroupSuggestion]:
    """The `k` groups nearest to the file, best first (docs/internals.md)."""
    total = sum(weights) or 1.0
    scores: dict[str, float] = {}
    counts: dict[str, int] = {}
    best: dict[str, dict[str, Hit]] = {}
    for weight, hits in zip(weights, neighbours, strict=True):
        kept = sorted((h for h in hits if not exclude(h)), key=lambda h: (-h.score, h.id))[:depth]
        mass = sum(max(h.score, 0.0) for h in kept)
        if mass <= 0:
            continue
        for hit in kept:
            group = key(hit)
            scores[group] = scores.get(group, 0.0) + weight * max(hit.score, 0.0) / mass / total
            counts[group] = counts.get(group, 0) + 1
            seen = best.setdefault(group, {})
            if hit.id not in seen or hit.score > seen[hit.id].score:
                seen[hit.id] = hit
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    out = []
    for index, (group, score) in enumerate(ranked[:k]):
        others = [s for j, (_, s) in enumerate(ranked) if j != index]
        margin = score - (max(others) if others else 0.0)
        top = sorted(best[group].values(), key=lambda h: (-h.score, h.id))[:2]
        out.append(
            GroupSuggestion(
                group=group,
                score=score,
                margin=margin,
                band=band(score, margin),
                chunks=counts[group],
                best=tuple(top),
            )
        )
    return out


__all__ = ["DEPTH", "GroupSuggestion", "band", "group_key", "suggest_groups"]
