"""Front matter (`corpus.frontmatter`): parsing, failing closed, privacy, flattening, dates."""

from __future__ import annotations

import calendar
import datetime as dt
from typing import Any

import pytest

from chromasync.corpus.frontmatter import (
    MAX_META_CHARS,
    MAX_VALUE_CHARS,
    MAX_VALUES,
    FrontMatterError,
    flatten_metadata,
    is_private,
    split_front_matter,
    unreadable_dates,
)
from chromasync.corpus.read import decode_document
from chromasync.records import FileStat


def _ts(*when: int) -> int:
    return calendar.timegm((*when, 0, 0, 0)[:6])


@pytest.mark.parametrize(
    ("text", "data", "body_line"),
    [
        ("---\ntitle: T\n---\n# Body\n", {"title": "T"}, 4),
        ("---\ntitle: T\n...\nbody", {"title": "T"}, 4),  # YAML's document end closes too
        ("---\na: 1\n--- \t\nbody", {"a": 1}, 4),  # trailing blanks on the fence
        ("--- \na: 1\n---\n", {"a": 1}, 4),  # ... on the opening fence too (issue 29)
        ("---   \t\na: 1\n---", {"a": 1}, 4),
        ("---\n---\nbody", {}, 3),
        ("---\n# only a comment\n---\n", {}, 4),
        ("---\n---", {}, 3),
        ("---\nnested: {a: [1, 2]}\n---\n", {"nested": {"a": [1, 2]}}, 4),
    ],
)
def test_front_matter_parsed(text: str, data: dict[str, Any], body_line: int) -> None:
    front = split_front_matter(text)
    assert front is not None
    assert (dict(front.data), front.body_start_line) == (data, body_line)


@pytest.mark.parametrize(
    "text",
    ["# Title\n---\na: 1\n---\n", "\n---\na: 1\n---\n", " ---\na: 1\n---\n", "---a: 1\n---\n", ""],
)
def test_no_front_matter(text: str) -> None:
    assert split_front_matter(text) is None


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("---\na: 1\n", "no closing"),
        ("---", "no closing"),
        ("---\nprivate: true\n# forgot to close\n", "no closing"),
        ("---\na: &x 1\nb: *x\n---\n", "aliases"),
        ("---\nbase: &b {private: true}\nnote:\n  <<: *b\n---\n", "aliases"),
        ("---\nprivate: false\nprivate: true\n---\n", "duplicate"),
        ("---\nmeta:\n  k: 1\n  k: 2\n---\n", "duplicate"),
        ("---\n? [a, b]\n: 1\n---\n", "not a scalar"),
        ("---\na: !!python/object/apply:os.system ['true']\n---\n", "not valid YAML"),
        ("---\na: [1\n---\n", "not valid YAML"),
        ("---\na: b: c\n---\n", "not valid YAML"),
        ("---\n- a\n- b\n---\n", "not a mapping"),
        ("---\njust words\n---\n", "not a mapping"),
    ],
)
def test_front_matter_fails_closed(text: str, why: str) -> None:
    with pytest.raises(FrontMatterError, match=why):
        split_front_matter(text)


