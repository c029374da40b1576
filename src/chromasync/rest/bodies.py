"""What a request may carry (the trust boundary): the JSON bodies of the POST routes, strict
pydantic models with a bound on every field, and the query parameters of `GET /search`.

The search options' types and bounds are made from their declaration (`retrieve.options`),
here once for REST's query string and bodies and for MCP's tools (`option_type`)."""

from __future__ import annotations

import inspect
from typing import Annotated, Any, Literal

from fastapi import Query
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model

from .. import api
from ..config.labels import LABEL_MAX, label_problem
from ..retrieve.options import BY_NAME, OPTIONS, Option
from ..retrieve.request import check_query


def valid_label(value: str) -> str:
    """`value`, a source label by the config file's rule (else a `ValueError` saying why)."""
    problem = label_problem(value)
    if problem is not None:
        raise ValueError(f"source label {problem}")
    return value


#: A source label, by the config file's rule (`config.labels.label_problem`).
Label = Annotated[str, AfterValidator(valid_label)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReindexBody(_Body):
    source: Label | None = Field(default=None, max_length=LABEL_MAX)
    sources: list[Annotated[Label, Field(max_length=LABEL_MAX)]] = Field(
        default_factory=list, max_length=1000
    )
    checksum: bool = False
    allow_mass_delete: bool = False


class SourceBody(_Body):
    path: str = Field(max_length=8192)
    label: Label | None = Field(default=None, max_length=LABEL_MAX)
    kind: str = Field(default="notes", pattern=r"^[a-z][a-z0-9_-]{0,31}$")


# -- the search options (`retrieve.options`): one pydantic type each, for REST and MCP ------


def option_type(option: Option, *, query: bool = False) -> Any:
    """The pydantic type of a declared search option: as a query string parameter (`query`:
    FastAPI's `Query`), else as a JSON body field or an MCP argument. Pydantic checks the
    type, a number's bounds and the choices; the lengths and counts are checked once, by
    the request builder (`retrieve.request`, `retrieve.filters`), whose error names the
    option as the caller spells it (a 400, an MCP tool error, the CLI's exit 2)."""
    kind: Any
    constraint: dict[str, Any] = {"description": option.help}
    if option.kind == "bool":
        kind = bool if option.default is not None else bool | None
    elif option.kind in ("int", "float"):
        kind = int if option.kind == "int" else float
        constraint |= {"ge": option.low, "le": option.high}
        if option.default is None:
            kind = kind | None
    elif option.kind == "choice":
        kind = Literal[option.choices]
    elif option.many:
        kind = list[str]
    elif option.kind == "json":
        kind = str | None if query else str | dict[str, Any] | None
    else:
        kind = str | None
    return Annotated[kind, Query(**constraint) if query else Field(**constraint)]


def option_default(option: Option) -> Any:
    """An option's default as a parameter's (a list for a repeatable one)."""
    return [] if option.many else option.default


#: Each option's pydantic type as a body field or MCP argument.
OPTION_FIELDS: dict[str, tuple[Any, Any]] = {
    o.name: (option_type(o), Field(default_factory=list) if o.many else o.default) for o in OPTIONS
}
_SPELLING = Literal["cli", "query", "json"]

_SPELLED: dict[str, Any] = {
    "spelling": (_SPELLING, Field(default="json", description="How errors spell options."))
}
_QUERY: dict[str, Any] = {  # its length: `retrieve.options.QUERY`, checked by `check_query`
    "query": (str, Field(min_length=1, description="The query."))
}
_QUESTION: dict[str, Any] = {
    "question": (str, Field(max_length=1_000_000, description="The question.")),
    "fallback": (Literal["none", "extractive"] | None, None),
}
_model: Any = create_model  # fields from a dict: pydantic's overloads cannot type them
_SearchFields: Any = _model("_SearchFields", __base__=_Body, **_QUERY, **_SPELLED, **OPTION_FIELDS)
_AskFields: Any = _model("_AskFields", __base__=_Body, **_QUESTION, **_SPELLED, **OPTION_FIELDS)


def _args(query: str, fields: dict[str, Any]) -> api.SearchArgs:
    return api.SearchArgs.of(
        query, **{k: v for k, v in fields.items() if k in BY_NAME or k == "spelling"}
    )


class SearchBody(_SearchFields):  # type: ignore[misc]
    """`POST /search`: the query and every search option under its JSON name (lists as
    lists): the request record (`retrieve.request.SearchArgs`) as JSON, the owner's wire."""

    def search_args(self) -> api.SearchArgs:
        fields = self.model_dump()
        return _args(check_query(fields.pop("query"), fields["spelling"]), fields)


class AskBody(_AskFields):  # type: ignore[misc]
    """`POST /ask`: the question and the search options of `POST /search`.

    The question's own limit (`retrieve.options.MAX_QUESTION_CHARS`) is checked by the answer
    layer, so that an over-long question is a 400 that says so."""

    def search_args(self) -> api.SearchArgs:
        fields = self.model_dump()
        return _args(fields.pop("question"), fields)


def _search_query(**given: Any) -> api.SearchArgs:
    q = check_query(given.pop("q"), "query")
    return api.SearchArgs.of(q, spelling="query", **{_BY_PARAM[k]: v for k, v in given.items()})


_BY_PARAM = {o.param: o.name for o in OPTIONS}
_search_query.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter(
            "q",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[str, Query(min_length=1, description="The query.")],
        ),
        *(
            inspect.Parameter(
                o.param,
                inspect.Parameter.KEYWORD_ONLY,
                default=option_default(o),
                annotation=option_type(o, query=True),
            )
            for o in OPTIONS
        ),
    ],
    return_annotation=api.SearchArgs,
)
#: The query parameters of `GET /search` (every search option, by its `param` name; lists
#: repeated, `?source=a&source=b`), as one request's arguments (a FastAPI dependency).
search_query = _search_query


class CommandLine(BaseModel):
    """What the search daemon's stdlib client sends (`fastpath.daemon_search`): its
    `search` command line, folder, environment (`CHROMASYNC_*`, `HOME`, the terminal's),
    and which of its stdout and stderr are terminals."""

    argv: Annotated[list[Annotated[str, Field(max_length=100_000)]], Field(max_length=1000)]
    cwd: Annotated[str, Field(min_length=1, max_length=4096)]
    env: Annotated[dict[str, Annotated[str, Field(max_length=100_000)]], Field(max_length=500)]
    tty: tuple[bool, bool] = (False, False)


def add_run_route(app: Any, answer: Any) -> None:
    """`POST /daemon/run` on the search daemon's `app`: `answer(line)` is the command line's
    (stdout, stderr), or None when it is not the daemon's to answer (409: the client runs it).
    The answer is text the stdlib client splits without a JSON decoder: the byte length of
    stderr on the first line, then stderr, then stdout (UTF-8, lone surrogates kept)."""
    from fastapi.responses import JSONResponse, Response

    @app.post("/daemon/run", include_in_schema=False)
    def run_route(line: CommandLine) -> Any:
        found = answer(line)
        if found is None:
            return JSONResponse({"detail": "not this daemon's command line"}, 409)
        out, err = (text.encode("utf-8", "surrogatepass") for text in found)
        return Response(b"%d\n" % len(err) + err + out, media_type="text/plain; charset=utf-8")
