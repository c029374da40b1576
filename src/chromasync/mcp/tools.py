"""The MCP tools (`build_server`): each tool's arguments are checked by pydantic at the trust
boundary (the SDK builds a model from the annotations), then its handler calls the index
(`Backend.access`) and returns JSON; a chromasync error becomes a tool error (`errors`)."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, Field

from .. import __version__, api
from ..config.labels import LABEL_MAX
from ..errors import ChromasyncError
from ..owner import queries as q
from ..owner.queries import CompareQuery, LinksQuery, SummariesQuery
from ..rest.bodies import option_default, option_type, valid_label
from ..rest.render import hit_json, sources_json
from ..retrieve.options import MAX_QUESTION_CHARS, OPTIONS
from ..retrieve.request import check_query
from ..versions import MAX_TARGET_CHARS
from .backend import Backend
from .errors import error_text

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer


#: A source label, by the config file's rule (`config.labels.label_problem`).
Label = Annotated[str, Field(max_length=LABEL_MAX), AfterValidator(valid_label)]
RUN_TIMEOUT = 3600.0


def _parameter(name: str, annotation: Any, default: Any = inspect.Parameter.empty) -> Any:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


#: The arguments of the `search` and `ask` tools: the query (or question), then every
#: search option (`retrieve.options`, typed and bounded as REST's bodies: `option_type`).
SEARCH_FIRST = _parameter(  # its length: `retrieve.options.QUERY`, by `check_query`
    "query", Annotated[str, Field(min_length=1, description="The query.")]
)
ASK_FIRST = _parameter(
    "question",
    Annotated[
        str,
        Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question to answer."),
    ],
)
ASK_LAST = _parameter(
    "fallback",
    Annotated[
        bool | None, Field(description="Answer extractively if the chat model is unreachable.")
    ],
    None,
)


def _signature(first: Any, *last: Any) -> inspect.Signature:
    options = [_parameter(o.name, option_type(o), option_default(o)) for o in OPTIONS]
    return inspect.Signature([first, *options, *last], return_annotation=dict[str, Any])


def _search_args(query: str, arguments: dict[str, Any]) -> api.SearchArgs:
    """A tool's arguments as the request record (errors spell options as the tool does)."""
    return api.SearchArgs.of(query, spelling="json", **arguments)


@contextlib.contextmanager
def tool_errors() -> Iterator[None]:
    """A chromasync error as the tool's error (`errors.error_text`)."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        yield
    except ChromasyncError as exc:
        raise ToolError(error_text(exc)) from exc


def build_server(backend: Backend) -> MCPServer:
    """The MCP server of chromasync's tools, each over `backend`'s index."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(
        "chromasync",
        version=__version__,
        log_level="WARNING",
        instructions=(
            "Search a corpus of notes, docs and code indexed by chromasync. Every hit cites "
            "its source, path and line range; use get_document to read a whole file."
        ),
    )
    _add_search_tools(server, backend)
    _add_reading_tools(server, backend)
    _add_index_tools(server, backend)
    return server


def _add_search_tools(server: MCPServer, backend: Backend) -> None:
    def search(**arguments: Any) -> dict[str, Any]:
        """Search the index (the CLI's filters); each hit cites source, path, heading and
        start-end lines."""
        with tool_errors(), backend.access() as index:
            query = check_query(arguments.pop("query"), "json")
            result = index.search(_search_args(query, arguments))
            data = result.as_json()
            data["hits"] = [hit_json(h) for h in result.hits]
            return data

    def ask(**arguments: Any) -> dict[str, Any]:
        """Answer a question from the index (the filters of `search`): a few sentences whose
        every claim cites a source `[n]`, listed in `citations` (path, heading, lines)."""
        fallback = arguments.pop("fallback", None)
        with tool_errors(), backend.access() as index:
            args = _search_args(arguments.pop("question"), arguments)
            return index.ask(args, fallback=fallback).as_json()

    search.__signature__ = _signature(SEARCH_FIRST)  # type: ignore[attr-defined]
    ask.__signature__ = _signature(ASK_FIRST, ASK_LAST)  # type: ignore[attr-defined]
    server.tool()(search)
    server.tool()(ask)


