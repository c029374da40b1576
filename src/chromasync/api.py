"""The Python API: every surface (CLI, REST, MCP, watch) calls these functions.

from chromasync import api
settings = api.resolve_settings({"data_dir": ".chromasync"}, os.environ)
summaries = api.ingest([api.source_for("notes/")], settings)
hits = api.search("how do I install", settings, k=5)
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Settings, resolve_settings
from .embed import Embedder, make_embedder
from .embed.cache import EmbeddingCache
from .errors import ChromasyncError, ConfigError, NotFound, SourceError
from .ingest import IngestOptions, Ingestor, Progress
from .lock import StoreLock
from .records import Hit, IngestSummary, SourceSpec
from .retrieve import MODES, Filters, Fusion, Retriever, SearchRequest, SearchResult
from .retrieve.evaluate import EvalQuery
from .retrieve.filters import filters_from_options, normalise_where
from .retrieve.similar import SimilarDoc
from .state import State
from .store import hit_from_row

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
    mode: str = "hybrid",
    filters: Filters | None = None,
) -> list[Hit]:
    """The best `k` chunks for `query` (hybrid by default); `where` is a Chroma filter."""
    filters = filters or Filters(date_fields=settings.date_field_names)
    if where:
        from dataclasses import replace

        filters = replace(filters, where_json=normalise_where(where))
    request = SearchRequest(query, mode=mode, k=k, filters=filters)
    return list(retrieve(request, settings, embedder=embedder).hits)


def retrieve(
    request: SearchRequest, settings: Settings, *, embedder: Embedder | None = None
) -> SearchResult:
    """Run one search request: filters, dense and/or keyword lists, fusion, ordering."""
    if request.mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {request.mode!r}")
    with _retriever(settings, embedder) as retriever:
        return retriever.search(request)


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


def make_filters(settings: Settings, **options: Any) -> Filters:
    """`Filters` from surface arguments (see `retrieve.filters.filters_from_options`)."""
    options.setdefault("date_fields", settings.date_field_names)
    return filters_from_options(**options)


@contextmanager
def _retriever(settings: Settings, embedder: Embedder | None = None) -> Iterator[Retriever]:
    import time

    from .retrieve.bm25 import KeywordIndex
    from .retrieve.mirror import KeywordMirror
    from .retrieve.rerank import make_reranker

    store = open_store(settings)
    state = State.open(settings.data_dir)
    dirty = {row.collection for row in state.sources() if row.status != "clean"}
    retriever = Retriever(
        store,
        KeywordIndex(state.db),
        dirty,
        open_mirror=lambda: KeywordMirror.open(settings.data_dir),
        embedder=(lambda: embedder)
        if embedder is not None
        else (lambda: make_embedder_for(settings)),
        default_collection=settings.collection,
        clock_ns=time.time_ns,
        reranker=make_reranker(settings.rerank_model),
        mirror_ttl_s=settings.keyword_refresh_s,
    )
    try:
        yield retriever
    finally:
        retriever.close()
        state.close()


@dataclass(frozen=True, slots=True)
class EvalReport:
    queries: int
    k: int
    modes: Mapping[str, Mapping[str, float]]  # mode -> metric -> mean
    per_query: Mapping[str, Sequence[Mapping[str, float]]]  # mode -> one row per query

    def as_json(self) -> dict[str, object]:
        return {
            "queries": self.queries,
            "k": self.k,
            "modes": {m: dict(v) for m, v in self.modes.items()},
        }


def evaluate(
    queries: Sequence[EvalQuery],
    settings: Settings,
    *,
    modes: Sequence[str] = MODES,
    k: int = 10,
    filters: Filters | None = None,
    collections: Sequence[str] = (),
    all_collections: bool = False,
    fusions: Mapping[str, Fusion] | None = None,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> EvalReport:
    """nDCG@k, recall@k, recall@100 and MRR of each mode over judged queries.

    Each query is gathered once (dense and keyword lists, 2 x 100 chunks deep) and ranked
    in every mode, exactly as `search` ranks it. `fusions` adds extra hybrid variants by
    name (for tuning). With a reranker configured, `hybrid+rerank` is measured as well.
    """
    from .retrieve import evaluate as ev
    from .retrieve.rerank import rerank

    for mode in modes:
        if mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    filters = filters or Filters(date_fields=settings.date_field_names)
    rows: dict[str, list[Mapping[str, float]]] = {}
    with _retriever(settings, embedder) as retriever:
        for done, item in enumerate(queries, 1):
            request = SearchRequest(
                item.query,
                k=ev.DEPTH,
                filters=filters,
                collections=tuple(collections),
                all_collections=all_collections,
                candidates=2 * ev.DEPTH,
            )
            gathered = retriever.gather(request, modes)
            ranked = {mode: retriever.rank(gathered, mode) for mode in modes}
            for name, fusion in (fusions or {}).items():
                ranked[name] = retriever.rank(gathered, "hybrid", fusion)
            if retriever.reranker is not None and "hybrid" in ranked:
                ranked["hybrid+rerank"] = rerank(item.query, ranked["hybrid"], retriever.reranker)
            for name, hits in ranked.items():
                docs = ev.documents(hits)[: ev.DEPTH]
                flags = ev.judge(docs, item.relevant)
                rows.setdefault(name, []).append(
                    ev.query_metrics(flags, len(set(item.relevant)), k)
                )
            if progress:
                progress("eval", done, len(queries))
    return EvalReport(
        queries=len(queries),
        k=k,
        modes={name: ev.mean_metrics(r) for name, r in rows.items()},
        per_query=rows,
    )


def load_queries(path: str | Path) -> list[EvalQuery]:
    """Judged queries from a JSON-lines file (see `retrieve.evaluate`)."""
    from .retrieve.evaluate import parse_queries

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise NotFound(f"cannot read queries file {file}: {exc.strerror}") from exc
    return parse_queries(text.splitlines(), str(file))


@dataclass(frozen=True, slots=True)
class SimilarResult:
    path: str
    chunks: int
    threshold: float
    documents: tuple[SimilarDoc, ...]
    excluded: str | None  # "source:path" of the file itself, when it is indexed

    @property
    def nearest_sources(self) -> list[tuple[str, float, int]]:
        from .retrieve.similar import nearest_sources

        return nearest_sources(self.documents)

    def as_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "chunks": self.chunks,
            "threshold": self.threshold,
            "excluded": self.excluded,
            "duplicates": sum(d.duplicate for d in self.documents),
            "documents": [d.as_json() for d in self.documents],
            "sources": [
                {"source": s, "best_score": b, "documents": n} for s, b, n in self.nearest_sources
            ],
        }


def similar(
    path: str | Path,
    settings: Settings,
    *,
    k: int = 10,
    threshold: float | None = None,
    collections: Sequence[str] = (),
    all_collections: bool = False,
    embedder: Embedder | None = None,
) -> SimilarResult:
    """The indexed documents nearest to the file at `path` (indexed or not)."""
    from .chunk import Budget, chunk_document
    from .chunk.tokens import default_token_meter, load_token_meter
    from .fingerprint import read_file
    from .records import FileStat
    from .retrieve.similar import aggregate

    file = Path(path).expanduser()
    try:
        info = file.stat()
    except OSError as exc:
        raise NotFound(f"cannot read {file}: {exc.strerror}") from exc
    if not file.is_file():
        raise SourceError(f"{file} is not a regular file")
    outcome = read_file(FileStat(file.name, str(file), info.st_size, info.st_mtime_ns))
    if outcome.document is None:
        reason = outcome.skip.reason if outcome.skip else "unreadable"
        raise SourceError(f"{file} cannot be compared: it is skipped as {reason!r}")
    threshold = settings.duplicate_threshold if threshold is None else threshold
    embedder = embedder or make_embedder_for(settings)
    path_meter = embedder.tokenizer_path
    meter = load_token_meter(path_meter) if path_meter else default_token_meter()
    chunks = chunk_document(outcome.document, Budget(embedder.max_tokens, meter))
    if not chunks:
        raise SourceError(f"{file} has no text to compare")
    vectors = embedder.embed_documents([c.embed_text for c in chunks])
    weights = [float(max(len(c.text), 1)) for c in chunks]
    own = _indexed_as(file, settings)
    request = SearchRequest("", collections=tuple(collections), all_collections=all_collections)
    neighbours: list[list[Hit]] = [[] for _ in chunks]
    exact: list[Hit] = []
    with _retriever(settings, embedder) as retriever:
        for name in retriever.collection_names(request):
            collection = retriever.collection(name)
            try:
                collection.check_model(embedder.model_id, embedder.dimension)
            except ChromasyncError:
                if not all_collections:
                    raise
                continue
            depth = max(4 * k, 20)
            for index, vector in enumerate(vectors):
                neighbours[index] += collection.query(vector, depth)
            exact += [
                hit_from_row(r.id, r.metadata, r.document or "", 1.0, name)
                for r in collection.iter_records(
                    where={"file_hash": outcome.file_hash or ""}, documents=True
                )
            ]

    def is_self(hit: Hit) -> bool:
        return own is not None and (hit.source, hit.path) == own

    docs = aggregate(weights, neighbours, exclude=is_self, exact=exact, threshold=threshold, k=k)
    return SimilarResult(
        path=str(file),
        chunks=len(chunks),
        threshold=threshold,
        documents=tuple(docs),
        excluded=f"{own[0]}:{own[1]}" if own else None,
    )


def _indexed_as(file: Path, settings: Settings) -> tuple[str, str] | None:
    """(source, relative path) when `file` lies under an ingested source's root."""
    resolved = file.resolve()
    state = State.open(settings.data_dir)
    try:
        for row in state.sources():
            try:
                rel = resolved.relative_to(Path(row.root).expanduser().resolve())
            except ValueError:
                continue
            return row.source, rel.as_posix()
    finally:
        state.close()
    return None


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
    "MODES",
    "EvalQuery",
    "EvalReport",
    "Filters",
    "Fusion",
    "IngestOptions",
    "SearchRequest",
    "SearchResult",
    "Settings",
    "SimilarDoc",
    "SimilarResult",
    "SourceStatus",
    "evaluate",
    "highlight",
    "ingest",
    "load_queries",
    "make_embedder_for",
    "make_filters",
    "open_store",
    "resolve_settings",
    "retrieve",
    "search",
    "similar",
    "snippet",
    "source_for",
    "status",
]
