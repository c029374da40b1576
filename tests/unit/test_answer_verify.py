"""Citation checks: parsing, removal of numbers naming no source, renumbering, flags."""

from __future__ import annotations

import pytest

from chromasync.answer.verify import check_citations
from chromasync.records import Hit

SOURCES = [
    Hit(f"id{i}", f"docs/{i}.md", "docs", f"H{i}", 10 * i, 10 * i + 4, 1.0, f"Text {i}.")
    for i in (1, 2, 3)
]


def test_a_number_past_the_sources_is_removed_and_counted() -> None:
    checked = check_citations("Hugo is fast [1]. It is written in Go [9].", SOURCES)
    assert checked.text == "Hugo is fast [1]. It is written in Go."
    assert checked.removed == 1
    assert [c.id for c in checked.citations] == ["id1"]
    assert checked.flags == ("removed-citations",)


def test_kept_numbers_are_renumbered_by_first_use() -> None:
    checked = check_citations("First [3]. Then [1, 3][2]. Again [3][0][3, 3].", SOURCES)
    assert checked.text == "First [1]. Then [2, 1][3]. Again [1][1]."
    assert [(c.n, c.id) for c in checked.citations] == [(1, "id3"), (2, "id1"), (3, "id2")]
    assert checked.removed == 1
    assert checked.citations[0].start_line == 30 and checked.citations[0].end_line == 34


def test_citations_get_quotes_from_the_callback() -> None:
    checked = check_citations("X [2].", SOURCES, quote_of=lambda hit: hit.text.upper())
    assert checked.citations[0].quote == "TEXT 2."


@pytest.mark.parametrize(
    ("text", "flags"),
    [
        ("", ("empty",)),
        ("   \n", ("empty",)),
        ("[7]", ("empty", "removed-citations")),
        ("The sources do not cover this.", ("no-citations",)),
        ("Only a bad one [4].", ("no-citations", "removed-citations")),
        ("Fine [2].", ()),
    ],
)
def test_flags(text: str, flags: tuple[str, ...]) -> None:
    assert check_citations(text, SOURCES).flags == flags


def test_no_sources_removes_every_marker() -> None:
    checked = check_citations("A [1] B [2]", [])
    assert checked.text == "A B"
    assert checked.removed == 2
    assert checked.citations == ()
