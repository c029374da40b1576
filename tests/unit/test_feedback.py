"""Pseudo-relevance feedback's pure parts: weights, the moved vector, expansion words and
the second round's keyword query (retrieve/feedback.py), and the first round's documents
(results.lead_documents)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pytest

from chromasync.records import Hit
from chromasync.retrieve.feedback import (
    PRESELECT,
    expansion_terms,
    feedback_weights,
    moved_vector,
    weighted_terms,
)
from chromasync.retrieve.fuse import Fusion
from chromasync.retrieve.results import lead_documents

from ..doubling import assert_linear


def _counts(table: Mapping[str, int]) -> object:
    asked: list[list[str]] = []

    def count(words: Sequence[str]) -> dict[str, int]:
        asked.append(list(words))
        return {w: table.get(w, 2) for w in words}

    count.asked = asked  # type: ignore[attr-defined]
    return count


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([], []),
        ([5.0], [1.0]),
        ([1.0, 1.0], [0.5, 0.5]),
        ([1.0, 0.5, 0.0], [1.1 / 1.8, 0.6 / 1.8, 0.1 / 1.8]),
    ],
)
def test_feedback_weights(scores: list[float], expected: list[float]) -> None:
    got = feedback_weights(scores)
    assert got == pytest.approx(expected)
    assert not got or sum(got) == pytest.approx(1.0)


def test_moved_vector_is_rocchio_of_unit_length() -> None:
    moved = moved_vector([1.0, 0.0], [[0.0, 1.0], [0.0, 1.0]], 0.5)
    assert moved == pytest.approx([1 / math.sqrt(1.25), 0.5 / math.sqrt(1.25)])
    assert moved_vector([0.6, 0.8], [], 1.0) == [0.6, 0.8]


def test_expansion_prefers_likely_and_rare_words_never_the_querys() -> None:
    documents = [
        (0.7, ["Statins lower cholesterol; statins and cholesterol in trials of 2019."]),
        (0.3, ["Cholesterol trials: the statin trials", "a of"]),
    ]
    count = _counts({"trials": 900, "statins": 3, "cholesterol": 40, "lower": 500})
    got = expansion_terms("Do statins work?", documents, 2, count, 1000)  # type: ignore[arg-type]
    # "statins" is the query's own word, "2019" a number, "of"/"a" stop words or short;
    # likelihoods: cholesterol 0.183, trials 0.156, lower 0.070, statin 0.043; times
    # ln(1000 / df): cholesterol 0.589, statin 0.266, lower 0.049, trials (df 900) 0.016
    assert got == ["cholesterol", "statin"]
    assert all(len(asked) <= PRESELECT for asked in count.asked)  # type: ignore[attr-defined]


def test_a_word_only_where_it_was_found_is_not_an_expansion() -> None:
    count = _counts({"zyxomycin": 1, "kinase": 5})
    got = expansion_terms("inhibitor", [(1.0, ["zyxomycin zyxomycin kinase"])], 5, count, 100)  # type: ignore[arg-type]
    assert got == ["kinase"]


def test_expansion_of_nothing_asks_nothing() -> None:
    count = _counts({})
    assert expansion_terms("q", [(1.0, ["", "the of"])], 5, count, 10) == []  # type: ignore[arg-type]
    assert count.asked == []  # type: ignore[attr-defined]


def test_weighted_terms_repeat_the_querys_words() -> None:
    assert weighted_terms("Statins and cholesterol", ["ldl"], 2) == [
        *("statins", "cholesterol", "statins", "cholesterol", "ldl")
    ]
    assert weighted_terms("", ["ldl"], 2) == []


def _hit(rid: str, score: float, text: str = "") -> Hit:
    return Hit(rid, "src", f"{rid[:8]}.md", "", 1, 1, score, text, "c")


def test_lead_documents_are_the_first_rounds_best_with_their_listed_chunks() -> None:
    # record ids: <source 8 hex>-<document 16 hex>-<content 16 hex>-<n>
    a0, a1 = (
        "aaaaaaaa-" + "1" * 16 + "-" + "0" * 16 + "-0",
        "aaaaaaaa-" + "1" * 16 + "-" + "1" * 16 + "-1",
    )
    b0 = "aaaaaaaa-" + "2" * 16 + "-" + "0" * 16 + "-0"
    c0 = "aaaaaaaa-" + "3" * 16 + "-" + "0" * 16 + "-0"
    dense = [_hit(a0, 0.9), _hit(b0, 0.5), _hit(c0, 0.1)]
    keyword = [_hit(a1, 9.0), _hit(c0, 8.0), _hit(b0, 1.0)]
    leads = lead_documents(dense, keyword, Fusion("convex", unit="document"), 2)
    assert [lead.id for _, lead, _ in leads] == [a0, c0]
    assert {h.id for h in leads[0][2]} == {a0, a1} and [h.id for h in leads[1][2]] == [c0]
    assert leads[0][0] > leads[1][0]
    assert lead_documents([], [], Fusion("convex", unit="document"), 3) == []


@pytest.mark.timing
def test_doubling_the_fed_back_text_at_most_doubles_the_expansion() -> None:
    def texts(n: int) -> list[tuple[float, list[str]]]:
        words = [f"w{i % 997}x" for i in range(n)]
        return [(1.0 / 3, [" ".join(words[j::3]) for j in range(3)])] * 3

    n = 1200  # a chunk is about 250 words; MAX_WORDS caps each text at 4096
    documents = {size: texts(size) for size in (n, 2 * n)}

    def work(size: int) -> None:
        expansion_terms("query words", documents[size], 5, lambda ws: dict.fromkeys(ws, 5), 1000)

    assert_linear(work, n, what="2x fed-back words")


def test_a_fed_back_text_is_read_to_a_bound() -> None:
    """A huge chunk's words past MAX_WORDS never count (the expansion stays bounded)."""
    from chromasync.retrieve.feedback import MAX_WORDS

    text = " ".join(["alpha"] * MAX_WORDS + ["omega"] * (2 * MAX_WORDS))
    got = expansion_terms("q", [(1.0, [text])], 2, lambda ws: dict.fromkeys(ws, 2), 10)
    assert got == ["alpha"]
