"""Filters: what a search may return, translated once for Chroma and once for SQL.

A `Filters` record holds what the user asked for (`--source`, `--where`, `--where-json`,
`--tag`, `--after`/`--before`, `--path`, `--phrase`, `--match`, `--links-to`).
`build_where` turns the metadata part into one Chroma `where` document; `where_to_sql` turns
any Chroma `where` (also the user's `--where-json`) into an SQL condition over the keyword
metadata with the same semantics as Chroma 1.5 (checked side by side in the integration
tests):

* equality is typed: `1` matches 1 and 1.0 but not "1" or true; `$ne`/`$nin` also match
  records that lack the key; `$gt`... take numbers only;
* `$contains`/`$not_contains` test membership in a list field (`tags`); a record without
  the list does not contain anything.

`--links-to TARGET` (each one must hold) is resolved like a path: the stored link targets it
means (`retrieve.links.target_matcher`: a URL and every URL under it, a path, its stem and
its note title) are looked up in the keyword index and become ``links $contains`` clauses.

Paths, phrases and metadata substrings have no Chroma operator. Paths (git-wildmatch, as
`ingest --include`) are resolved against the indexed paths into a `path $in [...]` clause;
phrases and substrings become SQL over the keyword index (`local_sql`), whose matching ids
then restrict the dense query. Everything here is pure.

Every surface (CLI, REST, MCP) builds its `Filters` with `filters_from_options`, which
bounds the untrusted input before any parser, SQLite or Chroma sees it (the `MAX_*`
constants below, written down in docs/reliability.md): a `where_json` text is measured and
its nesting counted before it is parsed, a `where` object's depth, branches, terms and
`$in` lists are counted without recursion, and the number and length of every repeated
option are capped. Past a bound: a `ConfigError` saying which one (HTTP 400, CLI exit 2, an
MCP error result).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..errors import ConfigError
from ..records import Scalar

Where: TypeAlias = dict[str, Any]

DEFAULT_DATE_FIELDS = ("date", "published_at")
#: SQLite functions `KeywordIndex` registers for the conditions built here.
SQL_REGEXP = "chromasync_regexp"
SQL_ICONTAINS = "chromasync_icontains"

_COMPARE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_SCALAR_OPS = {"$eq", "$ne", *_COMPARE}
_LIST_OPS = {"$in", "$nin"}
_CONTAINS_OPS = {"$contains", "$not_contains"}
_WORD = re.compile(r"[^\W_]+")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")

#: Characters of a `where_json` text.
MAX_WHERE_JSON_CHARS = 16_384
#: `$and`/`$or` nested in one another.
MAX_WHERE_DEPTH = 8
#: Clauses of one `$and`/`$or`, and values of one `$in`/`$nin`.
MAX_WHERE_LIST = 256
#: Conditions (and `$in` values) in one `where` in all.
MAX_WHERE_TERMS = 512
#: Values of each repeatable option: source, where, tag, date field, path, phrase, match.
MAX_OPTION_VALUES = 64
#: Characters of one option value (a key, a value, a pattern, a phrase).
MAX_VALUE_CHARS = 1_000


@dataclass(frozen=True, slots=True)
class Filters:
    """The restrictions of one search; every field empty means no restriction."""

    sources: tuple[str, ...] = ()
    where: tuple[tuple[str, Scalar], ...] = ()  # key = value, all must hold
    where_json: Mapping[str, Any] | None = None  # Chroma's operators
    tags: tuple[str, ...] = ()
    tags_all: bool = False  # all tags must be present (default: any of them)
    after: int | None = None  # epoch seconds, inclusive
    before: int | None = None  # epoch seconds, exclusive
    date_fields: tuple[str, ...] = DEFAULT_DATE_FIELDS
    paths: tuple[str, ...] = ()  # git-wildmatch patterns, any of them
    phrases: tuple[str, ...] = ()  # each must occur, words in order, case-blind
    matches: tuple[tuple[str, str], ...] = ()  # field contains substring, case-blind
    tag_field: str = "tags"
    links_to: tuple[str, ...] = ()  # each must be linked to (see `retrieve.links`)
    echo: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def needs_index(self) -> bool:
        """True when the keyword index must resolve part of the filter."""
        return bool(self.paths or self.phrases or self.matches or self.links_to)

    @property
    def is_empty(self) -> bool:
        return self.as_json() == {}

    def as_json(self) -> dict[str, Any]:
        """The filters as given, for `--json` output (empty fields left out)."""
        out: dict[str, Any] = {}
        if self.sources:
            out["source"] = list(self.sources)
        if self.where:
            out["where"] = {k: v for k, v in self.where}
        if self.where_json:
            out["where_json"] = dict(self.where_json)
        if self.tags:
            out["tags"] = list(self.tags)
            out["tags_mode"] = "all" if self.tags_all else "any"
        if self.after is not None:
            out["after"] = self.echo.get("after", self.after)
        if self.before is not None:
            out["before"] = self.echo.get("before", self.before)
        if self.after is not None or self.before is not None:
            out["date_fields"] = list(self.date_fields)
        if self.paths:
            out["path"] = list(self.paths)
        if self.phrases:
            out["phrase"] = list(self.phrases)
        if self.matches:  # a field given several times: all its values (all must hold)
            grouped: dict[str, list[str]] = {}
            for key, needle in self.matches:
                grouped.setdefault(key, []).append(needle)
            out["match"] = {k: v[0] if len(v) == 1 else v for k, v in grouped.items()}
        if self.links_to:
            out["links_to"] = list(self.links_to)
        return out


# -- parsing user input ------------------------------------------------------------------


def parse_value(text: str) -> Scalar:
    """A `--where` value as YAML front matter would type it: bool, int, float or string.

    Quote it to keep a string: `--where 'year="2024"'`.
    """
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "\"'":
        return stripped[1:-1]
    lowered = stripped.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if _INT.fullmatch(stripped):
        return int(stripped)
    if _FLOAT.fullmatch(stripped):
        return float(stripped)
    return text


def parse_pair(text: str, option: str) -> tuple[str, str]:
    """`KEY=VALUE` split at the first `=`; the key is checked."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"{option} takes KEY=VALUE, got {text!r}")
    check_key(key, option)
    return key, value


