"""Issue 29's new pure steps, alone and linear: folding copies, date order over the relevant
candidates, `latest`'s per-document order, the pages of matched lines, quoted dates.

Doubling the input at most ~doubles the time, measured as every doubling test is
(`tests/doubling.py`).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chromasync.corpus.frontmatter import flatten_metadata
from chromasync.records import Hit
from chromasync.retrieve.filters import Filters
from chromasync.retrieve.highlight import matched_pages
from chromasync.retrieve.results import Gathered, SearchRequest, collapse_copies, present

from ..doubling import assert_linear


def _hit(i: int, copies: int = 3) -> Hit:
    return Hit(
        id=f"id{i}",
        path=f"p{i}.md",
        source="s",
        heading="",
        start_line=1,
        end_line=2,
        score=1.0 / (i + 1),
        text=f"text {i}",
        collection="c",
        metadata={"chunk_hash": f"h{i // copies}", "date_ts": (i * 7919) % 100_000},
        relevance=max(0.0, 1.0 - i / 1_000_000),
    )


def test_copies_fold_into_the_first_hit() -> None:
    hits = [_hit(i) for i in range(6)]
    folded = collapse_copies(hits)
    assert [h.path for h in folded] == ["p0.md", "p3.md"]
    assert folded[0].also_at == ("p1.md", "p2.md")
    repeated = [_hit(0), _hit(0)]  # one file holding a chunk twice: both stay
    assert len(collapse_copies(repeated)) == 2


def test_matched_pages_picks_the_lines_with_most_words() -> None:
    text = "alpha on page one\nbeta\ngamma delta on page two\nnothing"
    assert matched_pages(text, 10, 1, ["12:2"], "gamma delta") == (2,)
    assert matched_pages(text, 10, 1, ["12:2"], "alpha") == (1,)
    assert matched_pages(text, 10, 1, ["12:2"], "zebra") == ()
    assert matched_pages(text, 10, 1, ["11:2", "12:3"], "beta") == (2,)


def _present(sort: str, latest: int | None) -> Callable[[int], object]:
    def run(n: int) -> object:
        hits = [_hit(i) for i in range(n)]
        request = SearchRequest("q", k=10, sort=sort, latest=latest, filters=Filters())
        return present(request, Gathered((), (), ("c",)), hits, False)

    return run


def _pages(n: int) -> object:
    text = "\n".join(f"word{i % 7} line {i}" for i in range(n))
    starts = [f"{line}:{line // 50 + 1}" for line in range(50, n, 50)]
    return matched_pages(text, 1, 1, starts, "word3 line")


def _dates(n: int) -> object:
    return flatten_metadata({f"k{i}": f"2025-09-{1 + i % 28:02d}T10:30:00Z" for i in range(n)})


CASES: dict[str, tuple[Callable[[int], object], int]] = {
    "present-rank": (_present("rank", None), 10_000),
    "present-date": (_present("date", None), 10_000),
    "present-latest": (_present("rank", 50), 10_000),
    "matched-pages": (_pages, 20_000),
    "quoted-dates": (_dates, 40_000),
}


@pytest.mark.timing
@pytest.mark.parametrize("case", sorted(CASES))
def test_doubling_the_input_at_most_doubles_the_time(case: str) -> None:
    run, n = CASES[case]
    assert_linear(run, n, what=f"{case}: 2x input")


@pytest.mark.parametrize(
    ("subdirs", "starts"),
    [
        ((), ("",)),
        (("content", ""), ("",)),  # the root too: walked once, from the root
        (("content", "content/en", "/docs/"), ("content", "docs")),
        (("a", "a"), ("a",)),
        (("ab", "a"), ("ab", "a")),  # a prefix of the name is not a parent folder
    ],
)
def test_overlapping_subdirs_are_walked_once(
    subdirs: tuple[str, ...], starts: tuple[str, ...]
) -> None:
    from pathlib import Path

    from chromasync.records import SourceSpec

    assert SourceSpec("s", Path("/tmp"), subdirs=subdirs).starts == starts
