"""YAML front matter: parsed safely, failing closed, and flattened into Chroma metadata.

Design notes: docs/internals.md, `corpus/frontmatter.py`.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..metakeys import BOOKKEEPING_KEYS, CONTEXT_KEY, OWNER_KEY
from ..records import MetaValue

#: Metadata keys chromasync writes itself; front matter cannot override them (nor set the
#: older names of its bookkeeping keys: `--where file_hash=...` still means the bookkeeping).
RESERVED_KEYS = frozenset(
    {
        *BOOKKEEPING_KEYS,
        *BOOKKEEPING_KEYS.values(),
        "source",
        "source_kind",
        "path",
        "chunk_index",
        "chunk_count",
        "heading",
        "start_line",
        "end_line",
        "symbol",
        "language",
        "document_id",
        "indexed_commit_sha",
        "doc_format",
        "links",
        "sidecar",
        "sidecar_mismatch",
        OWNER_KEY,
        CONTEXT_KEY,
        "ref_doc_id",
        "page_starts",
    }
)
MAX_VALUE_CHARS = 4096
MAX_DEPTH = 3
#: The most values (a list's items each count) and characters (keys and values) kept of a
#: note's front matter: each of its chunks carries them all (512 values on 9,000 chunks took
#: 3.6 GB and 96 s to write), and a record of more than about 5,400 values breaks a Chroma
#: collection for good (every later write and read fails).
MAX_VALUES = 64
MAX_META_CHARS = 8 * 1024
_TRUE = {"true", "yes", "on", "1", "y"}
_FALSE = {"false", "no", "off", "0", "n"}
_CLOSE = re.compile(r"^(---|\.\.\.)[ \t]*$")
_OPEN = re.compile(r"---[ \t]*(\n|$)")
#: A string that is an ISO 8601 date or date-time (what JSON and JavaScript writers quote):
#: `2025-09-15`, `2025-09-15T10:30`, `2025-09-15 10:30:00.5+02:00`, `2025-09-15T10:30:00Z`.
_ISO_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?"
)


class FrontMatterError(ValueError):
    """The front matter block is present but cannot be trusted."""


@dataclass(frozen=True, slots=True)
class FrontMatter:
    data: Mapping[str, Any]
    body_start_line: int  # 1-based line after the closing fence


def split_front_matter(text: str) -> FrontMatter | None:
    """Parse the block at the start of `text` (already BOM-free, LF line endings)."""
    if not _OPEN.match(text):
        return None
    lines = text.split("\n")
    for index in range(1, len(lines)):
        if _CLOSE.match(lines[index]):
            block = "\n".join(lines[1:index])
            break
    else:
        raise FrontMatterError("front matter has no closing '---'")
    import yaml  # (lazily: an unchanged re-run never parses front matter)

    from ..config.safeyaml import load_yaml, yaml_problem

    try:
        data, _ = load_yaml(block, aliases=False)  # no aliases: a merge may hide `private`
    except yaml.YAMLError as exc:
        raise FrontMatterError(f"front matter is not valid YAML: {yaml_problem(exc, 1)}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontMatterError("front matter is not a mapping")
    return FrontMatter(data, index + 2)


def is_private(data: Mapping[Any, Any], keys: tuple[str, ...] = ("private",)) -> bool:
    """True when `private` is true-ish or `publish` false-ish (keys compared case-blind)."""
    wanted = {k.strip().lower() for k in keys}
    for key, value in data.items():
        name = str(key).strip().lower()
        if name in wanted and _truthy(value) is True:
            return True
        if name == "publish" and _truthy(value) is False:
            return True
    return False


def _truthy(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
    return None


def flatten_metadata(data: Mapping[Any, Any]) -> tuple[dict[str, MetaValue], int]:
    """Chroma-safe metadata from front matter, and how many values were dropped.

    Scalars stay as they are; dates become ISO strings plus `<key>_ts` (epoch seconds, for
    range filters); lists of scalars become lists of strings (`$contains` works on them),
    in their order (a YAML `!!set`: sorted, so that the metadata does not change per run);
    nested mappings flatten to dotted keys; reserved, empty, `$`- or `chroma:`-prefixed
    keys, binary values, values over 4,096 characters and values past `MAX_VALUES` or
    `MAX_META_CHARS` in all are dropped and counted (a null or an empty list is dropped
    uncounted: it holds nothing).
    """
    out: dict[str, MetaValue] = {}
    dropped = values = chars = 0

    def keep(items: dict[str, MetaValue]) -> None:
        nonlocal dropped, values, chars
        flat = [v for item in items.values() for v in (item if isinstance(item, list) else [item])]
        size = sum(len(k) for k in items) + sum(len(str(v)) for v in flat)
        if values + len(flat) > MAX_VALUES or chars + size > MAX_META_CHARS:
            dropped += 1
            return
        values, chars = values + len(flat), chars + size
        out.update(items)

    def put(key: str, value: Any, depth: int) -> None:
        nonlocal dropped
        if not key or key.startswith(("$", "chroma:", "chromasync_")) or key in RESERVED_KEYS:
            dropped += 1
            return
        if isinstance(value, Mapping):
            if depth >= MAX_DEPTH:
                dropped += 1
                return
            for sub_key, sub_value in value.items():
                put(f"{key}.{sub_key}", sub_value, depth + 1)
            return
        if value is None or (isinstance(value, list | tuple | set) and not value):
            return  # nothing to keep, so nothing left out
        if isinstance(value, list | tuple | set):
            items = [_scalar(v) for v in value]
            if any(i is None for i in items):
                dropped += 1
                return
            strings = [str(i) for i in items]
            keep({key: sorted(strings) if isinstance(value, set) else strings})  # (hash order)
            return
        if isinstance(value, str) and len(value) <= 40:
            parsed = iso_date(value)
            if parsed is not None:  # a quoted date is a date: the text as written, and `_ts`
                keep({key: value.strip(), f"{key}_ts": int(parsed.timestamp())})
                return
        if isinstance(value, dt.datetime | dt.date):
            moment = (
                value
                if isinstance(value, dt.datetime)
                else dt.datetime(value.year, value.month, value.day)
            )
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.UTC)
            keep({key: value.isoformat(), f"{key}_ts": int(moment.timestamp())})
            return
        scalar = _scalar(value)
        if scalar is None:
            dropped += 1
            return
        keep({key: scalar})

    for raw_key, raw_value in data.items():
        put(str(raw_key).strip(), raw_value, 0)
    return out, dropped


def iso_date(text: str) -> dt.datetime | None:
    """The moment an ISO 8601 date or date-time string names (UTC when it names no zone),
    or None when `text` is not one (`2025-09-15`, `2025-09-15T10:30:00Z`...)."""
    text = text.strip()
    if not _ISO_DATE.fullmatch(text):
        return None
    try:
        moment = dt.datetime.fromisoformat(text.replace(",", "."))
    except ValueError:  # 2025-02-30, 25:00...
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def unreadable_dates(metadata: Mapping[str, Any], fields: tuple[str, ...]) -> list[str]:
    """The date fields of flattened front matter whose value is not a date (no `_ts`): a
    counted warning at ingest (`date-unreadable`), the file is indexed all the same."""
    return [
        name
        for name in fields
        if metadata.get(name) not in (None, "") and f"{name}_ts" not in metadata
    ]


def _scalar(value: Any) -> str | int | float | bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return value
        return str(value) if value.bit_length() <= 3 * MAX_VALUE_CHARS else None  # (~3,700 digits)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value if len(value) <= MAX_VALUE_CHARS else None
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return None
