"""The Python API: every surface (CLI, REST, MCP, watch) calls these functions.

from chromasync import api
settings = api.resolve_settings({"data_dir": ".chromasync"}, os.environ)
summaries = api.ingest([api.source_for("notes/")], settings)
hits = api.search("how do I install", settings, k=5)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Settings, resolve_settings
from .embed import Embedder, make_embedder
from .embed.cache import EmbeddingCache
from .errors import SourceError
from .ingest import IngestOptions, Ingestor, Progress
from .lock import StoreLock
from .records import Hit, IngestSummary, SourceSpec
from .state import State

if TYPE_CHECKING:
    from .store import Store, StoreConfig

CACHE_FILE = "embeddings.sqlite3"


def source_for(path: str | Path, label: str | None = None, **fields: Any) -> SourceSpec:
    """A source for a folder; its label defaults to the folder's name."""
    root = Path(path).expanduser()
    resolved = root.resolve()
    if str(resolved) == "/" and not fields.pop("allow_root", False):
        raise SourceError("refusing to index '/' as a source; name a folder inside it")
    name = label or resolved.name or "root"
    return SourceSpec(label=name, root=root, **fields)


def make_embedder_for(settings: Settings) -> Embedder:
    return make_embedder(settings.provider, settings.embedding_options())


def _store_config(settings: Settings) -> StoreConfig:
    from .retry import RetryPolicy
    from .store import StoreConfig

    return StoreConfig(
        data_dir=settings.data_dir,
        url=settings.chroma_url,
        tenant=settings.tenant,
        database=settings.database,
        token=settings.chroma_token,
        timeout_s=settings.chroma_timeout,
        retry=RetryPolicy(attempts=max(1, settings.chroma_retries)),
    )


def open_store(settings: Settings, existing: bool = False) -> Store:
    from .store import open_store as _open

    return _open(_store_config(settings), existing)


def ingest(
    sources: Sequence[SourceSpec],
    settings: Settings,
    options: IngestOptions | None = None,
    *,
    embedder: Embedder | None = None,
    environ: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    wait: bool = False,
) -> list[IngestSummary]:
    """Bring each source's records in the collection in line with its files on disk."""
    options = options or IngestOptions(max_file_bytes=settings.max_file_bytes)
    embedder = embedder or make_embedder_for(settings)
    environ = os.environ if environ is None else environ
    summaries: list[IngestSummary] = []
    with StoreLock(settings.data_dir, wait=wait):
        state = State.open(settings.data_dir)
        ingestor = Ingestor(
            state,
            settings.collection,
            embedder,
            open_store=lambda existing=False: open_store(settings, existing),
            cache=lambda: EmbeddingCache(
                settings.data_dir / CACHE_FILE, settings.cache_max_entries
            ),
            environ=environ,
            progress=progress,
        )
        try:
            for spec in sources:
                summaries.append(ingestor.ingest(spec, options))
        finally:
            ingestor.close()
            state.close()
    return summaries


def search(
    query: str,
    settings: Settings,
    k: int = 10,
    where: Mapping[str, Any] | None = None,
    *,
    embedder: Embedder | None = None,
) -> list[Hit]:
    """Dense search over the configured collection (hybrid retrieval comes in `retrieve`)."""
    embedder = embedder or make_embedder_for(settings)
    store = open_store(settings)
    if getattr(embedder, "embeds_in_store", False):
        # the collection's own embedding function embeds the query (`server` provider)
        return store.collection(settings.collection, provider="server").query(query, k, where)
    collection = store.collection(settings.collection, create=False)
    collection.check_model(embedder.model_id, embedder.dimension)
    return collection.query(embedder.embed_query(query), k, where)


@dataclass(frozen=True, slots=True)
class SourceStatus:
    collection: str
    source: str
    root: str
    files: int
    chunks: int
    embedding_model: str
    status: str
    last_outcome: str | None
    last_finished_ns: int | None


def status(settings: Settings) -> list[SourceStatus]:
    """Per source: files and chunks in the manifest, last run, model (reads no store)."""
    state = State.open(settings.data_dir)
    try:
        rows = []
        for row in state.sources():
            files = state.files(row.collection, row.source)
            rows.append(
                SourceStatus(
                    collection=row.collection,
                    source=row.source,
                    root=row.root,
                    files=sum(1 for f in files.values() if f.records),
                    chunks=sum(len(f.records) for f in files.values()),
                    embedding_model=row.embedding_model,
                    status=row.status,
                    last_outcome=row.last_outcome,
                    last_finished_ns=row.last_finished_ns,
                )
            )
        return rows
    finally:
        state.close()


__all__ = [
    "IngestOptions",
    "Settings",
    "SourceStatus",
    "ingest",
    "make_embedder_for",
    "open_store",
    "resolve_settings",
    "search",
    "source_for",
    "status",
]
