"""Filter translation: user options -> Chroma `where` -> SQL, as parametrized tables."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from typing import Any

import pytest

from chromasync.errors import ConfigError
from chromasync.retrieve.bm25 import KeywordIndex
from chromasync.retrieve.filters import (
    Filters,
    build_where,
    filters_from_options,
    local_sql,
    match_paths,
    normalise_where,
    parse_value,
    parse_when,
    phrase_query,
    where_to_sql,
)
from chromasync.retrieve.request import SearchArgs

DAY = 86_400
MAY_1 = 1_777_593_600  # 2026-05-01T00:00Z


def filters_of(today: dt.date | None = None, **options: Any) -> Filters:
    """`filters_from_options` of a request holding `options` (`SearchArgs`' fields)."""
    return filters_from_options(SearchArgs.of("q", **options), today=today)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("true", True),
        ("False", False),
        ("2024", 2024),
        ("-3", -3),
        ("1.5", 1.5),
        ("1e3", 1000.0),
        ('"2024"', "2024"),
        ("'yes'", "yes"),
        ("mature", "mature"),
        ("2024-05-01", "2024-05-01"),
    ],
)
def test_parse_value_types_like_yaml(text: str, expected: Any) -> None:
    value = parse_value(text)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-05-01", MAY_1),
        ("2026-05-01T12:00", MAY_1 + DAY // 2),
        ("2026-05-01T12:00+02:00", MAY_1 + DAY // 2 - 7200),
    ],
)
def test_parse_when(text: str, expected: int) -> None:
    assert parse_when(text, "--after") == expected


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "05/01/2026"])
def test_parse_when_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(ConfigError, match="--after"):
        parse_when(text, "--after")


def _epoch(day: str) -> int:
    return parse_when(day, "--after")


@pytest.mark.parametrize(
    ("span", "today", "expected"),
    [
        ("2y", "2026-12-06", "2024-12-06"),
        ("18m", "2026-12-06", "2025-06-06"),
        ("90d", "2026-12-06", "2026-09-07"),
        ("3w", "2026-12-06", "2026-11-15"),
        (" 1M ", "2026-03-31", "2026-02-28"),  # a day the month lacks: its last day
        ("1y", "2024-02-29", "2023-02-28"),
        ("0d", "2026-12-06", "2026-12-06"),
    ],
)
def test_a_span_counts_back_from_the_given_day(span: str, today: str, expected: str) -> None:
    assert parse_when(span, "--after", dt.date.fromisoformat(today)) == _epoch(expected)


@pytest.mark.parametrize(
    ("span", "message"),
    [
        ("2y", "needs today's date"),  # no clock given: refused, never guessed
        ("9999y", "before the year 1"),
        ("2x", "2y, 18m"),
        ("12345d", "2y, 18m"),
    ],
)
def test_a_span_it_cannot_use_is_refused(span: str, message: str) -> None:
    today = None if message.startswith("needs") else dt.date(2026, 12, 6)
    with pytest.raises(ConfigError, match=message):
        parse_when(span, "published_after", today)


def test_filters_from_options_resolve_spans_with_the_injected_day() -> None:
    filters = filters_of(after="2y", before="30d", today=dt.date(2026, 12, 6))
    assert (filters.after, filters.before) == (_epoch("2024-12-06"), _epoch("2026-11-06"))
    assert filters.as_json()["after"] == "2y (2024-12-06)"
    with pytest.raises(ConfigError, match="is not before"):
        filters_of(after="30d", before="2y", today=dt.date(2026, 12, 6))


