"""One search request from any surface's arguments: CLI flags, REST query, MCP arguments.

Design notes: docs/internals.md, `retrieve/request.py`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import Field, field, make_dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ConfigError
from .filters import Filters, filters_from_options
from .options import OPTIONS, QUERY, SPELLINGS, Option, spelled, text_problem
from .results import FEEDBACK_FUSION, SearchRequest

if TYPE_CHECKING:
    from ..config.settings import Settings


def _of(cls: Any, query: str, **given: Any) -> Any:
    """From keyword arguments as surfaces hold them: None means the default, and any
    sequence becomes a tuple."""
    fields: dict[str, Any] = {}
    for name, value in given.items():
        if value is None:
            continue
        if isinstance(value, Sequence) and not isinstance(value, str):
            value = tuple(value)
        fields[name] = value
    return cls(query, **fields)


#: The type of an option's value, by its kind (a repeatable one's: a tuple of text).
_TYPES: dict[str, Any] = {"text": str, "int": int, "float": float, "bool": bool}
_TYPES |= {"choice": str, "json": str | Mapping[str, Any]}


def _field(option: Option) -> tuple[str, Any, Any]:
    kind = tuple[str, ...] if option.many else _TYPES[option.kind]
    kind = kind | None if option.default is None else kind
    return option.name, kind, field(default=option.default)


if TYPE_CHECKING:

    class SearchArgs:  # what mypy sees: the options' fields are read as Any
        __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
        query: str
        spelling: str

        def __init__(self, query: str, **options: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...
        @classmethod
        def of(cls, query: str, **given: Any) -> SearchArgs: ...

else:
    SearchArgs = make_dataclass(
        "SearchArgs",
        [("query", str), *(_field(o) for o in OPTIONS), ("spelling", str, field(default="cli"))],
        namespace={
            "of": classmethod(_of),
            "__module__": __name__,
            "__doc__": "A search as a surface received it (strings, lists and flags, not yet "
            "parsed): `query`, one field per option of `OPTIONS` (its name, type and default, "
            "made from it), and `spelling`: how the caller writes them, for errors.",
        },
        frozen=True,
        slots=True,
    )


def utc_today() -> dt.date:
    """Today's date in UTC: the day a span such as `--after 2y` counts back from."""
    return dt.datetime.now(dt.UTC).date()


def build_request(
    args: SearchArgs,
    default_date_fields: Sequence[str],
    today: Callable[[], dt.date] = utc_today,
) -> SearchRequest:
    """The engine's request: the query checked, the filters parsed (`ConfigError` on bad
    input, which every surface reports as bad usage). `today`: the clock of the relative
    dates (`--after 2y`), read once, here, for every surface."""
    if not isinstance(args.query, str) or not args.query.strip():
        raise ConfigError("the query is empty")
    check_values(args)
    if args.feedback and args.mode != "hybrid":
        raise ConfigError(
            f"{spelled('feedback', args.spelling)} works with the hybrid mode only (it asks "
            f"the dense and keyword lists again and fuses them), not {args.mode}: drop it "
            f"or use {spelled('mode', args.spelling)} hybrid"
        )
    filters = filters_from_options(args, default_date_fields, today())
    return SearchRequest(
        args.query,
        mode=args.mode,
        k=args.k,
        filters=filters,
        collections=args.collections,
        all_collections=args.all_collections,
        per_doc=args.per_doc,
        sort=args.sort,
        group_by=args.group_by,
        rerank=args.rerank,
        fusion=FEEDBACK_FUSION if args.feedback else None,
        min_score=args.min_score,
        latest=args.latest,
    )


def check_values(args: SearchArgs) -> None:
    """Each single-valued option of `args` against its declaration (`options.OPTIONS`):
    its type, bound and choices, so that the Python API and the owner's wire keep the bounds
    the surfaces' parsers keep (the repeatable ones: `filters.filters_from_options`)."""
    if args.spelling not in SPELLINGS:
        raise ConfigError(f"spelling must be one of {', '.join(SPELLINGS)}, not {args.spelling!r}")
    for option in OPTIONS:
        value = getattr(args, option.name)
        if option.many or option.kind == "json" or value is None:
            continue
        name = option.spelled(args.spelling)
        if option.kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(f"{name} takes true or false, not {value!r}")
        elif option.kind in ("int", "float"):
            whole = option.kind == "int"
            if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
                raise ConfigError(f"{name} takes a number, not {value!r}")
            if not option.low <= value <= option.high:  # type: ignore[operator]
                low, high = option.low, option.high
                if whole:
                    low, high = int(low or 0), int(high or 0)
                raise ConfigError(f"{name} must be between {low} and {high}, not {value}")
        elif option.kind == "choice":
            if value not in option.choices:
                raise ConfigError(f"{name} takes one of {', '.join(option.choices)}, not {value!r}")
        elif not isinstance(value, str) or len(value) > (option.max_chars or 0):
            raise ConfigError(f"{name} takes text of at most {option.max_chars} characters")


def check_query(query: str, spelling: str) -> str:
    """A search's query within its bound (`options.QUERY`), or `ConfigError` naming it as
    the caller spells it (`QUERY`, `q`, `query`). Every surface's search calls this on what
    it was given; an `ask`'s question has its own, longer bound (`answer.ask`)."""
    problem = text_problem(QUERY, query, spelling)
    if problem is not None:
        raise ConfigError(problem)
    return query


def search_request(args: SearchArgs, settings: Settings) -> SearchRequest:
    """The search request of any surface's arguments (see `build_request`)."""
    return build_request(args, settings.date_field_names)


def make_filters(settings: Settings, **options: Any) -> Filters:
    """`Filters` from search options by their names (`SearchArgs`' fields), the settings'
    date fields by default (see `retrieve.filters.filters_from_options`)."""
    return filters_from_options(SearchArgs.of("", **options), settings.date_field_names)
