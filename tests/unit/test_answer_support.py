"""Every citation supports its sentence: the check after generation (answer/support.py)."""

from __future__ import annotations

import pytest

from chromasync.answer.support import check_support
from chromasync.records import Hit

from ..citations import labelled_cases, labelled_rates
from ..doubling import assert_linear


def hit(rid: str, text: str) -> Hit:
    return Hit(rid, f"docs/{rid}.md", "docs", rid, 1, 1, 1.0, text, "c", {})


SOURCES = [
    hit("bridge", "The Old Mill bridge was built in 1923 from local granite by the Ward family."),
    hit("river", "The river floods in spring; the mill's wheel turned until the 1960s."),
    hit("museum", "The museum opened in the old granary and shows the Ward family's tools."),
]


@pytest.mark.parametrize(
    ("text", "kept", "dropped"),
    [
        # right source: kept
        ("The bridge was built in 1923 from local granite [1].", "[1]", []),
        # the year is not in source 2 (a swapped citation on the same topic): dropped
        ("The bridge was built in 1923 from local granite [2].", "granite.", [2]),
        # the claim's words are in source 3, not in source 1
        ("The museum in the old granary shows the family's tools [1].", "tools.", [1]),
        # a figure the cited source lacks caps its support
        ("The Old Mill bridge was built in 1931 from local granite [1].", "granite.", [1]),
        # one marker naming two sources: the unsupported one goes, the other stays
        ("The museum opened in the old granary [1, 3].", "granary [3].", [1]),
        # too short to judge: left as cited
        ("Done [2].", "Done [2].", []),
        # a number naming no source is left to check_citations
        ("The bridge was built in 1923 from granite [9].", "[9]", []),
        # a paraphrase keeps the source's facts in other words: kept
        ("In 1923 the Ward family raised the Old Mill bridge out of granite [1].", "[1]", []),
        # a name no source (nor the question) holds is an invented fact
        ("The Old Mill bridge was built in 1923 by the Romans [1].", "Romans.", [1]),
    ],
)
def test_planted_and_correct_citations(text: str, kept: str, dropped: list[int]) -> None:
    checked = check_support(text, SOURCES)
    assert kept in checked.text
    assert [d.n for d in checked.unsupported] == dropped


def test_a_name_the_question_gives_is_known() -> None:
    text = "The bridge at Ashford was built in 1923 from local granite [1]."
    assert check_support(text, SOURCES).text != text
    assert check_support(text, SOURCES, "Who built the bridge at Ashford?").text == text


def test_the_answer_of_issue_41_keeps_its_true_citation() -> None:
    """A chat model's answer over Hugo's strings pages: the paraphrase citing
    strings.Replace stays, the invented year and name go, [97] is check_citations' to drop."""
    [(_, _, hits), *_] = labelled_cases()
    text = (
        "Use strings.Replace with a count of -1 to replace every occurrence [1]. It was added "
        "to Hugo in 1923 by the Vatican [2]. See also [97]."
    )
    checked = check_support(text, hits, "How do I replace text in a string?")
    assert [d.n for d in checked.unsupported] == [2]
    assert checked.text == text.replace(" Vatican [2].", " Vatican.")


def test_the_labelled_paraphrases_meet_the_goals() -> None:
    """benchmarks/data/hugo_citations.json: at least 90% of wrong citations (wrong source,
    invented fact) caught, at most 10% of supported paraphrases flagged."""
    rates = labelled_rates()
    sizes = {label: row["n"] for label, row in rates["cases"].items()}
    assert sizes == {"supported": 39, "wrong-source": 17, "invented": 13}
    assert rates["caught"] >= 0.9, rates["missed"]
    assert rates["false_flags"] <= 0.1, rates["missed"]


def test_clause_level_claims() -> None:
    text = (
        "The bridge was built in 1923 from local granite [1], and the museum shows "
        "the Ward family's old tools [3]."
    )
    checked = check_support(text, SOURCES)
    assert checked.unsupported == () and checked.text == text


def test_no_sources_or_no_markers_change_nothing() -> None:
    assert check_support("Plain text.", SOURCES).text == "Plain text."
    assert check_support("Cited [1].", []).unsupported == ()


@pytest.mark.timing
def test_linear_in_the_answer() -> None:
    sentence = "The bridge was built in 1923 from local granite [1]. "

    answers = {n: sentence * n for n in (500, 1000)}
    assert_linear(lambda n: check_support(answers[n], SOURCES), 500, bound=3.5, what="2x answer")