@pytest.mark.parametrize(
    ("filters", "paths", "expected"),
    [
        (Filters(), None, None),
        # the label is the ownership marker's (`source`'s, in an index made before it)
        (
            Filters(sources=("notes",)),
            None,
            {"$or": [{"chromasync_source": "notes"}, {"source": "notes"}]},
        ),
        (
            Filters(sources=("a", "b", "a")),
            None,
            {
                "$or": [
                    {"chromasync_source": {"$in": ["a", "b"]}},
                    {"source": {"$in": ["a", "b"]}},
                ]
            },
        ),
        (
            Filters(where=(("year", 2024), ("draft", False))),
            None,
            {"$and": [{"year": 2024}, {"draft": False}]},
        ),
        (Filters(tags=("x",)), None, {"tags": {"$contains": "x"}}),
        (
            Filters(tags=("x", "y")),
            None,
            {"$or": [{"tags": {"$contains": "x"}}, {"tags": {"$contains": "y"}}]},
        ),
        (
            Filters(tags=("x", "y"), tags_all=True),
            None,
            {"$and": [{"tags": {"$contains": "x"}}, {"tags": {"$contains": "y"}}]},
        ),
        (
            Filters(after=10, date_fields=("date",)),
            None,
            {"date_ts": {"$gte": 10}},
        ),
        (
            Filters(after=10, before=20, date_fields=("date", "published_at")),
            None,
            {
                "$or": [
                    {"$and": [{"date_ts": {"$gte": 10}}, {"date_ts": {"$lt": 20}}]},
                    {
                        "$and": [
                            {"published_at_ts": {"$gte": 10}},
                            {"published_at_ts": {"$lt": 20}},
                        ]
                    },
                ]
            },
        ),
        (Filters(paths=("a/*",)), ["a/x.md"], {"path": "a/x.md"}),
        (
            Filters(paths=("a/*",)),
            ["a/y.md", "a/x.md"],
            {"path": {"$in": ["a/x.md", "a/y.md"]}},
        ),
        (
            Filters(sources=("n",), where_json={"year": {"$gte": 2020}, "kind": "post"}),
            None,
            {
                "$and": [
                    {"$or": [{"chromasync_source": "n"}, {"source": "n"}]},
                    {"$and": [{"year": {"$gte": 2020}}, {"kind": "post"}]},
                ]
            },
        ),
    ],
)
def test_build_where(filters: Filters, paths: list[str] | None, expected: Any) -> None:
    assert build_where(filters, paths) == expected


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ({}, "non-empty"),
        ({"$not": {"a": 1}}, "unknown where operator"),
        ({"a": {"$gt": "x"}}, "takes a number"),
        ({"a": {"$gt": True}}, "takes a number"),
        ({"a": {"$in": [1, "1"]}}, "one type"),
        ({"a": {"$in": []}}, "non-empty list"),
        ({"a": {"$regex": "x"}}, "unsupported"),
        ({"a": {"$eq": 1, "$ne": 2}}, "one operator"),
        ({"$and": []}, "non-empty list"),
        ({'a"b': 1}, "not a usable metadata key"),
    ],
)
def test_normalise_where_refuses_bad_filters(where: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        normalise_where(where)


# Rows of metadata and the ids each filter must select (the same semantics as Chroma 1.5,
# checked against a real Chroma in tests/integration/test_retrieval.py).
ROWS = {
    "i0": {"a": 1, "tags": ["x", "y"], "s": "hello world", "b": True, "f": 1.0},
    "i1": {"a": 2, "tags": ["y"], "s": "Hello", "b": False},
    "i2": {"a": "1", "s": "x"},
    "i3": {"tags": ["z"], "b": 1},
}


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"a": 1}, {"i0"}),
        ({"a": 1.0}, {"i0"}),
        ({"f": 1}, {"i0"}),
        ({"a": "1"}, {"i2"}),
        ({"a": {"$ne": 1}}, {"i1", "i2", "i3"}),
        ({"a": {"$nin": [1, 2]}}, {"i2", "i3"}),
        ({"a": {"$in": [1, 2]}}, {"i0", "i1"}),
        ({"b": True}, {"i0"}),
        ({"b": 1}, {"i3"}),
        ({"b": {"$ne": False}}, {"i0", "i2", "i3"}),
        ({"a": {"$gt": 1}}, {"i1"}),
        ({"a": {"$gte": 1}}, {"i0", "i1"}),
        ({"a": {"$lt": 2}}, {"i0"}),
        ({"tags": {"$contains": "y"}}, {"i0", "i1"}),
        ({"tags": {"$not_contains": "y"}}, {"i2", "i3"}),
        ({"s": {"$contains": "hello"}}, set()),
        ({"tags": "y"}, set()),
        ({"$or": [{"a": 2}, {"tags": {"$contains": "z"}}]}, {"i1", "i3"}),
        ({"$and": [{"tags": {"$contains": "y"}}, {"b": False}]}, {"i1"}),
    ],
)
def test_where_to_sql_selects_like_chroma(where: Any, expected: set[str]) -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE chunks (id TEXT, metadata TEXT)")
    rows = [(k, json.dumps(v)) for k, v in ROWS.items()]
    db.executemany("INSERT INTO chunks VALUES (?, ?)", rows)
    sql, params = where_to_sql(where)
    got = {r[0] for r in db.execute(f"SELECT id FROM chunks AS c WHERE {sql}", params)}
    assert got == expected


def _index_with(texts: dict[str, tuple[str, dict[str, Any]]]) -> KeywordIndex:
    db = sqlite3.connect(":memory:")
    db.executescript(
        """
        CREATE TABLE chunks (rowid INTEGER PRIMARY KEY, id TEXT, collection TEXT, source TEXT,
            path TEXT, heading TEXT, text TEXT, metadata TEXT);
        CREATE VIRTUAL TABLE keyword USING fts5(text, heading, content='chunks',
            content_rowid='rowid', tokenize='porter unicode61');
        """
    )
    for rid, (text, meta) in texts.items():
        cur = db.execute(
            "INSERT INTO chunks (id, collection, source, path, heading, text, metadata) "
            "VALUES (?, 'c', 's', ?, '', ?, ?)",
            (rid, meta.get("path", rid), text, json.dumps(meta)),
        )
        db.execute(
            "INSERT INTO keyword(rowid, text, heading) VALUES (?, ?, '')", (cur.lastrowid, text)
        )
    return KeywordIndex(db)


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (Filters(phrases=("pay for performance",)), {"a", "b"}),
        (Filters(phrases=("Pay-For-Performance",)), {"a", "b"}),
        (Filters(phrases=("pay for performances",)), set()),
        (Filters(phrases=("performance pay",)), set()),
        (Filters(matches=(("url", "EXAMPLE.org"),)), {"a"}),
        (Filters(matches=(("links", "wiki"),)), {"b"}),
        (Filters(matches=(("url", "nowhere"),)), set()),
        (Filters(phrases=("for",), matches=(("url", "example"),)), {"a"}),
    ],
)
def test_local_sql_phrases_and_substrings(filters: Filters, expected: set[str]) -> None:
    index = _index_with(
        {
            "a": ("Pay-for-performance schemes\nare common.", {"url": "https://example.org/x"}),
            "b": ("pay for\nperformance", {"links": ["https://wiki.test/p"]}),
            "c": ("pay performance for", {"url": "https://other.net"}),
        }
    )
    sql, params = local_sql(filters)
    from chromasync.retrieve.bm25 import Condition

    assert set(index.candidate_ids("c", Condition(sql, tuple(params)))) == expected