def _add_reading_tools(server: MCPServer, backend: Backend) -> None:
    @server.tool()
    def list_sources() -> dict[str, Any]:
        """The indexed sources: label, root folder, files, chunks, model and last run."""
        with tool_errors(), backend.access() as index:
            return {"sources": sources_json(index.sources())}

    @server.tool()
    def get_document(
        path: Annotated[str, Field(min_length=1, max_length=4096, description="As hits cite it.")],
        source: Annotated[Label | None, Field(description="The source, if ambiguous.")] = None,
    ) -> dict[str, Any]:
        """A file's indexed chunks, in line order (path relative to its source root)."""
        with tool_errors(), backend.access() as index:
            chunks = index.get_document(path, source)
            return {"path": chunks[0].path, "chunks": [hit_json(h) for h in chunks]}

    @server.tool()
    def get(
        path: Annotated[
            str,
            Field(min_length=1, max_length=4096, description="PATH[:START[-END]], as hits cite."),
        ],
        source: Annotated[Label | None, Field(description="The source, if ambiguous.")] = None,
    ) -> dict[str, Any]:
        """An indexed file's current lines START..END (1-based; the whole file without)."""
        with tool_errors(), backend.access() as index:
            return dataclasses.asdict(index.get(path, source))

    @server.tool()
    def multi_get(
        glob: Annotated[
            str, Field(min_length=1, max_length=4096, description="e.g. journal/2026-05*.md")
        ],
        max_bytes: Annotated[
            int, Field(ge=1, le=10_000_000, description="Larger files are listed, not read.")
        ] = api.DEFAULT_MAX_BYTES,
        source: Annotated[Label | None, Field(description="Only this source.")] = None,
    ) -> dict[str, Any]:
        """The current text of every indexed file matching a glob: {files, left_out}."""
        with tool_errors(), backend.access() as index:
            return index.multi_get(glob, max_bytes, source).as_json()

    @server.tool()
    def links(
        target: Annotated[
            str | None,
            Field(max_length=MAX_TARGET_CHARS, description="A URL (or under it), path or title."),
        ] = None,
        from_path: Annotated[
            str | None,
            Field(max_length=4096, description="Instead: what this indexed file links to."),
        ] = None,
        source: Annotated[Label | None, Field(description="The source of from_path.")] = None,
    ) -> dict[str, Any]:
        """Reverse links: every indexed file and chunk linking to `target`, with line and
        link text; or, with `from_path`, that file's links and its broken internal ones."""
        with tool_errors(), backend.access() as index:
            query = LinksQuery(target or None, from_path=from_path or None, source=source or None)
            return index.links(query).as_json()


def _add_index_tools(server: MCPServer, backend: Backend) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    @server.tool()
    def suggest(
        path: Annotated[
            str, Field(min_length=1, max_length=4096, description="An indexed file, as cited.")
        ],
        source: Annotated[Label, Field(description="The file's source.")],
        group_by: Annotated[
            str,
            Field(min_length=1, max_length=200, description="A field, `source` or `path:N`."),
        ],
    ) -> dict[str, Any]:
        """Triage: the three groups (a metadata field, `source` or folder level `path:N`)
        whose indexed content is nearest to an indexed file, with scores, confidence bands
        and best chunks, and the file's near-duplicates."""
        with tool_errors(), backend.access() as index:
            return index.suggest(CompareQuery(path, source=source, group_by=group_by)).as_json()

    @server.tool()
    def summaries(
        group_by: Annotated[
            str,
            Field(min_length=1, max_length=200, description="A field, `source` or `path:N`."),
        ],
        limit: Annotated[
            int, Field(ge=1, le=q.MAX_SUMMARIES_LIMIT, description="At most this many groups.")
        ] = q.SUMMARIES_LIMIT,
    ) -> dict[str, Any]:
        """One short summary per group (each value of `group_by`), with its distinctive
        terms: what each folder, source or field value of the corpus is about."""
        with tool_errors(), backend.access() as index:
            return index.summaries(SummariesQuery(group_by, limit)).as_json()

    @server.tool()
    def reindex(
        source: Annotated[Label, Field(description="The source's label.")],
    ) -> dict[str, Any]:
        """Bring one source's index up to date with its files (a delta run); its summary."""
        with tool_errors(), backend.access() as index:
            job = index.wait(index.reindex([source]).id, timeout=RUN_TIMEOUT)
            if job.status == "failed":
                raise ToolError(f"reindex of {source!r} failed: {job.error}")
            return {
                "job": job.id,
                "status": job.status,
                "summaries": [dict(s) for s in job.summaries],
            }
