"""Fusion and ordering: parametrized tables over small ranked lists."""

from __future__ import annotations

import pytest

from chromasync.retrieve.fuse import (
    Fusion,
    Ranked,
    collapse_per_doc,
    fuse,
    group_by,
    sort_by_date,
)

DENSE = Ranked("dense", (("a", 0.9), ("b", 0.8), ("c", 0.5)))
KEYWORD = Ranked("keyword", (("c", 12.0), ("d", 6.0), ("a", 3.0)))


def _keys(result: list[tuple[str, float]]) -> list[str]:
    return [k for k, _ in result]


@pytest.mark.parametrize(
    ("fusion", "expected"),
    [
        # a: 1/61 + 1/63, c: 1/63 + 1/61 (tie, a first seen), b: 1/62, d: 1/62.
        (Fusion("rrf", k=60), ["a", "c", "b", "d"]),
        (Fusion("rrf", k=60, weights={"keyword": 2.0}), ["c", "a", "d", "b"]),
        (Fusion("rrf", k=60, weights={"keyword": 0.0}), ["a", "b", "c", "d"]),
        # min-max: dense a 1, b .75, c 0; keyword c 1, d 1/3, a 0.
        (Fusion("convex"), ["a", "c", "b", "d"]),
        (Fusion("convex", weights={"dense": 0.2, "keyword": 0.8}), ["c", "d", "a", "b"]),
        (Fusion("zscore"), ["c", "a", "b", "d"]),
    ],
)
def test_fuse_orders(fusion: Fusion, expected: list[str]) -> None:
    assert _keys(fuse([DENSE, KEYWORD], fusion)) == expected


def test_rrf_scores_are_sums_of_reciprocal_ranks() -> None:
    scores = dict(fuse([DENSE, KEYWORD], Fusion("rrf", k=60)))
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["d"] == pytest.approx(1 / 62)


@pytest.mark.parametrize("method", ["rrf", "convex", "zscore"])
def test_fuse_handles_empty_and_single_lists(method: str) -> None:
    fusion = Fusion(method)
    assert fuse([], fusion) == []
    assert fuse([Ranked("dense", ()), Ranked("keyword", ())], fusion) == []
    only = fuse([DENSE, Ranked("keyword", ())], fusion)
    assert _keys(only) == ["a", "b", "c"]


@pytest.mark.parametrize("method", ["convex", "zscore"])
def test_constant_scores_do_not_divide_by_zero(method: str) -> None:
    flat = Ranked("dense", (("a", 1.0), ("b", 1.0)))
    assert _keys(fuse([flat], Fusion(method))) == ["a", "b"]


def test_duplicate_keys_in_one_list_count_once_at_their_best_rank() -> None:
    twice = Ranked("dense", (("a", 0.9), ("a", 0.1), ("b", 0.5)))
    scores = dict(fuse([twice], Fusion("rrf", k=60)))
    assert scores == {"a": pytest.approx(1 / 61), "b": pytest.approx(1 / 63)}


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fusion"):
        fuse([DENSE], Fusion("borda"))


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], []),
        ([("x", 1), ("y", 1), ("x", 2), ("x", 3)], [(("x", 1), 2), (("y", 1), 0)]),
        ([("x", 1), ("y", 2)], [(("x", 1), 0), (("y", 2), 0)]),
    ],
)
def test_collapse_per_doc(items: list[tuple[str, int]], expected: list[object]) -> None:
    assert collapse_per_doc(items, lambda item: item[0]) == expected


@pytest.mark.parametrize(
    ("dates", "expected"),
    [
        ({"a": 1.0, "b": 3.0, "c": 2.0}, ["b", "c", "a"]),
        ({"a": None, "b": 3.0, "c": None}, ["b", "a", "c"]),
        ({"a": 2.0, "b": 2.0, "c": 5.0}, ["c", "a", "b"]),
    ],
)
def test_sort_by_date_newest_first_undated_last(
    dates: dict[str, float | None], expected: list[str]
) -> None:
    assert sort_by_date(["a", "b", "c"], dates.get) == expected


def test_group_by_keeps_rank_order() -> None:
    items = [("n1", "notes"), ("d1", "docs"), ("n2", "notes"), ("x", "code")]
    groups = group_by(items, lambda item: item[1])
    assert [(g, [i[0] for i in members]) for g, members in groups] == [
        ("notes", ["n1", "n2"]),
        ("docs", ["d1"]),
        ("code", ["x"]),
    ]