def check_key(key: str, option: str = "a filter") -> str:
    if not key or key.startswith("$") or '"' in key or "\\" in key:
        raise ConfigError(f"{option}: {key!r} is not a usable metadata key")
    return key


def parse_when(text: str, option: str) -> int:
    """`YYYY-MM-DD` or an ISO date-time (naive means UTC, as in front matter) to epoch s."""
    try:
        if len(text.strip()) == 10:
            day = dt.date.fromisoformat(text.strip())
            moment = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
        else:
            moment = dt.datetime.fromisoformat(text.strip())
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.UTC)
    except ValueError as exc:
        raise ConfigError(
            f"{option} takes a date like 2024-05-31 or 2024-05-31T12:00, got {text!r}"
        ) from exc
    return int(moment.timestamp())


def parse_where_json(text: str) -> Where:
    if len(text) > MAX_WHERE_JSON_CHARS:
        raise ConfigError(
            f"--where-json is {len(text)} characters long; at most {MAX_WHERE_JSON_CHARS}"
        )
    depth = _json_depth(text)
    if depth > 2 * MAX_WHERE_DEPTH + 4:
        raise ConfigError(
            f"--where-json nests {depth} levels deep; $and/$or may nest {MAX_WHERE_DEPTH} deep"
        )
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--where-json is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ConfigError('--where-json must be a JSON object such as {"year": {"$gte": 2020}}')
    check_where_bounds(value)
    return normalise_where(value)


