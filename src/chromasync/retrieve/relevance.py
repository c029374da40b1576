"""The 0-1 relevance scale: how likely a hit is to be relevant, from where its score stands
among the candidates its mode ranked. Pure.

    relevance = 1 / (1 + exp(-(slope * z + intercept)))
    z = (score - mean) / std over the ranking's candidates

The candidates are every chunk the mode ranked: for hybrid, the fused scores of the union of
the two lists (200 chunks each, as `eval` measures); for dense or keyword, that list alone.
A ranking shorter than the depth (a small collection, a narrow filter, a rare word) is padded
up to it: a keyword list with zeros, since a chunk that holds none of the query's words has a
BM25 score of 0, so two matches among many chunks stand out, as they should; any other with
its lowest score, as if the collection held more chunks no better than its worst. On SciFact
and NFCorpus no ranking is shorter than the depth, so the padding leaves the fit alone and
only keeps the scale of a collection of a few dozen chunks from reading low throughout. A
ranking of equal scores has z = 0.

`slope` and `intercept` are a logistic regression of "the hit's document is judged relevant"
on z, over the first 10 hits of SciFact's 809 training claims and NFCorpus's 324 dev
questions, each corpus weighing the same (`benchmarks/fusion.py scale`). Fitted on either
corpus alone, the other corpus's precision of the hits at 0.8 or 0.5 and more moves by at most
5 points (at 0.2, by up to 13: docs/retrieval.md), which is why one scale serves both. A value
reads roughly as a probability: of the default hybrid's hits at 0.8 or more, 91% were
relevant on SciFact and 74% on NFCorpus. Unlike the former scale (a logistic of the fused
z-sum minus 1), it does not saturate: the five best hits of a query no longer all read 0.94
to 1.00.

`weaker_from` sets apart, in the terminal, the pipe and the page alike, the hits whose
relevance is under `WEAKER_SHARE` of the best hit's: less than half as likely to be relevant.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Calibration:
    """A logistic of the standardised score; `pad_zero`: pad a short ranking with zeros up
    to the depth (keyword: BM25 is 0 for a chunk without the query's words), not with its
    lowest score."""

    slope: float
    intercept: float
    pad_zero: bool = False

    def value(self, z: float) -> float:
        x = min(max(self.slope * z + self.intercept, -50.0), 50.0)
        return 1.0 / (1.0 + math.exp(-x))


#: Per mode, and per fusion method for hybrid ("hybrid/rrf"); fitted by
#: `benchmarks/fusion.py scale` (docs/retrieval.md has the figures).
CALIBRATIONS: dict[str, Calibration] = {
    "hybrid/convex": Calibration(0.569, -3.427),  # the default fusion
    "hybrid/zscore": Calibration(0.593, -3.537),
    "hybrid/rrf": Calibration(0.667, -3.377),
    "dense": Calibration(0.905, -4.088),
    "keyword": Calibration(0.517, -2.868, pad_zero=True),
}
#: A hit under this share of the best hit's relevance is a "weaker match".
WEAKER_SHARE = 0.5


def calibration_for(mode: str, method: str = "zscore") -> Calibration:
    key = f"hybrid/{method}" if mode == "hybrid" else mode
    if key not in CALIBRATIONS:
        raise ValueError(f"no relevance calibration for {key!r}")
    return CALIBRATIONS[key]


def standardised(scores: Sequence[float], depth: int = 0, pad_zero: bool = False) -> list[float]:
    """Each score's z among `scores`, padded up to `depth` candidates with zeros
    (`pad_zero`) or with the lowest score."""
    if not scores:
        return []
    pad = max(0, depth - len(scores))
    value = 0.0 if pad_zero else min(scores)
    n = len(scores) + pad
    mean = (sum(scores) + pad * value) / n
    var = (sum((s - mean) ** 2 for s in scores) + pad * (value - mean) ** 2) / n
    std = math.sqrt(var)
    if std <= 1e-12:
        return [0.0] * len(scores)
    return [(s - mean) / std for s in scores]


def relevance_scale(
    scores: Sequence[float], mode: str, method: str = "zscore", depth: int = 0
) -> list[float]:
    """The relevance of each candidate of one ranking (its scores, any order), rounded to 4
    places; `depth`: how many candidates each list was asked for."""
    calibration = calibration_for(mode, method)
    z = standardised(scores, depth, calibration.pad_zero)
    return [round(calibration.value(v), 4) for v in z]


def weaker_index(values: Sequence[float | None]) -> int | None:
    """The index of the first value under `WEAKER_SHARE` of the first's; None if none is."""
    if not values or values[0] is None:
        return None
    floor = values[0] * WEAKER_SHARE
    for index, value in enumerate(values):
        if value is not None and value < floor:
            return index
    return None


__all__ = [
    "CALIBRATIONS",
    "WEAKER_SHARE",
    "Calibration",
    "calibration_for",
    "relevance_scale",
    "standardised",
    "weaker_index",
]
