"""Similar documents: which indexed documents are nearest to a given file. Pure.

Design notes: docs/internals.md, `retrieve/similar.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..records import Hit

DEFAULT_THRESHOLD = 0.95


@dataclass(frozen=True, slots=True)
class SimilarDoc:
    collection: str
    source: str
    path: str
    score: float
    duplicate: bool
    exact: bool
    best: Hit  # the document's chunk nearest to one of the file's chunks
    matched_chunks: int  # how many of the file's chunks found this document

    def as_json(self) -> dict[str, object]:
        return {
            "collection": self.collection,
            "source": self.source,
            "path": self.path,
            "score": self.score,
            "duplicate": self.duplicate,
            "exact": self.exact,
            "matched_chunks": self.matched_chunks,
            "best_chunk": {
                "id": self.best.id,
                "heading": self.best.heading,
                "start_line": self.best.start_line,
                "end_line": self.best.end_line,
                "score": self.best.score,
            },
        }


def aggregate(
    weights: Sequence[float],
    neighbours: Sequence[Sequence[Hit]],
    *,
    exclude: Callable[[Hit], bool] = lambda hit: False,
    exact: Sequence[Hit] = (),
    threshold: float = DEFAULT_THRESHOLD,
    k: int = 10,
) -> list[SimilarDoc]:
    """Documents ranked by their weighted best-chunk similarity to the file's chunks."""
    total = sum(weights) or 1.0
    best: dict[tuple[str, str, str], list[float]] = {}
    top: dict[tuple[str, str, str], Hit] = {}
    for index, hits in enumerate(neighbours):
        for hit in hits:
            if exclude(hit):
                continue
            key = (hit.collection, hit.source, hit.path)
            scores = best.setdefault(key, [0.0] * len(neighbours))
            scores[index] = max(scores[index], hit.score)
            if key not in top or hit.score > top[key].score:
                top[key] = hit
    exact_keys = set()
    for hit in exact:
        if exclude(hit):
            continue
        key = (hit.collection, hit.source, hit.path)
        exact_keys.add(key)
        top.setdefault(key, hit)
        best.setdefault(key, [1.0] * len(neighbours))
    docs = []
    for key, scores in best.items():
        score = (
            1.0
            if key in exact_keys
            else sum(w * s for w, s in zip(weights, scores, strict=True)) / total
        )
        docs.append(
            SimilarDoc(
                collection=key[0],
                source=key[1],
                path=key[2],
                score=score,
                duplicate=score >= threshold,
                exact=key in exact_keys,
                best=top[key],
                matched_chunks=sum(1 for s in scores if s > 0),
            )
        )
    docs.sort(key=lambda d: (-d.score, d.collection, d.source, d.path))
    return docs[:k]


def nearest_sources(docs: Sequence[SimilarDoc]) -> list[tuple[str, float, int]]:
    """(source, best score, documents) among the similar documents, best source first."""
    seen: dict[str, tuple[float, int]] = {}
    for doc in docs:
        score, count = seen.get(doc.source, (0.0, 0))
        seen[doc.source] = (max(score, doc.score), count + 1)
    return sorted(((s, v[0], v[1]) for s, v in seen.items()), key=lambda t: (-t[1], -t[2], t[0]))


__all__ = ["DEFAULT_THRESHOLD", "SimilarDoc", "aggregate", "nearest_sources"]