@pytest.mark.parametrize(
    ("data", "keys", "private"),
    [
        ({"private": True}, ("private",), True),
        ({"private": "yes"}, ("private",), True),
        ({"private": "On "}, ("private",), True),
        ({"private": 1}, ("private",), True),
        ({"private": "y"}, ("private",), True),
        ({"Private": True}, ("private",), True),  # keys compared case-blind
        ({" PRIVATE ": "true"}, ("private",), True),
        ({"secret": True}, ("Secret",), True),  # either side
        ({"private": False}, ("private",), False),
        ({"private": "no"}, ("private",), False),
        ({"private": None}, ("private",), False),
        ({"private": "maybe"}, ("private",), False),  # neither true-ish nor false-ish
        ({"publish": False}, ("private",), True),
        ({"publish": "off"}, ("private",), True),
        ({"publish": 0}, ("private",), True),
        ({"publish": True}, ("private",), False),
        ({"secret": True}, ("private",), False),
        ({"private": True}, ("secret",), False),  # only the configured keys
        ({"secret": "1", "private": False}, ("private", "secret"), True),
        ({}, ("private",), False),
    ],
)
def test_is_private(data: dict[str, Any], keys: tuple[str, ...], private: bool) -> None:
    assert is_private(data, keys) is private


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\ntitle: T\n---\nbody\n", None),
        ("---\nprivate: true\n---\nbody\n", "private"),
        ("---\nPublish: no\n---\nbody\n", "private"),
        ("---\nprivate: true\nprivate: false\n---\nbody\n", "frontmatter-invalid"),
        ("---\nprivate: true\n\nbody with no closing fence\n", "frontmatter-invalid"),
        ("---\ntitle: T\n---\n", None),  # a title alone is worth indexing
        ("---\ndraft: true\n---\n\n", "empty"),
    ],
)
def test_a_markdown_file_fails_closed(text: str, reason: str | None) -> None:
    raw = text.encode()
    outcome = decode_document(FileStat("n.md", "/r/n.md", len(raw), 0), raw, "h")
    assert (outcome.skip.reason if outcome.skip else None) == reason
    assert (outcome.document is None) is (reason is not None)


@pytest.mark.parametrize(
    ("data", "flat", "dropped"),
    [
        pytest.param(
            {"title": "T", "rating": 5, "score": 1.5, "draft": False},
            {"title": "T", "rating": 5, "score": 1.5, "draft": False},
            0,
            id="scalars",
        ),
        pytest.param(
            {"date": dt.date(2026, 1, 10)},
            {"date": "2026-01-10", "date_ts": _ts(2026, 1, 10)},
            0,
            id="date",
        ),
        pytest.param(
            {"at": dt.datetime(2026, 1, 10, 12, 30)},
            {"at": "2026-01-10T12:30:00", "at_ts": _ts(2026, 1, 10, 12, 30)},
            0,
            id="naive-datetime-is-utc",
        ),
        pytest.param(
            {"at": dt.datetime(2026, 1, 10, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))},
            {"at": "2026-01-10T12:00:00+02:00", "at_ts": _ts(2026, 1, 10, 10)},
            0,
            id="aware-datetime",
        ),
        pytest.param(
            {"old": dt.date(1969, 12, 31)},
            {"old": "1969-12-31", "old_ts": -86400},
            0,
            id="before-epoch",
        ),
        pytest.param(
            {"published_at": "2025-09-15"},
            {"published_at": "2025-09-15", "published_at_ts": _ts(2025, 9, 15)},
            0,
            id="quoted-date-is-a-date",
        ),
        pytest.param(
            {"at": " 2025-09-15T10:30:00Z", "b": "2025-09-15 10:30+02:00"},
            {
                "at": "2025-09-15T10:30:00Z",
                "at_ts": _ts(2025, 9, 15, 10, 30),
                "b": "2025-09-15 10:30+02:00",
                "b_ts": _ts(2025, 9, 15, 8, 30),
            },
            0,
            id="quoted-date-times",
        ),
        pytest.param(
            {"a": "2025-02-30", "b": "2025-09-15 and later", "c": "20250915", "d": "last tuesday"},
            {"a": "2025-02-30", "b": "2025-09-15 and later", "c": "20250915", "d": "last tuesday"},
            0,
            id="not-dates-stay-strings",
        ),
        pytest.param(
            {"tags": ["b", "a", 1, True, 2.5]},
            {"tags": ["b", "a", "1", "True", "2.5"]},
            0,
            id="list-kept-in-order",
        ),
        pytest.param({"days": [dt.date(2026, 1, 2)]}, {"days": ["2026-01-02"]}, 0, id="dates"),
        pytest.param({"tags": [], "x": None}, {}, 0, id="empty-list-and-null-hold-nothing"),
        pytest.param({"tags": ["a", {"b": 1}]}, {}, 1, id="list-of-mappings"),
        pytest.param({"tags": ["a", None]}, {}, 1, id="list-with-null"),
        pytest.param({"a": {"b": {"c": 1}}}, {"a.b.c": 1}, 0, id="nested"),
        pytest.param({"a": {"b": {"c": {"d": 1}}}}, {"a.b.c.d": 1}, 0, id="deepest-kept"),
        pytest.param({"a": {"b": {"c": {"d": {"e": 1}}}}, "x": 1}, {"x": 1}, 1, id="too-deep"),
        pytest.param({"path": "evil", "source": "x", "title": "t"}, {"title": "t"}, 2, id="ours"),
        pytest.param({" version ": 9, "chunk_index": 0}, {}, 2, id="ours-after-strip"),
        pytest.param({"meta": {"path": "nested is fine"}}, {"meta.path": "nested is fine"}, 0),
        pytest.param({"$where": 1, "chroma:document": 2, "": 3, " ": 4}, {}, 4, id="prefixes"),
        pytest.param({"blob": b"\x00\x01", "nothing": None}, {}, 1, id="binary-and-null"),
        pytest.param({"s": "x" * MAX_VALUE_CHARS}, {"s": "x" * MAX_VALUE_CHARS}, 0, id="longest"),
        pytest.param({"s": "x" * (MAX_VALUE_CHARS + 1)}, {}, 1, id="too-long"),
        pytest.param({"big": 2**63, "low": -(2**63)}, {"big": str(2**63), "low": -(2**63)}, 0),
        pytest.param(
            {"n": float("nan"), "i": float("-inf")}, {"n": "nan", "i": "-inf"}, 0, id="non-finite"
        ),
        pytest.param({1: "a", None: "b"}, {"1": "a", "None": "b"}, 0, id="keys-become-strings"),
    ],
)
def test_flatten_metadata(data: dict[Any, Any], flat: dict[str, Any], dropped: int) -> None:
    assert flatten_metadata(data) == (flat, dropped)


