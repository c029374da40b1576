"""Fusion and ordering of ranked lists: pure functions, no I/O.

Design notes: docs/internals.md, `retrieve/fuse.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Generic, TypeVar

from .feedback import Feedback

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

METHODS = ("rrf", "convex", "zscore")
#: What a list's scores are normalised over: its chunks, or its documents (best chunk each).
UNITS = ("chunk", "document")


@dataclass(frozen=True, slots=True)
class Ranked(Generic[K]):
    """One ranked list, best first: (key, score) with higher scores better."""

    name: str
    items: tuple[tuple[K, float], ...]


@dataclass(frozen=True, slots=True)
class Fusion:
    """How to fuse: the method, RRF's `k`, and a weight per list name (default 1); with
    `feedback`, hybrid search fuses lists asked again with pseudo-relevance feedback (a
    second round, `retrieve.feedback`) instead of the first ones."""

    method: str = "zscore"
    k: float = 60.0
    weights: Mapping[str, float] = field(default_factory=dict)
    unit: str = "chunk"  # or "document" (see `fuse`)
    feedback: Feedback | None = None

    def weight(self, name: str) -> float:
        return float(self.weights.get(name, 1.0))


def fuse(
    lists: Sequence[Ranked[K]],
    fusion: Fusion | None = None,
    doc_of: Callable[[K], Hashable] | None = None,
) -> list[tuple[K, float]]:
    """One ranking from several; ties keep the order of first appearance. With `doc_of` (a
    key's document) and `fusion.unit == "document"`, documents are fused, each carried by its
    best chunk (docs/internals.md)."""
    fusion = fusion or Fusion()
    if fusion.method not in METHODS:
        raise ValueError(f"unknown fusion method {fusion.method!r}; choose one of {METHODS}")
    if fusion.unit not in UNITS:
        raise ValueError(f"unknown fusion unit {fusion.unit!r}; choose one of {UNITS}")
    # every key once, in order of first appearance
    scores = dict.fromkeys((key for ranked in lists for key, _ in ranked.items), 0.0)
    by_doc = doc_of is not None and fusion.unit == "document"
    docs: dict[K, Hashable] = {key: doc_of(key) for key in scores} if doc_of and by_doc else {}
    doc_scores = dict.fromkeys(docs.values(), 0.0)
    for ranked in lists:
        weight = fusion.weight(ranked.name)
        if not ranked.items or weight == 0:
            continue
        if by_doc:
            parts, doc_parts, floor = _document_parts(ranked, fusion, docs)
            doc_scores = {d: s + weight * doc_parts.get(d, floor) for d, s in doc_scores.items()}
        else:
            parts, floor = _parts(ranked, fusion)
        scores = {key: s + weight * parts.get(key, floor) for key, s in scores.items()}
    # best first: a stable sort, so equal scores keep their order of first appearance
    if by_doc:
        lead: dict[Hashable, K] = {}
        for key in sorted(scores, key=scores.__getitem__, reverse=True):
            lead.setdefault(docs[key], key)
        for doc, key in lead.items():
            scores[key] = doc_scores[doc]
    return sorted(scores.items(), key=itemgetter(1), reverse=True)


def _parts(ranked: Ranked[K], fusion: Fusion) -> tuple[dict[K, float], float]:
    """Each key's contribution from one list, and the contribution of a key it lacks."""
    if fusion.method == "rrf":
        parts: dict[K, float] = {}
        for rank, (key, _) in enumerate(ranked.items, 1):
            parts.setdefault(key, 1.0 / (fusion.k + rank))
        return parts, 0.0
    values = _best(ranked.items)
    norm, floor = _normaliser(list(values.values()), fusion.method)
    return {key: norm(v) for key, v in values.items()}, floor


def _document_parts(
    ranked: Ranked[K], fusion: Fusion, docs: Mapping[K, Hashable]
) -> tuple[dict[K, float], dict[Hashable, float], float]:
    """One list's contributions normalised over its documents (best chunk each): per key
    (its own score on that scale), per document, and for what the list lacks."""
    if fusion.method == "rrf":
        parts: dict[K, float] = {}
        doc_parts: dict[Hashable, float] = {}
        for key, _ in ranked.items:
            doc = docs[key]
            if doc not in doc_parts:
                doc_parts[doc] = 1.0 / (fusion.k + len(doc_parts) + 1)
            parts.setdefault(key, 1.0 / (fusion.k + len(doc_parts)))
        return parts, doc_parts, 0.0
    values = _best(ranked.items)
    best: dict[Hashable, float] = {}
    for key, value in values.items():
        best[docs[key]] = max(value, best.get(docs[key], -math.inf))
    norm, floor = _normaliser(list(best.values()), fusion.method)
    own = {key: max(floor, norm(v)) for key, v in values.items()}
    return own, {doc: norm(v) for doc, v in best.items()}, floor


def _best(items: Sequence[tuple[K, float]]) -> dict[K, float]:
    """Each key's best score in one list (a key listed twice counts once)."""
    values = dict(items)
    if len(values) == len(items):  # each key once (one collection's list)
        return values
    values = {}
    for key, score in items:
        values[key] = max(score, values.get(key, -math.inf))
    return values


def _normaliser(values: Sequence[float], method: str) -> tuple[Callable[[float], float], float]:
    """min-max (`convex`, absent 0) or z-score (absent = the minimum's z) over `values`."""
    low, high = min(values), max(values)
    if method == "convex":
        span = high - low
        return (lambda v: (v - low) / span if span else 1.0), 0.0
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) or 1.0
    return (lambda v: (v - mean) / std), (low - mean) / std


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


def grouped(
    items: Sequence[T], key_of: Callable[[T], str]
) -> tuple[list[T], tuple[tuple[str, tuple[int, ...]], ...]]:
    """`items` reordered group by group (`group_by`), and each group's value with the
    indexes of its items in that order: how search hits and similar documents are grouped."""
    ordered: list[T] = []
    groups: list[tuple[str, tuple[int, ...]]] = []
    for value, members in group_by(items, key_of):
        groups.append((value, tuple(range(len(ordered), len(ordered) + len(members)))))
        ordered.extend(members)
    return ordered, tuple(groups)


__all__ = [
    "METHODS",
    "UNITS",
    "Fusion",
    "Ranked",
    "collapse_per_doc",
    "fuse",
    "group_by",
    "grouped",
    "sort_by_date",
]
