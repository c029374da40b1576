"""Untrusted filter input is bounded in one place (`filters_from_options`), before any parser,
SQLite or Chroma sees it; past a bound it is a `ConfigError` that names the bound."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from typing import Any

import pytest

from chromasync.errors import ConfigError
from chromasync.retrieve.filters import (
    MAX_OPTION_VALUES,
    MAX_WHERE_DEPTH,
    MAX_WHERE_LIST,
    Filters,
    filters_from_options,
    where_to_sql,
)
from chromasync.retrieve.request import SearchArgs
from chromasync.store.failures import _refused_filter, _shorten


def filters_of(today: dt.date | None = None, **options: Any) -> Filters:
    """`filters_from_options` of a request holding `options` (`SearchArgs`' fields)."""
    return filters_from_options(SearchArgs.of("q", **options), today=today)


def nested_and(depth: int) -> dict[str, Any]:
    where: dict[str, Any] = {"year": 2024}
    for _ in range(depth):
        where = {"$and": [where, {"draft": False}]}
    return where


def deep_json(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


BAD: dict[str, dict[str, Any]] = {
    "in-1000": {"where_json": json.dumps({"path": {"$in": [f"p{i}" for i in range(1000)]}})},
    "and-100-deep": {"where_json": json.dumps(nested_and(100))},
    "and-100-deep-object": {"where_json": nested_and(100)},
    "json-1000-deep": {"where_json": deep_json(1000)},
    "json-100000-deep": {"where_json": "[" * 100_000},
    "json-huge": {"where_json": json.dumps({"k": "x" * 20_000})},
    "or-1000-wide": {"where_json": {"$or": [{"k": i} for i in range(1000)]}},
    "terms-many": {"where_json": {"$and": [{"$or": [{"k": i} for i in range(200)]}] * 5}},
    "keys-many": {"where_json": {f"k{i}": i for i in range(1000)}},
    "phrases-600": {"phrases": [f"word{i}" for i in range(600)]},
    "matches-600": {"matches": [f"title=x{i}" for i in range(600)]},
    "paths-600": {"paths": [f"a{i}/*.md" for i in range(600)]},
    "tags-600": {"tags": [f"t{i}" for i in range(600)]},
    "sources-600": {"sources": [f"s{i}" for i in range(600)]},
    "where-600": {"where": [f"k{i}=1" for i in range(600)]},
    "collections-600": {"collections": [f"c{i}" for i in range(600)]},  # as OPTIONS bounds it
    "phrase-long": {"phrases": ["word " * 1000]},
    "where-json-list": {"where_json": [1, 2]},
    "where-json-number": {"where_json": 5},
    "in-of-objects": {"where_json": {"k": {"$in": [{"a": 1}]}}},
    "after-huge": {"after": "2024-01-01" * 100},
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_input_past_a_bound_is_a_config_error(case: str) -> None:
    with pytest.raises(ConfigError) as info:
        filters_of(**BAD[case])
    assert len(str(info.value)) < 300  # a message, never the input echoed


def test_inputs_within_the_bounds_are_accepted() -> None:
    filters = filters_of(
        where_json=json.dumps(nested_and(MAX_WHERE_DEPTH - 1)),
        phrases=[f"word{i}" for i in range(MAX_OPTION_VALUES)],
    )
    assert filters.where_json is not None
    filters_of(where_json={"k": {"$in": list(range(MAX_WHERE_LIST))}})


def test_a_long_in_list_is_one_flat_sql_expression() -> None:
    """The paths a --path pattern matched become `path $in [...]` of any length: SQLite's
    expression tree must not grow with it (it refused 1,000 OR-ed terms)."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE c (metadata TEXT)")
    db.executemany("INSERT INTO c VALUES (?)", [(json.dumps({"path": f"p{i}"}),) for i in range(5)])
    values = [f"p{i}" for i in range(0, 5000, 2)]
    sql, params = where_to_sql({"path": {"$in": values}}, "c.metadata")
    assert db.execute(f"SELECT count(*) FROM c WHERE {sql}", params).fetchone() == (3,)
    sql, params = where_to_sql({"path": {"$nin": values}}, "c.metadata")
    assert db.execute(f"SELECT count(*) FROM c WHERE {sql}", params).fetchone() == (2,)


def test_repeated_match_on_one_field_echoes_every_value() -> None:
    filters = filters_of(matches=["title=kite", "title=red", "url=example"])
    assert filters.as_json()["match"] == {"title": ["kite", "red"], "url": "example"}


def test_chroma_refusing_a_where_is_a_short_usage_error() -> None:
    clause = "Expected where value to be a str, int or float, got " + "{" * 5000
    refused = _refused_filter(ValueError(clause))
    assert isinstance(refused, ConfigError) and len(str(refused)) < 400
    assert _refused_filter(RuntimeError("connection reset")) is None
    assert len(_shorten("x" * 10_000)) < 310
