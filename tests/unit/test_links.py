"""Outgoing links: extraction and normalisation (`corpus.links`), what a lookup matches
(`retrieve.links.target_matcher`), and the `--links-to` clause of `build_where`."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from chromasync.corpus.links import (
    extract_links,
    front_matter_links,
    lookup_keys,
    normalise_target,
    normalise_url,
)
from chromasync.errors import ConfigError
from chromasync.retrieve.filters import Filters, build_where, filters_from_options
from chromasync.retrieve.links import target_matcher
from chromasync.retrieve.request import SearchArgs

from ..doubling import assert_linear


def filters_of(today: dt.date | None = None, **options: Any) -> Filters:
    """`filters_from_options` of a request holding `options` (`SearchArgs`' fields)."""
    return filters_from_options(SearchArgs.of("q", **options), today=today)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "HTTPS://WWW.Example.ORG:443/a/b/?utm_source=x&id=3&fbclid=y#frag",
            "https://www.example.org/a/b?id=3",
        ),
        ("http://example.org:80/", "http://example.org"),
        ("http://example.org:8080/x/", "http://example.org:8080/x"),
        ("https://example.org/x?gclid=1&UTM_medium=2", "https://example.org/x"),
        ("https://example.org", "https://example.org"),
        ("mailto:someone@example.org", "mailto:someone@example.org"),
        ("https:///nohost", None),
    ],
)
def test_normalise_url(raw: str, expected: str | None) -> None:
    assert normalise_url(raw) == expected


@pytest.mark.parametrize(
    ("raw", "from_path", "expected"),
    [
        ("../b.md", "notes/a.md", "b.md"),
        ("./c%20d.md#part", "notes/a.md", "notes/c d.md"),
        ("/top/x.md", "notes/deep/a.md", "top/x.md"),
        ("../../out.md", "notes/a.md", None),  # climbs out of the root
        ("#only-a-fragment", "a.md", None),
        ("//cdn.example.org/x.js", "a.md", "https://cdn.example.org/x.js"),
    ],
)
def test_normalise_target(raw: str, from_path: str, expected: str | None) -> None:
    assert normalise_target(raw, from_path) == expected


def test_every_kind_of_link_with_line_and_text() -> None:
    text = (
        'Intro [the report](https://www.weforum.org/reports/fj-2025/ "T") '
        "and ![fig](../img/a.png).\n"
        "Notes: [[Note]], [[../skills/x|alias]], [[Note#Heading]].\n"
        "Bare https://example.org/page/?utm_campaign=z. and <https://auto.example.org/>\n"
        "Cited [WEF][wef] and [wef].\n"
        "\n"
        "[wef]: https://weforum.org/reports/\n"
    )
    found = [(lk.target, lk.text, lk.line, lk.kind) for lk in extract_links(text, "notes/a.md", 10)]
    assert found == [
        ("https://www.weforum.org/reports/fj-2025", "the report", 10, "markdown"),
        ("img/a.png", "fig", 10, "image"),
        ("note:note", "Note", 11, "wikilink"),
        ("skills/x", "alias", 11, "wikilink"),
        ("note:note", "Note#Heading", 11, "wikilink"),
        ("https://example.org/page", "https://example.org/page/?utm_campaign=z", 12, "url"),
        ("https://auto.example.org", "https://auto.example.org/", 12, "url"),
        ("https://weforum.org/reports", "WEF", 13, "reference"),
        ("https://weforum.org/reports", "wef", 13, "reference"),
        ("https://weforum.org/reports", "wef", 15, "reference"),
    ]


def test_front_matter_urls_are_links_with_their_line() -> None:
    header = "---\ntitle: X\nexact_url: https://A.org/r/?utm_source=n\nsee:\n  - https://b.org\n"
    meta = {
        "title": "X",
        "exact_url": "https://A.org/r/?utm_source=n",
        "see": ["https://b.org", "x"],
    }
    found = [(lk.target, lk.text, lk.line) for lk in front_matter_links(meta, header)]
    assert found == [("https://a.org/r", "exact_url", 3), ("https://b.org", "see", 4)]


def test_lookup_keys_and_matcher() -> None:
    assert lookup_keys("docs/x.md") == ("docs/x.md", "docs/x", "note:x")
    assert lookup_keys("note:My Note") == ("note:my note",)
    url = target_matcher("https://Example.org/reports/")
    assert url("https://example.org/reports") and url("https://example.org/reports/a")
    assert url("https://example.org/reports?id=1")
    assert not url("https://example.org/reportsX") and not url("https://example.org")
    folder = target_matcher("docs/")
    assert folder("docs/a.md") and not folder("docs.md") and not folder("note:docs")
    assert target_matcher("My Note")("note:my note")
    with pytest.raises(ConfigError):
        target_matcher("  ")
    with pytest.raises(ConfigError):
        target_matcher("../../etc/passwd")


def test_links_to_becomes_contains_clauses() -> None:
    filters = filters_of(links_to=["https://a.org", "b.md"])
    assert filters.links_to == ("https://a.org", "b.md")
    where = build_where(
        Filters(sources=("n",)), None, [["https://a.org", "https://a.org/x"], ["b.md"]]
    )
    assert where == {
        "$and": [
            {"$or": [{"chromasync_source": "n"}, {"source": "n"}]},
            {
                "$or": [
                    {"links": {"$contains": "https://a.org"}},
                    {"links": {"$contains": "https://a.org/x"}},
                ]
            },
            {"links": {"$contains": "b.md"}},
        ]
    }
    with pytest.raises(ConfigError):
        filters_of(links_to=[" "])


@pytest.mark.timing
def test_extraction_is_linear_and_bounded() -> None:
    unit = "word [[a]] [x](y.md) https://e.org/p [r] [[" + "\n"
    texts = {n: unit * n for n in (4000, 8000)}
    assert len(extract_links(texts[8000], "a.md")) == 200  # MAX_LINKS
    assert_linear(lambda n: extract_links(texts[n], "a.md"), 4000, what="2x text")
