"""Filters: what a search may return, translated once for Chroma and once for SQL.

Design notes: docs/internals.md, `retrieve/filters.py`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..metakeys import stored_key
from ..versions import MAX_TARGET_CHARS
from .filter_sql import SQL_ICONTAINS as SQL_ICONTAINS
from .filter_sql import SQL_REGEXP as SQL_REGEXP
from .filter_sql import local_sql as local_sql
from .filter_sql import match_paths as match_paths
from .filter_sql import phrase_query as phrase_query
from .filter_sql import where_to_sql as where_to_sql
from .filter_syntax import DEFAULT_DATE_FIELDS as DEFAULT_DATE_FIELDS
from .filter_syntax import MAX_OPTION_VALUES as MAX_OPTION_VALUES
from .filter_syntax import MAX_VALUE_CHARS as MAX_VALUE_CHARS
from .filter_syntax import MAX_WHERE_DEPTH as MAX_WHERE_DEPTH
from .filter_syntax import MAX_WHERE_LIST as MAX_WHERE_LIST
from .filter_syntax import Filters as Filters
from .filter_syntax import Where as Where
from .filter_syntax import check_key as check_key
from .filter_syntax import check_options
from .filter_syntax import check_where_bounds as check_where_bounds
from .filter_syntax import is_span as is_span
from .filter_syntax import parse_pair as parse_pair
from .filter_syntax import parse_value as parse_value
from .filter_syntax import parse_when as parse_when
from .filter_where import build_where as build_where
from .filter_where import normalise_where as normalise_where
from .filter_where import parse_where_json as parse_where_json
from .options import MAX_DATE_CHARS, OPTIONS, spelled

if TYPE_CHECKING:
    from .request import SearchArgs


def _stored(pair: tuple[str, str]) -> tuple[str, str]:
    return stored_key(pair[0]), pair[1]  # an older bookkeeping name means today's


def _echo(given: str, at: int | None) -> str:
    """A date option as given, a span with the day it meant: `2y (2024-12-06)`."""
    if at is None or not is_span(given):
        return given
    return f"{given.strip()} ({dt.datetime.fromtimestamp(at, dt.UTC).date().isoformat()})"


def _where_json(where_json: str | Mapping[str, Any] | None, option: str) -> Where | None:
    """A `where_json` as text (parsed) or as an object (checked), normalised; None if empty."""
    if isinstance(where_json, str) and where_json.strip():
        return parse_where_json(where_json, option)
    if isinstance(where_json, Mapping) and where_json:
        check_where_bounds(where_json)
        return normalise_where(where_json)
    if where_json is not None and not isinstance(where_json, str | Mapping):
        raise ConfigError(f"{option} must be a JSON object")
    return None


def filters_from_options(
    args: SearchArgs,
    default_date_fields: Sequence[str] = DEFAULT_DATE_FIELDS,
    today: dt.date | None = None,
) -> Filters:
    """`Filters` from a request as a surface received it (`request.SearchArgs`: CLI flags,
    REST or MCP arguments), each repeatable option bounded by its declaration
    (`options.OPTIONS`) before anything parses it. An error names the option as the caller
    spells it (`args.spelling`): `--where-json` to the CLI, `where_json` to REST and MCP.
    `default_date_fields`: the settings' (when `args` names none); `today`: the day a span
    such as `--after 2y` counts back from (the caller reads the clock)."""

    def name(option: str) -> str:
        return spelled(option, args.spelling)

    date_fields = args.date_fields or tuple(default_date_fields)
    for option in OPTIONS:
        if option.many:
            values = date_fields if option.name == "date_fields" else getattr(args, option.name)
            check_options(name(option.name), values, option.max_chars or MAX_VALUE_CHARS)
    after, before = args.after, args.before
    for key, value in (("after", after), ("before", before)):
        if value is not None and (not isinstance(value, str) or len(value) > MAX_DATE_CHARS):
            raise ConfigError(f"{name(key)} takes a date like 2024-05-31")
    pairs = []
    for text in args.where:
        key, value = parse_pair(text, name("where"))
        pairs.append((key, parse_value(value)))
    parsed_json = _where_json(args.where_json, name("where_json"))
    fields = tuple(check_key(f, name("date_fields")) for f in date_fields if f)
    if (after or before) and not fields:
        raise ConfigError(
            f"{name('after')}/{name('before')} need at least one date field ({name('date_fields')})"
        )
    low = parse_when(after, name("after"), today) if after else None
    high = parse_when(before, name("before"), today) if before else None
    if low is not None and high is not None and low >= high:
        raise ConfigError(f"{name('after')} {after} is not before {name('before')} {before}")
    for phrase in args.phrases:
        phrase_query(phrase, name("phrases"))
    if any(p for p in args.paths):
        match_paths((), [p for p in args.paths if p], name("paths"))  # a bad pattern: said now
    for target in args.links_to:
        if not target.strip():
            raise ConfigError(
                f"{name('links_to')} takes a URL, a path or a note title "
                f"(1-{MAX_TARGET_CHARS} chars)"
            )
    echo = {k: _echo(v, at) for k, v, at in (("after", after, low), ("before", before, high)) if v}
    return Filters(
        sources=tuple(s for s in args.sources if s),
        where=tuple(pairs),
        where_json=parsed_json,
        tags=tuple(t for t in args.tags if t),
        tags_all=args.tags_all,
        after=low,
        before=high,
        date_fields=fields or DEFAULT_DATE_FIELDS,
        paths=tuple(p for p in args.paths if p),
        phrases=tuple(p for p in args.phrases if p.strip()),
        matches=tuple(_stored(parse_pair(m, name("matches"))) for m in args.matches),
        links_to=tuple(dict.fromkeys(t.strip() for t in args.links_to)),
        echo=echo,
    )


__all__ = [
    "DEFAULT_DATE_FIELDS",
    "Filters",
    "Where",
    "build_where",
    "filters_from_options",
    "is_span",
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
