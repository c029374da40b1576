"""Retrieval evaluation: queries with judged documents, and the usual metrics. Pure.

Design notes: docs/internals.md, `retrieve/evaluate.py`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..errors import ConfigError
from ..records import Hit

DEPTH = 100
METRICS = ("ndcg", "ndcg_graded", "recall", "recall@100", "mrr")
#: The largest grade a queries file may give (graded judgements use small integers).
MAX_GRADE = 100.0


@dataclass(frozen=True, slots=True)
class EvalQuery:
    id: str
    query: str
    relevant: tuple[str, ...]
    #: (judged entry, gain) for graded judgements; empty when relevance is binary.
    grades: tuple[tuple[str, float], ...] = ()

    @property
    def graded(self) -> bool:
        return bool(self.grades)

    def gains(self) -> dict[str, float]:
        """Each judged entry's gain: its grade, 1 for an entry of `relevant` without one."""
        out = {entry: 1.0 for entry in self.relevant}
        out.update(self.grades)
        return out


def parse_queries(lines: Iterable[str], origin: str = "queries") -> list[EvalQuery]:
    """Queries from JSON lines; blank lines are skipped, bad ones name their line."""
    out: list[EvalQuery] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:  # (an int of 5,000 digits; nested deep)
            raise ConfigError(f"{origin}:{number}: not JSON ({exc})") from None
        if not isinstance(row, dict) or not isinstance(row.get("query"), str):
            raise ConfigError(f'{origin}:{number}: expected {{"query": ..., "relevant": [...]}}')
        if not row["query"].strip():
            raise ConfigError(f"{origin}:{number}: the query is empty")
        relevant = row.get("relevant")
        if isinstance(relevant, str):
            relevant = [relevant]
        if not isinstance(relevant, list) or not relevant:
            raise ConfigError(f"{origin}:{number}: 'relevant' must be a non-empty list")
        grades = _grades(row.get("grades"), f"{origin}:{number}")
        out.append(
            EvalQuery(
                str(row.get("id", number)),
                row["query"],
                tuple(str(r) for r in relevant),
                grades,
            )
        )
    if not out:
        raise ConfigError(f"{origin}: no queries")
    return out


def _grades(value: object, where: str) -> tuple[tuple[str, float], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: 'grades' must be an object {{entry: grade}}")
    out = []
    for entry, grade in value.items():
        if isinstance(grade, bool) or not isinstance(grade, int | float):
            raise ConfigError(f"{where}: grade of {entry!r} must be a number, not {grade!r}")
        if not 0 <= grade <= MAX_GRADE:
            raise ConfigError(f"{where}: grade of {entry!r} must be 0 to {MAX_GRADE:g}")
        out.append((str(entry), float(grade)))
    return tuple(sorted(out))


def doc_names(hit: Hit) -> set[str]:
    """The names a judged entry may use for the hit's document."""
    path = hit.path
    names = {path, PurePosixPath(path).stem, PurePosixPath(path).name}
    document_id = hit.metadata.get("document_id")
    if document_id:
        names.add(str(document_id))
    if hit.source:
        names.add(f"{hit.source}/{path}")
    return names


def judge(ranked: Sequence[Hit], relevant: Sequence[str]) -> list[bool]:
    """Per ranked document: does it match a judged entry not matched higher up?"""
    left = set(relevant)
    flags: list[bool] = []
    for hit in ranked:
        found = sorted(left & doc_names(hit))
        flags.append(bool(found))
        if found:
            left.discard(found[0])  # one document satisfies one judged entry
    return flags


def judge_gains(ranked: Sequence[Hit], gains: Mapping[str, float]) -> list[float]:
    """Per ranked document: the gain of the judged entry it matches first (0 for none); an
    entry counts once, and the highest-gain entry a document matches is the one it takes."""
    left = dict(gains)
    out: list[float] = []
    for hit in ranked:
        found = sorted(set(left) & doc_names(hit), key=lambda e: (-left[e], e))
        out.append(left.pop(found[0]) if found else 0.0)
    return out


def ndcg(gains: Sequence[float], judged: Iterable[float], k: int = 10) -> float:
    """nDCG@k with linear gains: the DCG of `gains` (ranked) over the best order of `judged`."""
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]) if g > 0)
    best = sorted((g for g in judged if g > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(best))
    return dcg / ideal if ideal else 0.0


def query_metrics(
    flags: Sequence[bool],
    n_relevant: int,
    k: int = 10,
    gains: Sequence[float] | None = None,
    judged: Iterable[float] | None = None,
) -> dict[str, float]:
    """nDCG@k, graded nDCG@k, recall@k, recall@100 and MRR for one ranked list of relevance
    flags; `gains` (per ranked document) and `judged` (every judged entry's gain) make the
    graded figure, which is the binary one without them."""
    binary = ndcg([1.0 if f else 0.0 for f in flags], [1.0] * n_relevant, k)
    graded = binary if gains is None or judged is None else ndcg(gains, judged, k)
    first = next((i for i, f in enumerate(flags[:DEPTH]) if f), None)
    return {
        "ndcg": binary,
        "ndcg_graded": graded,
        "recall": sum(flags[:k]) / n_relevant if n_relevant else 0.0,
        "recall@100": sum(flags[:DEPTH]) / n_relevant if n_relevant else 0.0,
        "mrr": 1.0 / (first + 1) if first is not None else 0.0,
    }


def mean_metrics(
    rows: Sequence[Mapping[str, float]], metrics: Sequence[str] = METRICS
) -> dict[str, float]:
    if not rows:
        return {m: 0.0 for m in metrics}
    return {m: sum(r[m] for r in rows) / len(rows) for m in metrics}


def score_query(ranked: Sequence[Hit], item: EvalQuery, k: int = 10) -> dict[str, float]:
    """The metrics of one query's ranked documents (one hit per document, best first)."""
    flags = judge(ranked[:DEPTH], item.relevant)
    gains = judge_gains(ranked[:DEPTH], item.gains()) if item.graded else None
    judged = item.gains().values() if item.graded else None
    return query_metrics(flags, len(set(item.relevant)), k, gains, judged)


def versus(
    rows: Sequence[Mapping[str, float]], other: Sequence[Mapping[str, float]], metric: str = "ndcg"
) -> dict[str, int]:
    """Query by query (the same queries, in order): how often `rows` beats `other` on
    `metric` (wins), loses to it (losses) or ties (within 1e-9)."""
    if len(rows) != len(other):
        raise ValueError("versus needs the same queries on both sides")
    out = {"wins": 0, "losses": 0, "ties": 0}
    for mine, theirs in zip(rows, other, strict=True):
        gap = mine[metric] - theirs[metric]
        out["wins" if gap > 1e-9 else "losses" if gap < -1e-9 else "ties"] += 1
    return out


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (`share` in 0..1) of `values`."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = max(0, math.ceil(share * len(ordered)) - 1)
    return ordered[index]


__all__ = [
    "DEPTH",
    "MAX_GRADE",
    "METRICS",
    "EvalQuery",
    "doc_names",
    "judge",
    "judge_gains",
    "mean_metrics",
    "ndcg",
    "parse_queries",
    "percentile",
    "query_metrics",
    "score_query",
    "versus",
]
