"""Fusion and ordering of ranked lists: pure functions, no I/O.

`fuse` merges ranked lists (dense and keyword, from one or several collections) into one
ranking. Methods, all measured on SciFact's training queries (`benchmarks/retrieval.py`):

* `rrf`: reciprocal rank fusion, sum of weight / (k + rank) (Cormack et al., 2009);
* `convex`: a weighted sum of min-max normalised scores (absent = 0);
* `zscore` (the default): a weighted sum of z-normalised scores, absent = the list's
  minimum.

Then `collapse_per_doc` (best chunk per document), `sort_by_date` and `group_by` order
what is shown.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

METHODS = ("rrf", "convex", "zscore")


@dataclass(frozen=True, slots=True)
class Ranked(Generic[K]):
    """One ranked list, best first: (key, score) with higher scores better."""

    name: str
    items: tuple[tuple[K, float], ...]


@dataclass(frozen=True, slots=True)
class Fusion:
    """How to fuse: the method, RRF's `k`, and a weight per list name (default 1)."""

    method: str = "zscore"
    k: float = 60.0
    weights: Mapping[str, float] = field(default_factory=dict)

    def weight(self, name: str) -> float:
        return float(self.weights.get(name, 1.0))


def fuse(lists: Sequence[Ranked[K]], fusion: Fusion | None = None) -> list[tuple[K, float]]:
    """One ranking from several; ties keep the order of first appearance."""
    fusion = fusion or Fusion()
    if fusion.method not in METHODS:
        raise ValueError(f"unknown fusion method {fusion.method!r}; choose one of {METHODS}")
    scores: dict[K, float] = {}
    for ranked in lists:
        for key, _ in ranked.items:
            scores.setdefault(key, 0.0)
    for ranked in lists:
        weight = fusion.weight(ranked.name)
        if not ranked.items or weight == 0:
            continue
        contribution = _contributions(ranked, fusion)
        for key in scores:
            scores[key] += weight * contribution(key)
    order = {key: i for i, key in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def _contributions(ranked: Ranked[K], fusion: Fusion) -> Callable[[K], float]:
    if fusion.method == "rrf":
        ranks: dict[K, int] = {}
        for rank, (key, _) in enumerate(ranked.items, 1):
            ranks.setdefault(key, rank)
        return lambda key: 1.0 / (fusion.k + ranks[key]) if key in ranks else 0.0
    values: dict[K, float] = {}
    for key, score in ranked.items:
        values[key] = max(score, values.get(key, -math.inf))
    low, high = min(values.values()), max(values.values())
    if fusion.method == "convex":
        span = high - low
        return lambda key: ((values[key] - low) / span if span else 1.0) if key in values else 0.0
    mean = sum(values.values()) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values.values()) / len(values)) or 1.0
    floor = (low - mean) / std
    return lambda key: (values[key] - mean) / std if key in values else floor


def collapse_per_doc(items: Sequence[T], doc_of: Callable[[T], Hashable]) -> list[tuple[T, int]]:
    """The first (best) item of each document, with how many others it stands for."""
    first: dict[Hashable, int] = {}
    counts: list[int] = []
    kept: list[T] = []
    for item in items:
        doc = doc_of(item)
        if doc in first:
            counts[first[doc]] += 1
            continue
        first[doc] = len(kept)
        kept.append(item)
        counts.append(0)
    return list(zip(kept, counts, strict=True))


def sort_by_date(items: Sequence[T], date_of: Callable[[T], float | None]) -> list[T]:
    """Newest first; undated items last; equal dates keep their rank order."""
    indexed = list(enumerate(items))
    dated = [(i, x, date_of(x)) for i, x in indexed]
    return [x for i, x, d in sorted(dated, key=lambda t: (t[2] is None, -(t[2] or 0.0), t[0]))]


def group_by(items: Sequence[T], key_of: Callable[[T], str]) -> list[tuple[str, list[T]]]:
    """Groups in the order of their best item; items keep their order within a group."""
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(key_of(item), []).append(item)
    return list(groups.items())


__all__ = [
    "METHODS",
    "Fusion",
    "Ranked",
    "collapse_per_doc",
    "fuse",
    "group_by",
    "sort_by_date",
]
