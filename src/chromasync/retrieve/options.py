"""Every search option, declared once: name, type, default, bound, help, and its spellings.

Design notes: docs/internals.md, `retrieve/options.py`.
"""

from __future__ import annotations

from ..versions import MAX_TARGET_CHARS  # constants only: the one import here

#: What an option's `kind` may be: text, a whole number, a number, true/false, one of
#: `choices`, or a JSON object (given as its text on the CLI and in a query string).
KINDS = ("text", "int", "float", "bool", "choice", "json")
#: The spellings: the CLI's flag, REST's query parameter, the JSON name (bodies, MCP, wire).
SPELLINGS = ("cli", "query", "json")

#: Values of each repeatable option (source, where, tag, date field, path, ...).
MAX_OPTION_VALUES = 64
#: Characters of one option value (a key, a value, a pattern, a phrase).
MAX_VALUE_CHARS = 1_000
#: Characters of a `where_json` text.
MAX_WHERE_JSON_CHARS = 16_384
#: Characters of an `after`/`before` date.
MAX_DATE_CHARS = 64
#: Characters of a `group_by` field.
MAX_FIELD_CHARS = 200
#: The most hits a request may ask for (`k`), on every surface.
MAX_K = 1_000
#: The most documents `latest` may ask for.
MAX_LATEST = 100
#: Characters of a search query; of a question (`ask`).
MAX_QUERY_CHARS = 2_000
MAX_QUESTION_CHARS = 4_000


class Option:
    """One search option (see the module docstring for each field)."""

    __slots__ = (
        "choices",
        "default",
        "flag",
        "help",
        "high",
        "kind",
        "low",
        "many",
        "max_chars",
        "max_items",
        "metavar",
        "name",
        "negative",
        "param",
    )

    name: str
    kind: str
    default: object
    help: str
    flag: str | None
    param: str
    many: bool
    low: float | None
    high: float | None
    max_chars: int | None
    max_items: int | None
    choices: tuple[str, ...]
    negative: str | None
    metavar: str | None

    def __init__(
        self,
        name: str,
        kind: str,
        default: object,
        help: str,
        *,
        flag: str | None,
        param: str | None = None,
        many: bool = False,
        low: float | None = None,
        high: float | None = None,
        max_chars: int | None = None,
        max_items: int | None = None,
        choices: tuple[str, ...] = (),
        negative: str | None = None,
        metavar: str | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"option {name}: unknown kind {kind!r}")
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "kind", kind)
        set_(self, "default", default)
        set_(self, "help", help)
        set_(self, "flag", flag)
        set_(self, "param", param or name)
        set_(self, "many", many)
        set_(self, "low", low)
        set_(self, "high", high)
        set_(self, "max_chars", max_chars)
        if many and max_items is None:
            max_items = MAX_OPTION_VALUES
        set_(self, "max_items", max_items)
        set_(self, "choices", choices)
        set_(self, "negative", negative)
        set_(self, "metavar", metavar)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Option is frozen: cannot set {name}")

    def __repr__(self) -> str:
        return f"Option({self.name!r}, {self.kind!r})"

    def spelled(self, spelling: str) -> str:
        """The option as a caller of this spelling writes it (`SPELLINGS`)."""
        if spelling == "cli" and self.flag:
            return self.flag
        if spelling == "query":
            return self.param
        return self.name


def _text(
    name: str, help: str, flag: str, *, max_chars: int = MAX_VALUE_CHARS, metavar: str | None = None
) -> Option:
    return Option(name, "text", None, help, flag=flag, max_chars=max_chars, metavar=metavar)


def _many(
    name: str,
    help: str,
    flag: str,
    param: str,
    *,
    max_chars: int = MAX_VALUE_CHARS,
    metavar: str | None = None,
) -> Option:
    return Option(
        name,
        "text",
        (),
        help,
        flag=flag,
        param=param,
        many=True,
        max_chars=max_chars,
        max_items=MAX_OPTION_VALUES,
        metavar=metavar,
    )