def test_front_matter_values_are_bounded_in_all() -> None:
    """A record of more than about 5,400 values broke the Chroma collection for good (every
    later write and read failed): 6,000 tags in 12 KB of front matter did it. Values past
    `MAX_VALUES` (a list's items each count) or `MAX_META_CHARS` in all are dropped."""
    tags = [f"t{i}" for i in range(6000)]
    assert flatten_metadata({"title": "T", "tags": tags, "x": 1}) == ({"title": "T", "x": 1}, 1)
    many = {f"k{i}": i for i in range(MAX_VALUES + 88)}
    flat, dropped = flatten_metadata(many)
    assert list(flat) == [f"k{i}" for i in range(MAX_VALUES)] and dropped == 88
    long = {f"k{i}": "x" * MAX_VALUE_CHARS for i in range(10)}
    flat, dropped = flatten_metadata(long)
    assert len(flat) == MAX_META_CHARS // (MAX_VALUE_CHARS + 2) and dropped == 10 - len(flat)
    flat, dropped = flatten_metadata({"k" * 40_000: 1, "d": dt.date(2026, 1, 2)})
    assert flat == {"d": "2026-01-02", "d_ts": _ts(2026, 1, 2)} and dropped == 1


def test_unreadable_dates_are_named() -> None:
    flat, _ = flatten_metadata({"date": "soon", "published_at": "2025-01-02", "title": "x"})
    assert unreadable_dates(flat, ("date", "published_at", "updated")) == ["date"]


def test_a_yaml_set_flattens_in_one_order() -> None:
    """A YAML `!!set` is a Python set, whose order follows string hashing (random per
    process): the flattened list is sorted, so the record hash does not change per run."""
    names = ["kiwi", "apple", "fig", "date", "lime", "pear", "plum", "yuzu"]
    front = split_front_matter("---\ntags: !!set {" + ", ".join(names) + "}\n---\n")
    assert front is not None and isinstance(front.data["tags"], set)
    assert flatten_metadata(front.data) == ({"tags": sorted(names)}, 0)


def test_yaml_dates_become_iso_and_epoch() -> None:
    front = split_front_matter("---\ndate: 2026-01-10\nat: 2026-01-10T12:00:00+02:00\n---\n")
    assert front is not None
    flat, dropped = flatten_metadata(front.data)
    assert flat == {
        "date": "2026-01-10",
        "date_ts": _ts(2026, 1, 10),
        "at": "2026-01-10T12:00:00+02:00",
        "at_ts": _ts(2026, 1, 10, 10),
    }
    assert dropped == 0
