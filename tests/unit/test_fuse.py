"""Fusion and ordering: parametrized tables over small ranked lists."""

from __future__ import annotations

import hashlib

import pytest

from chromasync.retrieve.fuse import (
    Fusion,
    Ranked,
    collapse_per_doc,
    fuse,
    group_by,
    sort_by_date,
)

from ..doubling import assert_linear

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


# Chunks "x1" (document x) and so on: x's best dense chunk is x1, its best keyword chunk x2.
CHUNK_DENSE = Ranked("dense", (("x1", 0.9), ("y1", 0.8), ("z1", 0.6), ("x2", 0.1)))
CHUNK_KEYWORD = Ranked("keyword", (("x2", 10.0), ("y1", 9.0), ("z2", 4.0), ("x1", 1.0)))


def _doc(key: str) -> str:
    return key[0]


def _reduced(ranked: Ranked[str]) -> Ranked[str]:
    seen: dict[str, float] = {}
    for key, score in ranked.items:
        seen.setdefault(_doc(key), score)
    return Ranked(ranked.name, tuple(seen.items()))


@pytest.mark.parametrize(
    "fusion",
    [
        Fusion("rrf", k=60, unit="document"),
        Fusion("rrf", k=5, weights={"keyword": 2.0}, unit="document"),
        Fusion("convex", unit="document"),
        Fusion("convex", weights={"dense": 0.3, "keyword": 0.7}, unit="document"),
        Fusion("zscore", unit="document"),
        Fusion("zscore", weights={"dense": 0.6, "keyword": 0.4}, unit="document"),
    ],
)
def test_document_fusion_ranks_documents_as_their_reduced_lists(fusion: Fusion) -> None:
    chunks = fuse([CHUNK_DENSE, CHUNK_KEYWORD], fusion, _doc)
    first: dict[str, float] = {}
    for key, score in chunks:
        first.setdefault(_doc(key), score)
    reduced = fuse([_reduced(CHUNK_DENSE), _reduced(CHUNK_KEYWORD)], fusion)
    assert list(first) == _keys(reduced)
    assert list(first.values()) == pytest.approx([s for _, s in reduced])
    assert sorted(_keys(chunks)) == ["x1", "x2", "y1", "z1", "z2"]
    # a document's other chunks never outrank its lead
    lead = {_doc(k): s for k, s in reversed(chunks)}
    assert all(score <= lead[_doc(key)] + 1e-12 for key, score in chunks)


@pytest.mark.parametrize(
    ("fusion", "expected"),
    [
        # x: best dense and best keyword chunks in different passages; chunk-level fusion
        # splits its evidence (x1 and x2 tie, 1/61 + 1/64, under y1's 2/62); document-level
        # fusion adds it up (x: 2/61).
        (Fusion("rrf", k=60), ["y1", "x1", "x2", "z1", "z2"]),
        (Fusion("rrf", k=60, unit="document"), ["x1", "x2", "y1", "z1", "z2"]),
    ],
)
def test_document_fusion_adds_up_a_documents_evidence(fusion: Fusion, expected: list[str]) -> None:
    scores = fuse([CHUNK_DENSE, CHUNK_KEYWORD], fusion, _doc)
    assert _keys(scores) == expected
    if fusion.unit == "document":
        assert dict(scores)["x1"] == pytest.approx(2 / 61)


def test_document_fusion_without_doc_of_is_chunk_fusion() -> None:
    lists = [CHUNK_DENSE, CHUNK_KEYWORD]
    assert fuse(lists, Fusion("zscore", unit="document")) == fuse(lists, Fusion("zscore"))


def test_unknown_unit_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fusion unit"):
        fuse([DENSE], Fusion("rrf", unit="paragraph"))


def test_a_records_document_is_read_from_its_id() -> None:
    from chromasync.plan.packed import record_id
    from chromasync.plan.triage import id_prefix
    from chromasync.retrieve.results import document_of

    first = record_id(id_prefix("notes", "a.md"), "ab" * 32, 0)  # chunk hashes are hex
    second = record_id(id_prefix("notes", "a.md"), "cd" * 32, 1)
    other = record_id(id_prefix("notes", "b.md"), "ab" * 32, 0)
    assert document_of(("c", first)) == document_of(("c", second)) != document_of(("c", other))
    assert document_of(("c", first)) != document_of(("d", first))
    assert document_of(("c", "custom-id")) == ("c", "custom-id")


def test_hybrid_search_fuses_documents_by_default() -> None:
    from chromasync.plan.packed import record_id
    from chromasync.plan.triage import id_prefix
    from chromasync.records import Hit
    from chromasync.retrieve.results import DEFAULT_FUSION, Gathered, rank_hits

    def hit(key: str, score: float) -> Hit:
        chunk_hash = hashlib.sha256(key.encode()).hexdigest()
        rid = record_id(id_prefix("notes", f"{key[0]}.md"), chunk_hash, 0)
        return Hit(rid, f"{key[0]}.md", "notes", "", 1, 2, score, key, "c")

    dense = tuple(hit(k, s) for k, s in CHUNK_DENSE.items)
    keyword = tuple(hit(k, s) for k, s in CHUNK_KEYWORD.items)
    gathered = Gathered(dense=dense, keyword=keyword, collections=("c",))
    assert DEFAULT_FUSION.unit == "document" and DEFAULT_FUSION.method == "convex"
    # document x holds the best dense chunk (x1) and the best keyword chunk (x2): it leads
    # (with x2, its chunk of the higher own score: 0.55 keyword against 0.45 dense), before
    # y1 (second in both lists: 0.45 * 2/3 + 0.55 * 5/6); over chunks, y1 would lead
    ranked = rank_hits(gathered, "hybrid")
    assert [h.text for h in ranked] == ["x2", "y1", "x1", "z1", "z2"]
    assert ranked[0].score == pytest.approx(1.0) and ranked[2].score == pytest.approx(0.45)
    chunked = Fusion("convex", weights=dict(DEFAULT_FUSION.weights))
    assert rank_hits(gathered, "hybrid", chunked)[0].text == "y1"


def _lists(n: int) -> list[Ranked[str]]:
    dense = Ranked("dense", tuple((f"d{i % (n // 2)}-{i}", 1.0 - i / n) for i in range(n)))
    keyword = Ranked("keyword", tuple((f"d{i % (n // 3)}-{i}", 50.0 - i / n) for i in range(n)))
    return [dense, keyword]


@pytest.mark.timing
@pytest.mark.parametrize("method", ["convex", "zscore", "rrf"])
def test_doubling_the_candidates_at_most_doubles_fusion_and_the_scale(method: str) -> None:
    from chromasync.retrieve.relevance import relevance_scale

    fusion = Fusion(method, unit="document")

    n = 1500  # a search fuses about 400
    lists = {size: _lists(size) for size in (n, 2 * n)}

    def work(size: int) -> None:
        ranked = fuse(lists[size], fusion, lambda key: key.split("-")[0])
        relevance_scale([s for _, s in ranked], "hybrid", method, 200)

    assert_linear(work, n, what=f"{method}: 2x candidates")