def _json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in a JSON text (strings skipped), in one
    pass without recursion: measured before the parser sees the text."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def check_where_bounds(where: Any) -> None:
    """Refuse a `where` object past the bounds (depth, list lengths, terms), without
    recursion, so that a hostile object costs no more than its size to refuse."""
    terms = 0
    stack: list[tuple[Any, int]] = [(where, 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, Mapping):
            continue
        if len(node) > MAX_WHERE_LIST:
            raise ConfigError(f"a where filter has {len(node)} keys; at most {MAX_WHERE_LIST}")
        for key, value in node.items():
            if not isinstance(key, str) or len(key) > MAX_VALUE_CHARS:
                raise ConfigError(f"a where key is longer than {MAX_VALUE_CHARS} characters")
            if key in ("$and", "$or"):
                if depth + 1 > MAX_WHERE_DEPTH:
                    raise ConfigError(
                        f"where: $and/$or nest more than {MAX_WHERE_DEPTH} levels deep"
                    )
                if isinstance(value, list):
                    if len(value) > MAX_WHERE_LIST:
                        raise ConfigError(
                            f"where: {key} has {len(value)} clauses; at most {MAX_WHERE_LIST}"
                        )
                    stack.extend((v, depth + 1) for v in value)
                continue
            terms += 1
            if isinstance(value, Mapping):
                for op, arg in value.items():
                    if isinstance(arg, list):
                        if len(arg) > MAX_WHERE_LIST:
                            raise ConfigError(
                                f"where: {op} on {key!r} has {len(arg)} values; "
                                f"at most {MAX_WHERE_LIST}"
                            )
                        terms += len(arg)
                        arg_items: list[Any] = arg
                    else:
                        arg_items = [arg]
                    for item in arg_items:
                        if isinstance(item, Mapping | list):
                            raise ConfigError(f"where: {op} on {key!r} takes plain values")
                        if isinstance(item, str) and len(item) > MAX_VALUE_CHARS:
                            raise ConfigError(
                                f"where: a value is longer than {MAX_VALUE_CHARS} characters"
                            )
            elif isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
                raise ConfigError(f"where: a value is longer than {MAX_VALUE_CHARS} characters")
            if terms > MAX_WHERE_TERMS:
                raise ConfigError(f"where: more than {MAX_WHERE_TERMS} conditions")


def _check_options(option: str, values: Sequence[str]) -> None:
    if len(values) > MAX_OPTION_VALUES:
        raise ConfigError(f"{option} is given {len(values)} times; at most {MAX_OPTION_VALUES}")
    for value in values:
        if not isinstance(value, str):
            raise ConfigError(f"{option} takes text, got {type(value).__name__}")
        if len(value) > MAX_VALUE_CHARS:
            raise ConfigError(f"{option}: a value is longer than {MAX_VALUE_CHARS} characters")


def filters_from_options(
    *,
    sources: Sequence[str] = (),
    where: Sequence[str] = (),
    where_json: str | Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
    tags_all: bool = False,
    after: str | None = None,
    before: str | None = None,
    date_fields: Sequence[str] = DEFAULT_DATE_FIELDS,
    paths: Sequence[str] = (),
    phrases: Sequence[str] = (),
    matches: Sequence[str] = (),
    links_to: Sequence[str] = (),
) -> Filters:
    """`Filters` from the strings a surface receives (CLI flags, REST or MCP arguments),
    bounded (see the `MAX_*` constants) before anything parses them."""
    for option, values in (
        ("--source", sources),
        ("--where", where),
        ("--tag", tags),
        ("--date-field", date_fields),
        ("--path", paths),
        ("--phrase", phrases),
        ("--match", matches),
    ):
        _check_options(option, values)
    for option, value in (("--after", after), ("--before", before)):
        if value is not None and (not isinstance(value, str) or len(value) > 64):
            raise ConfigError(f"{option} takes a date like 2024-05-31")
    pairs = []
    for text in where:
        key, value = parse_pair(text, "--where")
        pairs.append((key, parse_value(value)))
    parsed_json: Where | None = None
    if isinstance(where_json, str) and where_json.strip():
        parsed_json = parse_where_json(where_json)
    elif isinstance(where_json, Mapping) and where_json:
        check_where_bounds(where_json)
        parsed_json = normalise_where(where_json)
    elif where_json is not None and not isinstance(where_json, str | Mapping):
        raise ConfigError("--where-json must be a JSON object")
    fields = tuple(check_key(f, "date field") for f in date_fields if f)
    if (after or before) and not fields:
        raise ConfigError("--after/--before need at least one date field (date_fields)")
    low = parse_when(after, "--after") if after else None
    high = parse_when(before, "--before") if before else None
    if low is not None and high is not None and low >= high:
        raise ConfigError(f"--after {after} is not before --before {before}")
    for phrase in phrases:
        phrase_query(phrase)
    for target in links_to:
        if not target.strip() or len(target) > 2000:
            raise ConfigError("--links-to takes a URL, a path or a note title (1-2000 chars)")
    echo = {k: v for k, v in (("after", after), ("before", before)) if v}
    return Filters(
        sources=tuple(s for s in sources if s),
        where=tuple(pairs),
        where_json=parsed_json,
        tags=tuple(t for t in tags if t),
        tags_all=tags_all,
        after=low,
        before=high,
        date_fields=fields or DEFAULT_DATE_FIELDS,
        paths=tuple(p for p in paths if p),
        phrases=tuple(p for p in phrases if p.strip()),
        matches=tuple(parse_pair(m, "--match") for m in matches),
        links_to=tuple(dict.fromkeys(t.strip() for t in links_to)),
        echo=echo,
    )


# -- Chroma `where` ----------------------------------------------------------------------


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
            check_key(key)
            clauses.append({key: _operand(key, value)})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _operand(key: str, value: Any) -> Any:
    if _is_scalar(value):
        return value
    if not isinstance(value, Mapping) or len(value) != 1:
        raise ConfigError(f"filter on {key!r}: expected a value or one operator, got {value!r}")
    [(op, arg)] = value.items()
    if op in ("$eq", "$ne") and _is_scalar(arg):
        return {op: arg}
    if op in _COMPARE:
        if isinstance(arg, bool) or not isinstance(arg, int | float):
            raise ConfigError(f"filter on {key!r}: {op} takes a number, got {arg!r}")
        return {op: arg}
    if op in _LIST_OPS:
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
        clauses.append(
            {"source": sources[0]} if len(sources) == 1 else {"source": {"$in": sources}}
        )
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


# -- SQL over the keyword index ------------------------------------------------------------


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
    if op in _COMPARE:
        return (
            f"(json_type({column}, ?) IN ('integer', 'real') "
            f"AND json_extract({column}, ?) {_COMPARE[op]} ?)",
            [path, path, arg],
        )
    if op in _LIST_OPS:
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


def phrase_query(phrase: str) -> tuple[str, str]:
    """The FTS5 phrase query that finds candidates, and the regex that confirms them."""
    words = _WORD.findall(phrase)
    if not words:
        raise ConfigError(f"--phrase {phrase!r} has no words to look for")
    fts = '"' + " ".join(w.replace('"', "") for w in words) + '"'
    pattern = r"(?<![^\W_])" + r"[\W_]+".join(re.escape(w) for w in words) + r"(?![^\W_])"
    return fts, pattern


def match_paths(paths: Iterable[str], patterns: Sequence[str]) -> list[str]:
    """The paths any git-wildmatch pattern matches (the syntax of `ingest --include`)."""
    import pathspec

    try:
        spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"--path: bad pattern in {list(patterns)!r}: {exc}") from exc
    return [p for p in paths if spec.match_file(p)]


__all__ = [
    "DEFAULT_DATE_FIELDS",
    "Filters",
    "Where",
    "build_where",
    "filters_from_options",
    "local_sql",
    "match_paths",
    "normalise_where",
    "parse_pair",
    "parse_value",
    "parse_when",
    "parse_where_json",
    "phrase_query",
    "where_to_sql",
]
