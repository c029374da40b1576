"""SQL over the keyword index: a Chroma `where` with Chroma's semantics, and what Chroma
cannot express (`--phrase`, `--match`), plus `--path` patterns matched in Python.

Design notes: docs/internals.md, `retrieve/filter_sql.py`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from .filter_syntax import Filters, check_key
from .filter_where import COMPARE_OPS, LIST_OPS, normalise_where

#: SQLite functions `KeywordIndex` registers for the conditions built here.
SQL_REGEXP = "chromasync_regexp"
SQL_ICONTAINS = "chromasync_icontains"
_WORD = re.compile(r"[^\W_]+")


def json_path(key: str) -> str:
    return '$."' + check_key(key) + '"'


def where_to_sql(
    where: Mapping[str, Any] | None, column: str = "c.metadata"
) -> tuple[str, list[Any]]:
    """An SQL condition over a JSON metadata column with Chroma's semantics for `where`."""
    if not where:
        return "1", []
    where = normalise_where(where)
    [(key, value)] = where.items()
    if key in ("$and", "$or"):
        parts = [where_to_sql(v, column) for v in value]
        joiner = " AND " if key == "$and" else " OR "
        return "(" + joiner.join(p[0] for p in parts) + ")", [a for p in parts for a in p[1]]
    path = json_path(key)
    if not isinstance(value, Mapping):
        return _equals(column, path, value)
    [(op, arg)] = value.items()
    if op == "$eq":
        return _equals(column, path, arg)
    if op == "$ne":
        sql, params = _equals(column, path, arg)
        return f"NOT COALESCE({sql}, 0)", params
    if op in COMPARE_OPS:
        return (
            f"(json_type({column}, ?) IN ('integer', 'real') "
            f"AND json_extract({column}, ?) {COMPARE_OPS[op]} ?)",
            [path, path, arg],
        )
    if op in LIST_OPS:
        sql, params = _one_of(column, path, arg)
        return (f"NOT COALESCE({sql}, 0)", params) if op == "$nin" else (sql, params)
    member = _member_sql(arg)
    sql = (
        f"(json_type({column}, ?) = 'array' AND EXISTS "
        f"(SELECT 1 FROM json_each({column}, ?) AS j WHERE {member}))"
    )
    params = [path, path, *([] if isinstance(arg, bool) else [arg])]
    return (f"NOT COALESCE({sql}, 0)", params) if op == "$not_contains" else (sql, params)


def _equals(column: str, path: str, value: Any) -> tuple[str, list[Any]]:
    if isinstance(value, bool):
        return f"(json_type({column}, ?) = '{'true' if value else 'false'}')", [path]
    if isinstance(value, int | float):
        return (
            f"(json_type({column}, ?) IN ('integer', 'real') AND json_extract({column}, ?) = ?)",
            [path, path, value],
        )
    return (
        f"(json_type({column}, ?) = 'text' AND json_extract({column}, ?) = ?)",
        [path, path, value],
    )


def _one_of(column: str, path: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
    """Typed membership in `values` (all of one kind) as one flat `IN (...)`: a long list
    (the paths a `--path` pattern matched) makes no deep expression tree."""
    if all(isinstance(v, bool) for v in values):
        parts = [_equals(column, path, v) for v in dict.fromkeys(values)]
        return "(" + " OR ".join(p[0] for p in parts) + ")", [x for p in parts for x in p[1]]
    marks = ", ".join("?" * len(values))
    kind = "IN ('integer', 'real')" if isinstance(values[0], int | float) else "= 'text'"
    return (
        f"(json_type({column}, ?) {kind} AND json_extract({column}, ?) IN ({marks}))",
        [path, path, *values],
    )


def _member_sql(value: Any) -> str:
    if isinstance(value, bool):
        return f"j.type = '{'true' if value else 'false'}'"
    if isinstance(value, int | float):
        return "j.type IN ('integer', 'real') AND j.value = ?"
    return "j.type = 'text' AND j.value = ?"


def local_sql(filters: Filters, column: str = "c") -> tuple[str, list[Any]]:
    """SQL for what Chroma cannot express: `--phrase` and `--match` (over `chunks AS c`)."""
    parts: list[str] = []
    params: list[Any] = []
    for phrase in filters.phrases:
        fts, pattern = phrase_query(phrase)
        parts.append(
            f"{column}.rowid IN (SELECT rowid FROM keyword WHERE keyword MATCH ?) "
            f"AND {SQL_REGEXP}(?, {column}.text)"
        )
        params += [fts, pattern]
    for key, needle in filters.matches:
        parts.append(
            f"EXISTS (SELECT 1 FROM json_each({column}.metadata, ?) AS m "
            f"WHERE m.type NOT IN ('object', 'array') AND {SQL_ICONTAINS}(m.value, ?))"
        )
        params += [json_path(key), needle]
    return (" AND ".join(parts) or "1"), params


def phrase_query(phrase: str, option: str = "--phrase") -> tuple[str, str]:
    """The FTS5 phrase query that finds candidates, and the regex that confirms them."""
    words = _WORD.findall(phrase)
    if not words:
        raise ConfigError(f"{option} {phrase!r} has no words to look for")
    fts = '"' + " ".join(w.replace('"', "") for w in words) + '"'
    pattern = r"(?<![^\W_])" + r"[\W_]+".join(re.escape(w) for w in words) + r"(?![^\W_])"
    return fts, pattern


def match_paths(paths: Iterable[str], patterns: Sequence[str], option: str = "--path") -> list[str]:
    """The paths any git-wildmatch pattern matches (the syntax of `ingest --include`)."""
    import pathspec

    try:
        spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{option}: bad pattern in {list(patterns)!r}: {exc}") from exc
    return [p for p in paths if spec.match_file(p)]
