"""One search request from any surface's arguments: CLI flags, REST query, MCP arguments.

Every surface fills a `SearchArgs` with what it was given, under the same names (one field
per option declared in `options.OPTIONS`, and `spelling`: how the caller writes them, for
errors), and `build_request` turns it into the engine's `SearchRequest` (each value checked
against its declaration by `check_values`; filters parsed and bounded in
`filters.filters_from_options`). `SearchArgs` as JSON is what crosses the owner's wire.
The CLI's `search` and `ask`, REST's `/search` and `/ask`, and MCP's `search` and `ask` all
go through here, so an option means the same everywhere.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .filters import Filters, filters_from_options
from .options import OPTIONS, QUERY, SPELLINGS, spelled, text_problem
from .results import FEEDBACK_FUSION, SearchRequest

if TYPE_CHECKING:
    from ..config.settings import Settings


@dataclass(frozen=True, slots=True)
class SearchArgs:
    """A search as a surface received it (strings, lists and flags, not yet parsed)."""

    query: str
    mode: str = "hybrid"
    feedback: bool = False  # pseudo-relevance feedback (hybrid only)
    k: int = 10
    sources: tuple[str, ...] = ()
    where: tuple[str, ...] = ()
    where_json: str | Mapping[str, Any] | None = None
    tags: tuple[str, ...] = ()
    tags_all: bool = False
    after: str | None = None
    before: str | None = None
    date_fields: tuple[str, ...] = ()  # () = the settings' date fields
    paths: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()
    matches: tuple[str, ...] = ()
    links_to: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()
    all_collections: bool = False
    per_doc: bool = False
    sort: str = "rank"
    group_by: str | None = None
    rerank: bool = True
    min_score: float | None = None  # a relevance floor, 0-1
    latest: int | None = None  # only the N newest documents passing the filters
    #: How the caller spells options, for errors: "cli", "query" or "json" (`options`).
    spelling: str = "cli"

    @classmethod
    def of(cls, query: str, **given: Any) -> SearchArgs:
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
    filters = filters_from_options(
        sources=args.sources,
        where=args.where,
        where_json=args.where_json,
        tags=args.tags,
        tags_all=args.tags_all,
        after=args.after,
        before=args.before,
        date_fields=args.date_fields or tuple(default_date_fields),
        paths=args.paths,
        phrases=args.phrases,
        matches=args.matches,
        links_to=args.links_to,
        spelling=args.spelling,
        today=today(),
    )
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
    """`Filters` from surface arguments (see `retrieve.filters.filters_from_options`)."""
    options.setdefault("date_fields", settings.date_field_names)
    return filters_from_options(**options)
