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
from .errors import ConfigError, NotFound, SourceError
from .ingest import IngestOptions, Ingestor, Progress
from .lock import StoreLock
from .owner import OwnerInfo, find_owner
from .paths import relative_path, resolve_in_root, shown
from .records import Hit, IngestSummary, SourceSpec
from .state import State

if TYPE_CHECKING:
    from .client import OwnerClient
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
    from .store import StoreConfig

    return StoreConfig(
        data_dir=settings.data_dir,
        url=settings.chroma_url,
        tenant=settings.tenant,
        database=settings.database,
        token=settings.chroma_token,
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
    collection = open_store(settings).collection(settings.collection, create=False)
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


def known_sources(settings: Settings) -> list[SourceSpec]:
    """The sources of the configured collection that were ingested before (from the state)."""
    state = State.open(settings.data_dir)
    try:
        rows = [r for r in state.sources() if r.collection == settings.collection]
    finally:
        state.close()
    return [SourceSpec(label=r.source, root=Path(r.root), kind=r.kind) for r in rows]


def owner_client(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> OwnerClient | None:
    """A client of the process that owns the data dir (serve, watch, mcp), or None.

    While another process owns the data dir, nothing else may open its store: callers send
    their requests through this client instead (see `owner`).
    """
    from .client import OwnerClient

    info = find_owner(settings.data_dir)
    if info is None:
        return None
    environ = os.environ if environ is None else environ
    return OwnerClient(info, token=environ.get("CHROMASYNC_API_TOKEN") or None)


# -- for the surfaces that read one document or file (REST, MCP, the search page) ----------


def get_document(settings: Settings, path: str, source: str | None = None) -> list[Hit]:
    """The indexed chunks of one file, in line order (from the local state; no store, no disk).

    `path` is relative to its source root, as hits cite it; `source` narrows to one source.
    """
    rel = relative_path(path)
    state = State.open(settings.data_dir)
    try:
        rows = state.document_chunks(settings.collection, rel, source)
    finally:
        state.close()
    if not rows:
        where = f" in source {source!r}" if source else ""
        raise NotFound(f"no indexed file {shown(path)}{where}; search for it first")
    return [
        Hit(
            id=rid,
            path=rel,
            source=src,
            heading=heading,
            start_line=int(meta.get("start_line", 0) or 0),
            end_line=int(meta.get("end_line", 0) or 0),
            score=0.0,
            text=text,
            collection=settings.collection,
            metadata=meta,
        )
        for src, rid, heading, text, meta in rows
    ]


@dataclass(frozen=True, slots=True)
class FileText:
    source: str
    path: str
    text: str
    truncated: bool


def read_indexed_file(settings: Settings, source: str, path: str) -> FileText:
    """The current text of a file that is in the index (the only files a client may read).

    The path must be a file the manifest of `source` holds records for, and it must resolve,
    through any links, inside the source's root; anything else is `NotFound`/`AccessDenied`.
    """
    rel = relative_path(path)
    state = State.open(settings.data_dir)
    try:
        row = state.source(settings.collection, source)
        entry = state.files(settings.collection, source).get(rel) if row else None
    finally:
        state.close()
    if row is None:
        raise NotFound(f"no source labelled {source!r} in collection {settings.collection!r}")
    if entry is None or not entry.records:
        raise NotFound(f"{shown(path)} is not an indexed file of source {source!r}")
    real = resolve_in_root(rel, Path(row.root).expanduser(), "file")
    try:
        with open(real, "rb") as handle:
            data = handle.read(settings.max_file_bytes + 1)
    except OSError as exc:
        raise NotFound(f"cannot read {shown(path)} of source {source!r}: {exc.strerror}") from exc
    truncated = len(data) > settings.max_file_bytes
    text = data[: settings.max_file_bytes].decode("utf-8", "replace").replace("\r\n", "\n")
    return FileText(source, rel, text.removeprefix("\ufeff"), truncated)


def filters_where(
    sources: Sequence[str] = (),
    tags: Sequence[str] = (),
    tags_all: bool = False,
    after: str | None = None,
    before: str | None = None,
    date_field: str = "date",
) -> dict[str, Any] | None:
    """A Chroma `where` for the common filters: sources, tags (any or all), a date range.

    Dates are ISO dates or times, compared with the `<date_field>_ts` metadata the front
    matter flattening writes (epoch seconds); `before` is exclusive.
    """
    clauses: list[dict[str, Any]] = []
    if sources:
        clauses.append(
            {"source": {"$in": list(sources)}} if len(sources) > 1 else {"source": sources[0]}
        )
    if tags:
        tag_clauses = [{"tags": {"$contains": t}} for t in tags]
        if len(tag_clauses) == 1:
            clauses.append(tag_clauses[0])
        else:
            clauses.append({"$and" if tags_all else "$or": tag_clauses})
    for bound, op in ((after, "$gte"), (before, "$lt")):
        if bound:
            clauses.append({f"{date_field}_ts": {op: _epoch(bound)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _epoch(text: str) -> int:
    import datetime as dt

    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise ConfigError(f"{text!r} is not an ISO date (YYYY-MM-DD or YYYY-MM-DDTHH:MM)") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp())


__all__ = [
    "FileText",
    "IngestOptions",
    "OwnerInfo",
    "Settings",
    "SourceStatus",
    "filters_where",
    "find_owner",
    "get_document",
    "ingest",
    "known_sources",
    "make_embedder_for",
    "open_store",
    "owner_client",
    "read_indexed_file",
    "resolve_settings",
    "search",
    "source_for",
    "status",
]
