"""The 0-1 relevance scale, the min_score floor, and what --explain and the pipe print."""

from __future__ import annotations

import math

import pytest

from chromasync import api
from chromasync.errors import ConfigError
from chromasync.records import Hit
from chromasync.retrieve.filters import Filters
from chromasync.retrieve.fuse import Fusion
from chromasync.retrieve.results import (
    WEAKER_LINE,
    Gathered,
    SearchRequest,
    SearchResult,
    explain_text,
    plain_lines,
    present,
    rank_hits,
    relevance,
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
    ("score", "best", "mode", "fusion", "expected"),
    [
        (1.0, 5.0, "hybrid", Fusion("zscore"), 0.5),  # the midpoint, whatever the best
        (0.0, 0.0, "hybrid", Fusion("zscore"), 0.2689),
        (5.0, 5.0, "hybrid", Fusion("zscore"), 0.982),
        (-400.0, 5.0, "hybrid", Fusion("zscore"), 0.0),  # no overflow
        (1.0, 2.0, "hybrid", Fusion("convex"), 0.5),
        (0.4, 2.0, "hybrid", Fusion("convex", weights={"dense": 0.2, "keyword": 0.8}), 0.4),
        (6.0, 12.0, "keyword", Fusion(), 0.5),
        (12.0, 12.0, "keyword", Fusion(), 1.0),
        (0.3, 0.6, "dense", Fusion(), 0.5),
        (-0.2, 0.6, "dense", Fusion(), 0.0),
        (0.5, 0.0, "dense", Fusion(), 0.0),
        (1 / 61, 2 / 61, "hybrid", Fusion("rrf"), 0.5),
    ],
)
def test_relevance_table(
    score: float, best: float, mode: str, fusion: Fusion, expected: float
) -> None:
    assert relevance(score, best, mode, fusion) == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "dense"])
def test_every_hit_gets_a_relevance_in_order(mode: str) -> None:
    hits = rank_hits(GATHERED, mode)
    values = [h.relevance for h in hits]
    assert all(v is not None and 0.0 <= v <= 1.0 for v in values)
    assert values == sorted(values, reverse=True)  # type: ignore[type-var]
    if mode != "hybrid":
        assert values[0] == 1.0


def test_hybrid_hits_carry_each_lists_raw_score() -> None:
    by_id = {h.id: h for h in rank_hits(GATHERED, "hybrid")}
    assert dict(by_id["a"].scores) == {"dense": 0.9, "keyword": 3.0}
    assert dict(by_id["d"].scores) == {"keyword": 6.0}
    assert by_id["a"].relevance == pytest.approx(1 / (1 + math.exp(1 - by_id["a"].score)), 1e-3)
    text = explain_text(by_id["d"], "hybrid")
    assert "keyword #2 6" in text and "dense: not in its top candidates" in text
    assert f"hybrid score {by_id['d'].score:.4g}" in text and "relevance" in text


def test_min_score_drops_hits_before_the_top_k() -> None:
    hits = rank_hits(GATHERED, "keyword")  # c 1.0, d 0.5, a 0.25
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
    hits = tuple(rank_hits(GATHERED, "keyword"))  # 1.0, 0.5, 0.25
    assert weaker_from(hits) == 2
    result = SearchResult("q", "keyword", ("c",), Filters(), hits)
    lines = plain_lines(result).splitlines()
    third = next(i for i, line in enumerate(lines) if line.startswith("3. "))
    assert lines.index(WEAKER_LINE) == third - 1
    assert lines[0].startswith("1. c.md:1-2 1.00 (score 12.000; dense #3, keyword #1)")
    assert weaker_from(hits[:2]) is None and weaker_from(()) is None


def test_relevance_survives_json() -> None:
    hit = rank_hits(GATHERED, "hybrid")[0]
    again = Hit.from_json(hit.as_json())
    assert again.relevance == hit.relevance and dict(again.scores) == dict(hit.scores)
