"""Evaluation metrics and query files, on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from chromasync.errors import ConfigError
from chromasync.records import Hit
from chromasync.retrieve.evaluate import (
    documents,
    judge,
    mean_metrics,
    parse_queries,
    percentile,
    query_metrics,
)


def _hit(path: str, source: str = "s", **meta: object) -> Hit:
    return Hit("id-" + path, path, source, "", 1, 1, 0.0, "", "c", dict(meta))


@pytest.mark.parametrize(
    ("flags", "n_relevant", "k", "expected"),
    [
        ([True, False, False], 1, 10, {"ndcg": 1.0, "recall": 1.0, "mrr": 1.0}),
        ([False, True], 1, 10, {"ndcg": 1 / math.log2(3), "recall": 1.0, "mrr": 0.5}),
        (
            [False, True, True],
            2,
            10,
            {
                "ndcg": (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3)),
                "recall": 1.0,
                "mrr": 0.5,
            },
        ),
        ([False] * 5, 3, 10, {"ndcg": 0.0, "recall": 0.0, "mrr": 0.0}),
        ([False, False, True], 1, 2, {"ndcg": 0.0, "recall": 0.0, "mrr": 1 / 3}),
        ([True, True], 4, 10, {"recall": 0.5}),
    ],
)
def test_query_metrics(
    flags: list[bool], n_relevant: int, k: int, expected: dict[str, float]
) -> None:
    got = query_metrics(flags, n_relevant, k)
    for name, value in expected.items():
        assert got[name] == pytest.approx(value), name


def test_recall_at_100_looks_past_k() -> None:
    flags = [False] * 50 + [True]
    got = query_metrics(flags, 1, 10)
    assert got["recall"] == 0 and got["recall@100"] == 1 and got["mrr"] == pytest.approx(1 / 51)


@pytest.mark.parametrize(
    ("relevant", "expected"),
    [
        (["31715818"], [True, False, False]),  # file stem
        (["notes/31715818.md"], [True, False, False]),  # path
        (["doc-7"], [False, True, False]),  # document_id
        (["other/31715818.md"], [False, False, True]),
        (["31715818", "31715818.md"], [True, False, True]),
        (["missing"], [False, False, False]),
    ],
)
def test_judge_matches_path_stem_or_document_id(relevant: list[str], expected: list[bool]) -> None:
    ranked = [
        _hit("notes/31715818.md"),
        _hit("b.md", document_id="doc-7"),
        _hit("other/31715818.md"),
    ]
    assert judge(ranked, relevant) == expected


def test_documents_keeps_the_best_chunk_of_each_file() -> None:
    hits = [_hit("a.md"), _hit("b.md"), _hit("a.md"), _hit("a.md", source="t")]
    assert [(h.source, h.path) for h in documents(hits)] == [
        ("s", "a.md"),
        ("s", "b.md"),
        ("t", "a.md"),
    ]


def test_parse_queries() -> None:
    lines = [
        '{"id": "q1", "query": "a claim", "relevant": ["1", "2"]}',
        "",
        '{"query": "another", "relevant": "x.md"}',
    ]
    queries = parse_queries(lines)
    assert [(q.id, q.query, q.relevant) for q in queries] == [
        ("q1", "a claim", ("1", "2")),
        ("3", "another", ("x.md",)),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "q.jsonl:1: not JSON"),
        ('["a"]', "expected"),
        ('{"query": "x"}', "non-empty list"),
        ('{"query": "x", "relevant": []}', "non-empty list"),
    ],
)
def test_parse_queries_names_the_bad_line(line: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_queries([line], "q.jsonl")


def test_mean_and_percentile() -> None:
    rows = [query_metrics([True], 1), query_metrics([False], 1)]
    assert mean_metrics(rows)["ndcg"] == 0.5
    assert percentile([5, 1, 3, 2, 4], 0.5) == 3
    assert percentile([5, 1, 3, 2, 4], 0.95) == 5
    assert percentile([], 0.5) == 0.0
