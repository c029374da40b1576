"""Chroma `where` documents: checked and normalised, built from `Filters`, and parsed from
a `--where-json` text.

Design notes: docs/internals.md, `retrieve/filter_where.py`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from ..metakeys import OWNER_KEY, stored_key
from .filter_syntax import (
    MAX_WHERE_DEPTH,
    MAX_WHERE_JSON_CHARS,
    Filters,
    Where,
    check_key,
    check_where_bounds,
    json_depth,
)

COMPARE_OPS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
LIST_OPS = {"$in", "$nin"}
_CONTAINS_OPS = {"$contains", "$not_contains"}


def parse_where_json(text: str, option: str = "--where-json") -> Where:
    """A where filter's JSON text (`option`: how the caller spells it, for errors)."""
    if len(text) > MAX_WHERE_JSON_CHARS:
        raise ConfigError(
            f"{option} is {len(text)} characters long; at most {MAX_WHERE_JSON_CHARS}"
        )
    depth = json_depth(text)
    if depth > 2 * MAX_WHERE_DEPTH + 4:
        raise ConfigError(
            f"{option} nests {depth} levels deep; $and/$or may nest {MAX_WHERE_DEPTH} deep"
        )
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{option} is not valid JSON: {exc}") from exc
    except ValueError as exc:  # Python reads no int of over 4,300 digits
        raise ConfigError(f"{option} holds a number of over 4,300 digits") from exc
    if not isinstance(value, dict):
        raise ConfigError(f'{option} must be a JSON object such as {{"year": {{"$gte": 2020}}}}')
    check_where_bounds(value)
    return normalise_where(value)


def normalise_where(where: Mapping[str, Any]) -> Where:
    """Check a Chroma `where` and make several top-level keys an explicit `$and`."""
    if not isinstance(where, Mapping) or not where:
        raise ConfigError(f"a where filter must be a non-empty object, got {where!r}")
    clauses: list[Where] = []
    for key, value in where.items():
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise ConfigError(f"{key} takes a non-empty list of filters")
            clauses.append({key: [normalise_where(v) for v in value]})
        elif key.startswith("$"):
            raise ConfigError(f"unknown where operator {key!r} (use $and, $or, or a key)")
        else:
            check_key(key)  # an older bookkeeping name means today's (`file_hash`: its own)
            clauses.append({stored_key(key): _operand(key, value)})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _operand(key: str, value: Any) -> Any:
    if _is_scalar(value):
        return value
    if not isinstance(value, Mapping) or len(value) != 1:
        raise ConfigError(f"filter on {key!r}: expected a value or one operator, got {value!r}")
    [(op, arg)] = value.items()
    if op in ("$eq", "$ne") and _is_scalar(arg):
        return {op: arg}
    if op in COMPARE_OPS:
        if isinstance(arg, bool) or not isinstance(arg, int | float):
            raise ConfigError(f"filter on {key!r}: {op} takes a number, got {arg!r}")
        return {op: arg}
    if op in LIST_OPS:
        if not isinstance(arg, list) or not arg or not all(_is_scalar(a) for a in arg):
            raise ConfigError(f"filter on {key!r}: {op} takes a non-empty list of values")
        if len({_kind(a) for a in arg}) > 1:
            raise ConfigError(f"filter on {key!r}: {op} values must all be of one type")
        return {op: list(arg)}
    if op in _CONTAINS_OPS and _is_scalar(arg):
        return {op: arg}
    raise ConfigError(f"filter on {key!r}: unsupported operator or operand {op!r}: {arg!r}")


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    return "number" if isinstance(value, int | float) else "text"


def build_where(
    filters: Filters,
    paths: Sequence[str] | None = None,
    links: Sequence[Sequence[str]] = (),
) -> Where | None:
    """The Chroma `where` of `filters`; `paths` are the indexed paths `--path` matched,
    `links` the stored link targets each `--links-to` matched (one list per target)."""
    clauses: list[Where] = []
    if filters.sources:
        sources = list(dict.fromkeys(filters.sources))
        # the ownership marker holds the label (`source`, in an index written before it)
        match: Any = sources[0] if len(sources) == 1 else {"$in": sources}
        clauses.append({"$or": [{OWNER_KEY: match}, {"source": match}]})
    clauses.extend({key: value} for key, value in filters.where)
    if filters.where_json:
        clauses.append(normalise_where(filters.where_json))
    if filters.tags:
        tags = [{filters.tag_field: {"$contains": t}} for t in dict.fromkeys(filters.tags)]
        clauses.append(_join("$and" if filters.tags_all else "$or", tags))
    if filters.after is not None or filters.before is not None:
        per_field = []
        for name in filters.date_fields:
            bounds: list[Where] = []
            if filters.after is not None:
                bounds.append({f"{name}_ts": {"$gte": filters.after}})
            if filters.before is not None:
                bounds.append({f"{name}_ts": {"$lt": filters.before}})
            per_field.append(_join("$and", bounds))
        clauses.append(_join("$or", per_field))
    if paths is not None:
        unique = sorted(set(paths))
        clauses.append({"path": unique[0]} if len(unique) == 1 else {"path": {"$in": unique}})
    for targets in links:
        contains = [{"links": {"$contains": t}} for t in dict.fromkeys(targets)]
        clauses.append(_join("$or", contains))
    if not clauses:
        return None
    return normalise_where(_join("$and", clauses))


def _join(op: str, clauses: list[Where]) -> Where:
    return clauses[0] if len(clauses) == 1 else {op: clauses}
