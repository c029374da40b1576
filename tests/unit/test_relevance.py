"""The 0-1 relevance scale, the min_score floor, and what --explain and the pipe print."""

from __future__ import annotations

import math

import pytest

from chromasync import api
from chromasync.errors import ConfigError
from chromasync.records import Hit
from chromasync.retrieve.filters import Filters
from chromasync.retrieve.relevance import (
    CALIBRATIONS,
    Calibration,
    calibration_for,
    relevance_scale,
    standardised,
    weaker_index,
)
from chromasync.retrieve.results import (
    WEAKER_LINE,
    Gathered,
    SearchRequest,
    SearchResult,
    explain_text,
    plain_lines,
    present,
    rank_hits,
    weaker_from,
)


def _hit(rid: str, score: float, path: str = "") -> Hit:
    return Hit(rid, path or f"{rid}.md", "notes", "", 1, 2, score, f"text {rid}", "c")


GATHERED = Gathered(
    dense=(_hit("a", 0.9), _hit("b", 0.8), _hit("c", 0.5), _hit("e", 0.1)),
    keyword=(_hit("c", 12.0), _hit("d", 6.0), _hit("a", 3.0)),
    collections=("c",),
)


@pytest.mark.parametrize(
    ("scores", "depth", "pad", "expected"),
    [
        ([3.0, 1.0], 0, False, [1.0, -1.0]),
        ([2.0, 2.0, 2.0], 0, False, [0.0, 0.0, 0.0]),  # equal scores: no spread, z = 0
        ([5.0], 0, False, [0.0]),  # one candidate
        ([], 10, True, []),
        ([2.0], 4, True, [math.sqrt(3)]),  # [2, 0, 0, 0]: mean 0.5, std sqrt(0.75)
        ([2.0], 4, False, [0.0]),  # padded with its lowest score: no spread
        ([3.0, 1.0], 4, False, [math.sqrt(3), -1 / math.sqrt(3)]),  # [3, 1, 1, 1]
        ([3.0, 1.0], 1, True, [1.0, -1.0]),  # already deeper than the depth
    ],
)
def test_standardised(scores: list[float], depth: int, pad: bool, expected: list[float]) -> None:
    assert standardised(scores, depth, pad) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("calibration", "z", "expected"),
    [
        (Calibration(1.0, 0.0), 0.0, 0.5),
        (Calibration(0.5, -2.0), 4.0, 0.5),  # the midpoint at z = -intercept / slope
        (Calibration(0.5, -2.0), 8.0, 1 / (1 + math.exp(-2.0))),
        (Calibration(0.5, -2.0), -1e9, 0.0),  # no overflow
        (Calibration(0.5, -2.0), 1e9, 1.0),
    ],
)
def test_calibration_is_a_logistic_of_z(
    calibration: Calibration, z: float, expected: float
) -> None:
    assert calibration.value(z) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("mode", "method", "key"),
    [
        ("hybrid", "convex", "hybrid/convex"),
        ("hybrid", "zscore", "hybrid/zscore"),
        ("hybrid", "rrf", "hybrid/rrf"),
        ("dense", "convex", "dense"),
        ("keyword", "rrf", "keyword"),
    ],
)
def test_each_mode_and_fusion_has_its_calibration(mode: str, method: str, key: str) -> None:
    assert calibration_for(mode, method) is CALIBRATIONS[key]
    assert CALIBRATIONS[key].slope > 0 and CALIBRATIONS[key].intercept < 0
    with pytest.raises(ValueError, match="no relevance calibration"):
        calibration_for("hybrid", "borda")


def test_the_scale_separates_the_top_hits() -> None:
    # One clear match, a few good ones, and the crowd of 200 candidates.
    scores = [1.0, 0.8, 0.78, 0.75, 0.7] + [0.3 - i * 0.001 for i in range(195)]
    values = relevance_scale(scores, "hybrid", "convex")
    assert values == sorted(values, reverse=True)
    assert values[0] - values[4] > 0.2 and values[0] > 0.5 and values[-1] < 0.05
    assert weaker_index(values) is not None


