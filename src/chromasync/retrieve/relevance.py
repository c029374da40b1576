"""The 0-1 relevance scale: how likely a hit is to be relevant, from where its score stands
among the candidates its mode ranked. Pure.

Design notes: docs/internals.md, `retrieve/relevance.py`.
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
    scores: Sequence[float],
    mode: str,
    method: str = "zscore",
    depth: int = 0,
    count: int | None = None,
) -> list[float]:
    """The relevance of each candidate of one ranking (its scores, any order), rounded to 4
    places; `depth`: how many candidates each list was asked for; `count`: only the first
    `count` candidates' (all of them still set the scale)."""
    calibration = calibration_for(mode, method)
    z = standardised(scores, depth, calibration.pad_zero)
    return [round(calibration.value(v), 4) for v in z[:count]]


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