#: Every search option, in the order the CLI's help lists them.
OPTIONS: tuple[Option, ...] = (
    Option(
        "all_collections",
        "bool",
        False,
        "Search every collection of the store.",
        flag="--all-collections",
    ),
    Option(
        "mode",
        "choice",
        "hybrid",
        "Dense (meaning), keyword (BM25) or both fused.",
        flag="--mode",
        choices=("hybrid", "dense", "keyword"),
    ),
    Option(
        "feedback",
        "bool",
        None,
        "Hybrid only: search again toward the best 3 documents (pseudo-relevance "
        "feedback); better rankings on SciFact and NFCorpus, about twice the time. "
        "Default: off for search, on for ask's hybrid retrieval.",
        flag="--feedback",
        negative="--no-feedback",
    ),
    Option("k", "int", 10, "Number of hits.", flag="--k", low=1, high=MAX_K),
    _many("sources", "Only this source (repeatable: any).", "--source", "source"),
    _many(
        "where",
        "Metadata equality, typed like YAML (repeatable: all). Quote to force text.",
        "--where",
        "where",
        metavar="KEY=VALUE",
    ),
    Option(
        "where_json",
        "json",
        None,
        'A Chroma where filter, e.g. \'{"year": {"$gte": 2020}}\'.',
        flag="--where-json",
        max_chars=MAX_WHERE_JSON_CHARS,
        metavar="JSON",
    ),
    _many("tags", "Front-matter tag (repeatable).", "--tag", "tag"),
    Option(
        "tags_all",
        "bool",
        False,
        "Whether every --tag or any of them must be present.",
        flag="--tags-all",
        negative="--tags-any",
    ),
    _text(
        "after",
        "Front-matter date on or after DATE (2024-05-31, or back from today: 2y, 18m, 3w, 90d).",
        "--after",
        max_chars=MAX_DATE_CHARS,
        metavar="DATE",
    ),
    _text(
        "before",
        "Front-matter date before DATE (as --after).",
        "--before",
        max_chars=MAX_DATE_CHARS,
        metavar="DATE",
    ),
    _many(
        "date_fields",
        "Front-matter date key(s) for --after/--before/--sort date.",
        "--date-field",
        "date_field",
    ),
    _many(
        "paths",
        "Only paths matching this git-wildmatch pattern (repeatable: any).",
        "--path",
        "path",
        metavar="GLOB",
    ),
    _many(
        "phrases",
        "Only chunks containing these words in this order (case-blind).",
        "--phrase",
        "phrase",
    ),
    _many(
        "matches",
        "Only chunks whose metadata FIELD contains SUBSTRING (case-blind).",
        "--match",
        "match",
        metavar="FIELD=SUBSTRING",
    ),
    _many(
        "links_to",
        "Only chunks linking to this URL (or under it), path or note title (repeatable: all).",
        "--links-to",
        "links_to",
        max_chars=MAX_TARGET_CHARS,
        metavar="TARGET",
    ),
    # --collection is also the collection setting: `cli.common.store_options` declares it.
    _many("collections", "Only these collections (repeatable).", "--collection", "collection"),
    Option(
        "per_doc",
        "bool",
        False,
        "Best chunk per document; the rest collapsed.",
        flag="--per-doc",
    ),
    Option(
        "min_score",
        "float",
        None,
        "Only hits whose relevance (0-1, shown with each hit) is at least X.",
        flag="--min-score",
        low=0,
        high=1,
        metavar="X",
    ),
    Option(
        "sort",
        "choice",
        "rank",
        "Order of the hits: by rank, or the relevant ones (above --min-score, else above "
        "half the best's relevance) newest first.",
        flag="--sort",
        choices=("rank", "date"),
    ),
    Option(
        "latest",
        "int",
        None,
        "Only the N newest documents that pass the filters (by --date-field), whatever their "
        "rank: each one's best chunk, newest first, then their next-best up to --k.",
        flag="--latest",
        low=1,
        high=MAX_LATEST,
        metavar="N",
    ),
    _text(
        "group_by",
        "Group the relevant hits (as --sort date takes them) by a metadata field, source, "
        "collection or path:N (the N-th folder).",
        "--group-by",
        max_chars=MAX_FIELD_CHARS,
        metavar="FIELD",
    ),
    # true by default: the CLI's flag is the negative one (`--rerank FOLDER` is the setting).
    Option(
        "rerank",
        "bool",
        True,
        "Do not rerank even if a model is configured.",
        flag=None,
        negative="--no-rerank",
    ),
)

#: The options by name (`Option.name`).
BY_NAME: dict[str, Option] = {option.name: option for option in OPTIONS}


#: The query itself: no option (every request has one), but declared and bounded alike on
#: every surface; spelled as the CLI's argument (`QUERY`, in `flag`), REST's `q`, the JSON
#: `query`. Each surface checks it with `text_problem` before anything reads it.
QUERY = Option(
    "query", "text", None, "The query.", flag="QUERY", param="q", max_chars=MAX_QUERY_CHARS
)


def text_problem(option: Option, value: str, spelling: str) -> str | None:
    """What is wrong with a text value of `option` (over its `max_chars`), as a caller of
    `spelling` names it; None when nothing is: the one message of every text bound."""
    if option.max_chars is not None and len(value) > option.max_chars:
        return f"{option.spelled(spelling)} takes text of at most {option.max_chars} characters"
    return None


def option(name: str) -> Option:
    """The option of this name (`KeyError` for none)."""
    return BY_NAME[name]


def spelled(name: str, spelling: str) -> str:
    """How a caller of `spelling` ("cli", "query", "json") writes the option `name`; a name
    that is no option is returned as it is."""
    found = BY_NAME.get(name)
    return found.spelled(spelling) if found is not None else name


__all__ = [
    "BY_NAME",
    "KINDS",
    "MAX_K",
    "MAX_OPTION_VALUES",
    "MAX_QUERY_CHARS",
    "MAX_QUESTION_CHARS",
    "MAX_VALUE_CHARS",
    "MAX_WHERE_JSON_CHARS",
    "OPTIONS",
    "QUERY",
    "SPELLINGS",
    "Option",
    "option",
    "spelled",
    "text_problem",
]