def test_keyword_matches_stand_out_among_chunks_without_the_words() -> None:
    # Two chunks hold the query's words: padded with the zeros of the other 198 candidates
    # (BM25 is 0 without a query word), the best reads high, not 0.05 as z over two would.
    values = relevance_scale([8.0, 2.0], "keyword", depth=200)
    assert values[0] > 0.9 > values[1]
    assert relevance_scale([8.0, 2.0], "keyword") == relevance_scale([8.0, 2.0], "keyword", depth=2)


def test_a_small_collection_is_not_read_low_throughout() -> None:
    # Five candidates in all (a collection of five chunks): padded with the lowest score up
    # to the depth, the clear best reads high; standardised among five it would read 0.07.
    values = relevance_scale([1.0, 0.8, 0.2, 0.1, 0.0], "hybrid", "convex", depth=200)
    assert values[0] > 0.9 and values[2] < 0.5 * values[0]
    assert relevance_scale([1.0, 0.8, 0.2, 0.1, 0.0], "hybrid", "convex")[0] < 0.1


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([0.9, 0.6, 0.44, 0.2], 2),  # under half of 0.9
        ([0.9, 0.45], None),  # exactly half is not under it
        ([0.2, 0.15, 0.09], 2),
        ([], None),
        ([None, 0.1], None),
        ([0.8, None, 0.3], 2),
    ],
)
def test_weaker_index(values: list[float | None], expected: int | None) -> None:
    assert weaker_index(values) == expected


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "dense"])
def test_every_hit_gets_a_relevance_in_order(mode: str) -> None:
    hits = rank_hits(GATHERED, mode)
    values = [h.relevance for h in hits]
    assert all(v is not None and 0.0 <= v <= 1.0 for v in values)
    assert values == sorted(values, reverse=True)  # type: ignore[type-var]
    assert len(set(values)) == len(values)  # the scale tells every candidate apart here


def test_hybrid_hits_carry_each_lists_raw_score() -> None:
    by_id = {h.id: h for h in rank_hits(GATHERED, "hybrid")}
    assert dict(by_id["a"].scores) == {"dense": 0.9, "keyword": 3.0}
    assert dict(by_id["d"].scores) == {"keyword": 6.0}
    hits = rank_hits(GATHERED, "hybrid")
    expected = relevance_scale([h.score for h in hits], "hybrid", "convex", 200)
    assert [h.relevance for h in hits] == expected
    text = explain_text(by_id["d"], "hybrid")
    assert "keyword #2 6" in text and "dense: not in its top candidates" in text
    assert f"hybrid score {by_id['d'].score:.4g}" in text and "relevance" in text


def test_min_score_drops_hits_before_the_top_k() -> None:
    hits = rank_hits(GATHERED, "keyword")  # c 0.97, d 0.57, a 0.21
    assert [h.relevance for h in hits] == relevance_scale([12.0, 6.0, 3.0], "keyword", depth=200)
    request = SearchRequest("q", mode="keyword", k=10, min_score=0.5)
    result = present(request, GATHERED, hits, False)
    assert [h.id for h in result.hits] == ["c", "d"]
    everything = present(SearchRequest("q", mode="keyword"), GATHERED, hits, False)
    assert [h.id for h in everything.hits] == ["c", "d", "a"]


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_min_score_outside_the_scale_is_refused(bad: float) -> None:
    with pytest.raises(ConfigError, match="between 0 and 1"):
        api.build_request(api.SearchArgs("q", min_score=bad), ("date",))
    request = api.build_request(api.SearchArgs("q", min_score=0.25), ("date",))
    assert request.min_score == 0.25


def test_weaker_matches_are_set_apart_in_the_pipe() -> None:
    hits = tuple(rank_hits(GATHERED, "keyword"))  # 0.97, 0.57, 0.21
    assert weaker_from(hits) == 2
    result = SearchResult("q", "keyword", ("c",), Filters(), hits)
    lines = plain_lines(result).splitlines()
    third = next(i for i, line in enumerate(lines) if line.startswith("3. "))
    assert lines.index(WEAKER_LINE) == third - 1
    assert lines[0].startswith("1. c.md:1-2 0.97 (score 12.000; dense #3, keyword #1)")
    assert weaker_from(hits[:2]) is None and weaker_from(()) is None


def test_relevance_survives_json() -> None:
    hit = rank_hits(GATHERED, "hybrid")[0]
    again = Hit.from_json(hit.as_json())
    assert again.relevance == hit.relevance and dict(again.scores) == dict(hit.scores)
