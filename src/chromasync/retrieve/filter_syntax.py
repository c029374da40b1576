"""The user's filter language: the `Filters` record, its values, keys and dates, and the
bounds on untrusted input.

Design notes: docs/internals.md, `retrieve/filter_syntax.py`.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeAlias

from ..errors import ConfigError
from ..records import Scalar
from .options import MAX_OPTION_VALUES as MAX_OPTION_VALUES  # the bounds of `options`
from .options import MAX_VALUE_CHARS as MAX_VALUE_CHARS
from .options import MAX_WHERE_JSON_CHARS as MAX_WHERE_JSON_CHARS

Where: TypeAlias = dict[str, Any]

DEFAULT_DATE_FIELDS = ("date", "published_at")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")

#: `$and`/`$or` nested in one another.
MAX_WHERE_DEPTH = 8
#: Clauses of one `$and`/`$or`, and values of one `$in`/`$nin`.
MAX_WHERE_LIST = 256
#: Conditions (and `$in` values) in one `where` in all.
MAX_WHERE_TERMS = 512


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
    def is_empty(self) -> bool:
        return self.as_json() == {}

    def as_record(self) -> dict[str, Any]:
        """Every field, JSON-ready (REST's `filter_record`)."""
        return asdict(self)  # tuples as JSON arrays

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


#: A span back from today: `2y`, `18m`, `3w`, `90d` (years, months, weeks, days).
_SPAN = re.compile(r"(\d{1,4})\s*([ymwd])", re.IGNORECASE)


def parse_when(text: str, option: str, today: dt.date | None = None) -> int:
    """`YYYY-MM-DD` or an ISO date-time (naive means UTC, as in front matter) to epoch s; or
    a span back from `today` (`2y`, `18m`, `3w`, `90d`: that day at 00:00 UTC; a month or
    year back from a day its month lacks is that month's last day). `today` is given by
    the caller (`request.build_request` reads the clock): a span without it is refused."""
    span = _SPAN.fullmatch(text.strip())
    if span is not None:
        if today is None:
            raise ConfigError(f"{option} {text!r}: a span back from today needs today's date")
        day = _back(today, int(span.group(1)), span.group(2).lower(), text, option)
        return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())
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
            f"{option} takes a date like 2024-05-31 or 2024-05-31T12:00, or a span back from "
            f"today like 2y, 18m, 3w or 90d; got {text!r}"
        ) from exc
    return int(moment.timestamp())


def is_span(text: str | None) -> bool:
    """Whether a date option's text is a span back from today (`2y`): its day moves daily."""
    return text is not None and _SPAN.fullmatch(text.strip()) is not None


def _back(today: dt.date, count: int, unit: str, text: str, option: str) -> dt.date:
    """`today` moved `count` units (y, m, w, d) back; ConfigError before year 1."""
    try:
        if unit in "wd":
            return today - dt.timedelta(days=count * (7 if unit == "w" else 1))
        months = today.year * 12 + today.month - 1 - count * (12 if unit == "y" else 1)
        year, month = divmod(months, 12)
        last = calendar.monthrange(year, month + 1)[1]
        return dt.date(year, month + 1, min(today.day, last))
    except (ValueError, OverflowError) as exc:
        raise ConfigError(f"{option} {text!r} reaches back before the year 1") from exc


def json_depth(text: str) -> int:
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


def check_options(option: str, values: Sequence[str], max_chars: int = MAX_VALUE_CHARS) -> None:
    if len(values) > MAX_OPTION_VALUES:
        raise ConfigError(f"{option} is given {len(values)} times; at most {MAX_OPTION_VALUES}")
    for value in values:
        if not isinstance(value, str):
            raise ConfigError(f"{option} takes text, got {type(value).__name__}")
        if len(value) > max_chars:
            raise ConfigError(f"{option}: a value is longer than {max_chars} characters")
