"""Retrieval evaluation: queries with judged documents, and the usual metrics. Pure.

A queries file has one JSON object a line: `{"query": "...", "relevant": ["path or id", ...]}`
(an `id` is optional). A hit's document matches a judged entry by its path, by its file stem
(`notes/31715818.md` matches `31715818`) or by its `document_id`. Relevance is binary; each
judged entry counts once, and one document satisfies one entry.

Metrics per query, averaged over queries: nDCG@k, recall@k, recall@100 and MRR (reciprocal
rank of the first relevant document within the retrieved depth, 100 documents).
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
METRICS = ("ndcg", "recall", "recall@100", "mrr")


@dataclass(frozen=True, slots=True)
class EvalQuery:
    id: str
    query: str
    relevant: tuple[str, ...]


def parse_queries(lines: Iterable[str], origin: str = "queries") -> list[EvalQuery]:
    """Queries from JSON lines; blank lines are skipped, bad ones name their line."""
    out: list[EvalQuery] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{origin}:{number}: not JSON ({exc})") from exc
        if not isinstance(row, dict) or not isinstance(row.get("query"), str):
            raise ConfigError(f'{origin}:{number}: expected {{"query": ..., "relevant": [...]}}')
        relevant = row.get("relevant")
        if isinstance(relevant, str):
            relevant = [relevant]
        if not isinstance(relevant, list) or not relevant:
            raise ConfigError(f"{origin}:{number}: 'relevant' must be a non-empty list")
        out.append(
            EvalQuery(str(row.get("id", number)), row["query"], tuple(str(r) for r in relevant))
        )
    if not out:
        raise ConfigError(f"{origin}: no queries")
    return out


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


def documents(hits: Sequence[Hit]) -> list[Hit]:
    """The best hit of each document, in rank order."""
    seen: set[tuple[str, str, str]] = set()
    out: list[Hit] = []
    for hit in hits:
        key = (hit.collection, hit.source, hit.path)
        if key not in seen:
            seen.add(key)
            out.append(hit)
    return out


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


def query_metrics(flags: Sequence[bool], n_relevant: int, k: int = 10) -> dict[str, float]:
    """nDCG@k, recall@k, recall@100 and MRR for one ranked list of relevance flags."""
    dcg = sum(1.0 / math.log2(i + 2) for i, f in enumerate(flags[:k]) if f)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(n_relevant, k)))
    first = next((i for i, f in enumerate(flags[:DEPTH]) if f), None)
    return {
        "ndcg": dcg / ideal if ideal else 0.0,
        "recall": sum(flags[:k]) / n_relevant if n_relevant else 0.0,
        "recall@100": sum(flags[:DEPTH]) / n_relevant if n_relevant else 0.0,
        "mrr": 1.0 / (first + 1) if first is not None else 0.0,
    }


def mean_metrics(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    if not rows:
        return {m: 0.0 for m in METRICS}
    return {m: sum(r[m] for r in rows) / len(rows) for m in METRICS}


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (`share` in 0..1) of `values`."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = max(0, math.ceil(share * len(ordered)) - 1)
    return ordered[index]


__all__ = [
    "DEPTH",
    "METRICS",
    "EvalQuery",
    "doc_names",
    "documents",
    "judge",
    "mean_metrics",
    "parse_queries",
    "percentile",
    "query_metrics",
]
