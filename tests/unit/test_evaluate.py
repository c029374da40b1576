"""Evaluation metrics and query files, on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from chromasync.errors import ConfigError
from chromasync.records import Hit
from chromasync.retrieve.evaluate import (
    judge,
    judge_gains,
    mean_metrics,
    ndcg,
    parse_queries,
    percentile,
    query_metrics,
    score_query,
    versus,
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
        # each a traceback (a ValueError, a RecursionError) until they were caught
        ('{"query": "x", "relevant": ' + "9" * 5000 + "}", "q.jsonl:1: not JSON"),
        ("[" * 200_000 + "]" * 200_000, "q.jsonl:1: not JSON"),
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


@pytest.mark.parametrize(
    ("gains", "judged", "k", "expected"),
    [
        ([2.0, 1.0], [2.0, 1.0], 10, 1.0),  # the best order
        ([1.0, 2.0], [2.0, 1.0], 10, (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))),
        ([0.0, 2.0], [2.0], 10, 1 / math.log2(3)),
        ([0.0, 0.0], [2.0, 1.0], 10, 0.0),
        ([1.0], [], 10, 0.0),  # nothing judged relevant
        ([0.0, 0.0, 2.0], [2.0], 2, 0.0),  # below the cut-off
        ([1.0, 1.0], [1.0, 1.0, 1.0], 10, (1 + 1 / math.log2(3)) / (1 + 1 / math.log2(3) + 0.5)),
    ],
)
def test_graded_ndcg(gains: list[float], judged: list[float], k: int, expected: float) -> None:
    assert ndcg(gains, judged, k) == pytest.approx(expected)


def test_graded_judgements_score_by_grade() -> None:
    [item] = parse_queries(['{"query": "q", "relevant": ["a", "b"], "grades": {"a": 2, "b": 1}}'])
    assert item.graded and item.gains() == {"a": 2.0, "b": 1.0}
    ranked = [_hit("b.md"), _hit("x.md"), _hit("a.md")]
    assert judge_gains(ranked, item.gains()) == [1.0, 0.0, 2.0]
    row = score_query(ranked, item)
    ideal = 2 + 1 / math.log2(3)
    assert row["ndcg_graded"] == pytest.approx((1 + 2 / 2) / ideal)
    assert row["ndcg"] == pytest.approx((1 + 0.5) / (1 + 1 / math.log2(3)))
    [plain] = parse_queries(['{"query": "q", "relevant": ["a"]}'])
    binary = score_query(ranked, plain)
    assert not plain.graded and binary["ndcg_graded"] == binary["ndcg"]


@pytest.mark.parametrize(
    ("grades", "message"),
    [
        ('["a"]', "must be an object"),
        ('{"a": "2"}', "must be a number"),
        ('{"a": true}', "must be a number"),
        ('{"a": -1}', "must be 0 to 100"),
        ('{"a": 1e9}', "must be 0 to 100"),
    ],
)
def test_bad_grades_name_their_line(grades: str, message: str) -> None:
    line = '{"query": "x", "relevant": ["a"], "grades": ' + grades + "}"
    with pytest.raises(ConfigError, match=f"q.jsonl:1: .*{message}"):
        parse_queries([line], "q.jsonl")


@pytest.mark.parametrize(
    ("mine", "theirs", "expected"),
    [
        ([1.0, 0.5, 0.0], [0.5, 0.5, 0.2], {"wins": 1, "losses": 1, "ties": 1}),
        ([], [], {"wins": 0, "losses": 0, "ties": 0}),
        ([0.3], [0.3 + 1e-12], {"wins": 0, "losses": 0, "ties": 1}),
    ],
)
def test_versus_counts_per_query(
    mine: list[float], theirs: list[float], expected: dict[str, int]
) -> None:
    rows = [{"ndcg": v} for v in mine]
    other = [{"ndcg": v} for v in theirs]
    assert versus(rows, other) == expected


def test_versus_needs_the_same_queries() -> None:
    with pytest.raises(ValueError, match="same queries"):
        versus([{"ndcg": 1.0}], [])


@pytest.mark.parametrize(
    ("graded", "expected"),
    [
        (False, {"wins": 1, "losses": 1, "ties": 0}),  # binary nDCG: one each way
        (True, {"wins": 2, "losses": 0, "ties": 0}),  # graded nDCG: hybrid wins both
    ],
)
def test_the_report_compares_hybrid_with_each_single_mode(
    graded: bool, expected: dict[str, int]
) -> None:
    from chromasync.retrieve.tasks import EvalReport

    def row(binary: float, graded_value: float) -> dict[str, float]:
        return {"ndcg": binary, "ndcg_graded": graded_value}

    per_query = {
        "hybrid": [row(0.5, 0.9), row(0.2, 0.6)],
        "keyword": [row(0.4, 0.3), row(0.3, 0.5)],
        "hybrid variant": [row(1.0, 1.0), row(1.0, 1.0)],
    }
    report = EvalReport(2, 10, {}, per_query, graded=graded)
    assert report.headline == ("ndcg_graded" if graded else "ndcg")
    assert report.versus() == {"hybrid vs keyword": expected}
    assert report.as_json()["versus"] == {"hybrid vs keyword": expected}
    # a measured kind of hybrid (eval --feedback, a reranker) is compared with hybrid
    fed = EvalReport(2, 10, {}, {**per_query, "hybrid+feedback": per_query["keyword"]}, graded)
    losses = {"wins": expected["losses"], "losses": expected["wins"], "ties": 0}
    assert fed.versus()["hybrid+feedback vs hybrid"] == losses