@pytest.mark.parametrize(
    ("phrase", "fts"),
    [("exact words", '"exact words"'), ('say "hi" now', '"say hi now"'), ("a_b", '"a b"')],
)
def test_phrase_query(phrase: str, fts: str) -> None:
    assert phrase_query(phrase)[0] == fts


def test_phrase_without_words_is_refused() -> None:
    with pytest.raises(ConfigError, match="no words"):
        phrase_query(" -- ")


@pytest.mark.parametrize(
    ("patterns", "expected"),
    [
        (["journal/*"], ["journal/a.md", "journal/2026/b.md"]),
        (["journal/*.md", "!journal/2026/*"], ["journal/a.md"]),
        (["*.txt"], ["ideas.txt", "sub/more.txt"]),
        (["/ideas.txt"], ["ideas.txt"]),
        (["nothing/*"], []),
    ],
)
def test_match_paths_uses_gitwildmatch(patterns: list[str], expected: list[str]) -> None:
    paths = ["journal/a.md", "journal/2026/b.md", "ideas.txt", "sub/more.txt", "README.md"]
    assert match_paths(paths, patterns) == expected


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"where": ["noequals"]}, "KEY=VALUE"),
        ({"where": ["=1"]}, "KEY=VALUE"),
        ({"where_json": "[1]"}, "JSON object"),
        ({"where_json": "{bad"}, "not valid JSON"),
        ({"after": "2026-02-01", "before": "2026-01-01"}, "is not before"),
        ({"after": "soon"}, "--after"),
        ({"matches": ["url"]}, "--match"),
        ({"phrases": ["!!"]}, "no words"),
    ],
)
def test_filters_from_options_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        filters_of(**options)


def test_filters_from_options_echoes_what_was_given() -> None:
    filters = filters_of(
        sources=["notes"],
        where=["year=2024"],
        tags=["a"],
        after="2026-01-01",
        paths=["journal/*"],
        phrases=["zero point"],
        matches=["url=example"],
    )
    assert filters.as_json() == {
        "source": ["notes"],
        "where": {"year": 2024},
        "tags": ["a"],
        "tags_mode": "any",
        "after": "2026-01-01",
        "date_fields": ["date", "published_at"],
        "path": ["journal/*"],
        "phrase": ["zero point"],
        "match": {"url": "example"},
    }
    assert Filters().is_empty


def test_an_older_bookkeeping_name_filters_todays_key() -> None:
    """`--where file_hash=...` written before the rename filters `chromasync_file_hash`;
    user keys, and today's names, are kept as they are."""
    filters = filters_of(
        where=["file_hash=abc", "team=core"],
        where_json='{"version": {"$gte": 2}}',
        matches=["embedding_model=MiniLM"],
    )
    assert build_where(filters) == {
        "$and": [
            {"chromasync_file_hash": "abc"},
            {"team": "core"},
            {"chromasync_version": {"$gte": 2}},
        ]
    }
    assert filters.matches == (("chromasync_embedding_model", "MiniLM"),)
    assert normalise_where({"chromasync_chunk_hash": "x"}) == {"chromasync_chunk_hash": "x"}


def test_the_filter_record_is_every_field_as_json() -> None:
    """REST's `filter_record`: every field of the parsed filters, pairs as arrays."""
    filters = Filters(
        sources=("notes",),
        where=(("year", 2024),),
        where_json={"$or": [{"a": 1}, {"b": 2}]},
        matches=(("title", "kite"),),
        echo={"after": "2y (2024-12-06)"},
    )
    assert json.loads(json.dumps(filters.as_record())) == {
        "sources": ["notes"],
        "where": [["year", 2024]],
        "where_json": {"$or": [{"a": 1}, {"b": 2}]},
        "tags": [],
        "tags_all": False,
        "after": None,
        "before": None,
        "date_fields": ["date", "published_at"],
        "paths": [],
        "phrases": [],
        "matches": [["title", "kite"]],
        "tag_field": "tags",
        "links_to": [],
        "echo": {"after": "2y (2024-12-06)"},
    }
