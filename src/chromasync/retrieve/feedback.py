"""Pseudo-relevance feedback for hybrid search: pure functions, no I/O.

Design notes: docs/internals.md, `retrieve/feedback.py`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .bm25 import STOP_WORDS, query_terms

_WORD = re.compile(r"[^\W_]+")
#: At most this many words of one feedback text are read (a chunk is far shorter).
MAX_WORDS = 4096
#: How many of the likeliest words have their document frequency looked up (one keyword
#: index count each).
PRESELECT = 30


@dataclass(frozen=True, slots=True)
class Feedback:
    """How the second round is made: documents fed back, Rocchio's weight of their mean
    vector, expansion words, and how many times the query's own words count."""

    documents: int = 3
    dense_weight: float = 0.5
    terms: int = 5
    query_repeat: int = 2


def feedback_weights(scores: Sequence[float]) -> list[float]:
    """Each fed-back document's weight from its first-round score (best first): min-max
    over the documents fed back, plus 0.1 so that the last still counts, summing to 1."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    raw = [((s - low) / (high - low) if high > low else 1.0) + 0.1 for s in scores]
    total = sum(raw)
    return [r / total for r in raw]


def moved_vector(
    query: Sequence[float], vectors: Sequence[Sequence[float]], weight: float
) -> list[float]:
    """Rocchio: `query` + `weight` * mean(`vectors`), unit length (the query when none)."""
    if not vectors:
        return list(query)
    mean = [sum(column) / len(vectors) for column in zip(*vectors, strict=True)]
    moved = [q + weight * v for q, v in zip(query, mean, strict=True)]
    norm = math.sqrt(sum(x * x for x in moved)) or 1.0
    return [x / norm for x in moved]


def expansion_terms(
    query: str,
    documents: Sequence[tuple[float, Sequence[str]]],
    count: int,
    document_counts: Callable[[Sequence[str]], Mapping[str, int]],
    total: int,
) -> list[str]:
    """The `count` words most likely under the fed-back documents and rare in the index.

    `documents`: (weight, its chunks' texts) each. A word's likelihood is the sum over the
    documents of weight * its share of the document's words; the `PRESELECT` likeliest are
    then weighed by their inverse document frequency, ln(`total` / df), where
    `document_counts` gives df (the index's count of chunks holding the word); a word in
    fewer than 2 chunks (only where it was found) is left out. Stop words, words under 3
    letters, numbers and the query's own words are never chosen. Ties keep the order in
    which the words first appear."""
    own = set(query_terms(query))
    likely: dict[str, float] = {}
    for weight, texts in documents:
        words = [w.lower() for text in texts for w in _WORD.findall(text)[:MAX_WORDS]]
        if not words:
            continue
        for word, n in Counter(words).items():
            if len(word) < 3 or word.isdigit() or word in STOP_WORDS or word in own:
                continue
            likely[word] = likely.get(word, 0.0) + weight * n / len(words)
    chosen = sorted(likely, key=lambda w: -likely[w])[:PRESELECT]
    counts = document_counts(chosen) if chosen else {}
    score = {
        w: likely[w] * math.log(max(total, 1) / counts[w]) for w in chosen if counts.get(w, 0) >= 2
    }
    return sorted(score, key=lambda w: -score[w])[:count]


def weighted_terms(query: str, expansion: Sequence[str], repeat: int) -> list[str]:
    """The second round's keyword query: the query's words `repeat` times, then the
    expansion words once (no query words: nothing, as for the first round)."""
    own = query_terms(query)
    if not own:
        return []
    return [*(own * repeat), *expansion]


__all__ = ["Feedback", "expansion_terms", "feedback_weights", "moved_vector", "weighted_terms"]
