"""The Python API: every surface (CLI, REST, MCP, watch) calls these functions: a thin
facade, each name defined in the stage it belongs to and re-exported here.

Design notes: docs/internals.md, `api.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .answer.summaries import SummariesReport, summaries
from .config.resolve import resolve_settings
from .config.settings import Settings
from .config.sources import (
    collection_of,
    configure,
    configured_entries,
    selected_sources,
    source_for,
)
from .datadir import CACHE_FILE as CACHE_FILE
from .embed import Embedder as Embedder
from .embed import embedder_for as make_embedder_for
from .records import Hit as Hit
from .records import IngestSummary as IngestSummary
from .records import SourceSpec as SourceSpec
from .retrieve import MODES, Filters, Fusion, SearchRequest, SearchResult
from .retrieve.access import (
    DEFAULT_MAX_BYTES,
    FileLines,
    FileText,
    get_document,
    get_file,
    get_files,
    get_json,
    multi_get_json,
    read_indexed_file,
)
from .retrieve.evaluate import EvalQuery
from .retrieve.links import LinksReport
from .retrieve.request import SearchArgs, make_filters, search_request
from .retrieve.request import build_request as build_request
from .retrieve.session import (
    WarmSessions,
    evaluate,
    links,
    load_queries,
    retrieve,
    search,
    search_collections,
    similar,
    suggest,
    with_context,
)
from .retrieve.session import open_retriever as open_retriever
from .retrieve.similar import SimilarDoc
from .retrieve.tasks import EvalReport, SimilarResult, SuggestResult
from .store.connect import open_store_for as open_store
from .sync.checks import verify
from .sync.ingest import IngestOptions
from .sync.ingest import Progress as Progress
from .sync.jobs import (
    ConfiguredSources,
    KnownSources,
    configured_jobs,
    default_options,
    ingest,
    known_specs,
)
from .sync.peers import ShareReport, share
from .sync.registry import (
    DiscoverResult,
    RemovedSource,
    SourceInfo,
    SourceStatus,
    StateHealth,
    add_source,
    discover,
    health,
    list_sources,
    remove_source,
    reset_collections,
    select_known,
    status,
)
from .sync.verify import SourceCheck as SourceCheck

if TYPE_CHECKING:
    from .answer.ask import answer, ask
    from .answer.chat import chat_client
    from .config.file import SourceEntry
    from .sync.chunkreport import chunk_report
    from .sync.export import export_manifest

#: Public names whose modules import something heavy (pydantic, httpx) or load the
#: chunkers: loaded on first use (PEP 562), so importing the API stays cheap and
#: `from chromasync.api import *` still finds them.
_LAZY = {
    "SourceEntry": ".config.file",
    "answer": ".answer.ask",
    "ask": ".answer.ask",
    "chat_client": ".answer.chat",
    "chunk_report": ".sync.chunkreport",
    "export_manifest": ".sync.export",
}

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(module, __package__), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})


def highlight(text: str, query: str, phrases: Sequence[str] = ()) -> list[tuple[int, int]]:
    """Character spans of `text` that the query's words (or a phrase) matched."""
    from .retrieve.highlight import match_spans

    return match_spans(text, query, phrases)


def snippet(
    text: str, spans: Sequence[tuple[int, int]], width: int = 240
) -> tuple[str, list[tuple[int, int]]]:
    """About `width` characters of `text` around its first matched span, spans shifted."""
    from .retrieve.highlight import snippet as _snippet

    return _snippet(text, spans, width)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "MODES",
    "ConfiguredSources",
    "DiscoverResult",
    "EvalQuery",
    "EvalReport",
    "FileLines",
    "FileText",
    "Filters",
    "Fusion",
    "IngestOptions",
    "KnownSources",
    "LinksReport",
    "RemovedSource",
    "SearchArgs",
    "SearchRequest",
    "SearchResult",
    "Settings",
    "ShareReport",
    "SimilarDoc",
    "SimilarResult",
    "SourceEntry",
    "SourceInfo",
    "SourceStatus",
    "StateHealth",
    "SuggestResult",
    "SummariesReport",
    "WarmSessions",
    "add_source",
    "answer",
    "ask",
    "chat_client",
    "chunk_report",
    "collection_of",
    "configure",
    "configured_entries",
    "configured_jobs",
    "default_options",
    "discover",
    "evaluate",
    "export_manifest",
    "get_document",
    "get_file",
    "get_files",
    "get_json",
    "health",
    "highlight",
    "ingest",
    "known_specs",
    "links",
    "list_sources",
    "load_queries",
    "make_embedder_for",
    "make_filters",
    "multi_get_json",
    "open_store",
    "read_indexed_file",
    "remove_source",
    "reset_collections",
    "resolve_settings",
    "retrieve",
    "search",
    "search_collections",
    "search_request",
    "select_known",
    "selected_sources",
    "share",
    "similar",
    "snippet",
    "source_for",
    "status",
    "suggest",
    "summaries",
    "verify",
    "with_context",
]
