"""A retrieval session over one data dir: the store, the state's keyword index, the model.

Design notes: docs/internals.md, `retrieve/session.py`.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.settings import Settings
from ..config.sources import check_labels, configured_entries
from ..embed import Embedder, embedder_for
from ..errors import ConfigError, NotFound, storage_errors
from ..records import Hit, Progress
from ..state.manifest import State
from ..store.connect import open_store_for
from .access import indexed_file_location
from .engine import MODES, Retriever
from .evaluate import EvalQuery
from .filters import Filters, normalise_where
from .links import LinksReport
from .request import SearchArgs
from .results import SearchRequest, SearchResult
from .tasks import (
    EvalReport,
    SimilarResult,
    SuggestResult,
    eval_searches,
    find_linking,
    find_similar,
    find_suggestions,
    outgoing_links,
    run_evaluation,
)

if TYPE_CHECKING:
    from ..store.chroma import Store


@contextmanager
def open_retriever(settings: Settings, embedder: Embedder | None = None) -> Iterator[Retriever]:
    with storage_errors(settings.data_dir):
        load = (lambda: embedder) if embedder is not None else (lambda: embedder_for(settings))
        session = _Session.open(settings, load)
        try:
            yield session.retriever
        finally:
            session.close()


class _Session:
    """What one retriever holds open: the store and the state (its keyword index)."""

    def __init__(self, retriever: Retriever, state: State, mark: tuple[int, int, int]) -> None:
        self.retriever = retriever
        self.state = state
        self.mark = mark

    @classmethod
    def open(cls, settings: Settings, embedder: Callable[[], Embedder]) -> _Session:
        import time

        from .bm25 import KeywordIndex
        from .mirror import KeywordMirror
        from .rerank import make_reranker

        store = open_store_for(settings, reading=True)
        state = State.open(settings.data_dir, readonly=True)
        try:
            mark = _mark(state)  # before anything is read: a commit in between shows later
            dirty = {row.collection for row in state.sources() if row.status != "clean"}
            retriever = Retriever(
                store,
                KeywordIndex(state.db),
                dirty,
                open_mirror=lambda: KeywordMirror.open(settings.data_dir),
                embedder=embedder,
                default_collections=lambda: search_collections(settings, store),
                clock_ns=time.time_ns,
                reranker=make_reranker(settings.rerank_model),
                mirror_ttl_s=settings.keyword_refresh_s,
                clean_at=mark[2],
            )
        except BaseException:
            state.close()
            raise
        return cls(retriever, state, mark)

    def current(self) -> bool:
        """Whether the state is still the one this session read."""
        return _mark(self.state) == self.mark

    def close(self) -> None:
        try:
            self.retriever.close()
        finally:
            self.state.close()


def _mark(state: State) -> tuple[int, int, int]:
    """(device, inode, data_version) of the state: changes with the file (a reset, a state
    created since) and with every commit of another connection."""
    try:
        info = os.stat(state.path)
        where = (info.st_dev, info.st_ino)
    except OSError:
        where = (0, 0)
    version = int(state.db.execute("PRAGMA data_version").fetchone()[0])
    return (*where, version)


class WarmSessions:
    """Retrieval sessions kept open from one request to the next, for a process that searches
    many times while it owns the data dir (the search daemon, `serve`, `watch`, `mcp`); at
    most `keep` stay open when idle. When a session is reused: docs/internals.md."""

    def __init__(self, settings: Settings, embedder: Callable[[], Embedder], keep: int = 4) -> None:
        self.settings = settings
        self._embedder = embedder
        self._keep = keep
        self._idle: list[_Session] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def retriever(self) -> Iterator[Retriever]:
        with storage_errors(self.settings.data_dir):
            session = self._take()
            retriever = session.retriever
            try:
                retriever.next_request(store_changes=retriever.store.target is not None)
                yield retriever
            except BaseException:
                session.close()  # what it held may be what failed: the next one starts anew
                raise
            self._give_back(session)

    def _take(self) -> _Session:
        while True:
            with self._lock:
                session = self._idle.pop() if self._idle else None
            if session is None:
                return _Session.open(self.settings, self._embedder)
            if session.current():
                return session
            session.close()

    def _give_back(self, session: _Session) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._keep:
                self._idle.append(session)
                return
        session.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for session in idle:
            session.close()


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
        filters = dataclasses.replace(filters, where_json=normalise_where(where))
    request = SearchRequest(query, mode=mode, k=k, filters=filters)
    return list(retrieve(request, settings, embedder=embedder).hits)


def retrieve(
    request: SearchRequest,
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    sessions: WarmSessions | None = None,
) -> SearchResult:
    """Run one search request: filters, dense and/or keyword lists, fusion, ordering.

    `sessions`: search in one of these warm sessions (a process that searches many times)
    instead of opening the store and the state for this request alone."""
    if request.mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {request.mode!r}")
    opened = sessions.retriever() if sessions is not None else open_retriever(settings, embedder)
    with opened as retriever:
        return run_search(retriever, request, settings)


def run_search(retriever: Retriever, request: SearchRequest, settings: Settings) -> SearchResult:
    """`request`'s result on an open retriever: what `retrieve` returns (and `eval` scores)."""
    result = retriever.search(request)
    if not result.hits and request.filters.sources:
        _check_sources(request.filters.sources, retriever, settings)
    return with_context(result, settings)


def _check_sources(labels: Sequence[str], retriever: Retriever, settings: Settings) -> None:
    """A search restricted to labels that found nothing: a label that names no source the
    state, the config or the searched keyword indexes know is an error ("did you mean"),
    not an empty result. (A search with hits is never refused: a shared collection holds
    labels other machines wrote.)"""
    known = {e.label for e in configured_entries(settings)} | retriever.known_sources()
    if known:
        check_labels(labels, sorted(known))


def with_context(result: SearchResult, settings: Settings) -> SearchResult:
    """Each hit with the config's description of its place (`context:`), when there is one."""
    file = settings.config_file
    if file is None or not file.contexts:
        return result
    hits = tuple(
        dataclasses.replace(h, context=file.context_for(h.source, h.path)) for h in result.hits
    )
    return dataclasses.replace(result, hits=hits)


def evaluate(
    queries: Sequence[EvalQuery],
    settings: Settings,
    *,
    modes: Sequence[str] = MODES,
    k: int = 10,
    sources: Sequence[str] = (),
    collections: Sequence[str] = (),
    all_collections: bool = False,
    feedback: bool = False,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> EvalReport:
    """nDCG@k, recall@k and MRR@k of each query's `search --per-doc --k K` in each mode
    (without reranking), with `feedback` hybrid with feedback, with a reranker configured
    hybrid reranked: each search run as `retrieve` runs it (see
    `retrieve.tasks.run_evaluation`)."""
    args = SearchArgs(
        "",
        k=k,
        sources=tuple(sources),
        collections=tuple(collections),
        all_collections=all_collections,
    )
    with open_retriever(settings, embedder) as retriever:
        searches = eval_searches(modes, feedback=feedback, rerank=retriever.reranker is not None)
        return run_evaluation(
            lambda request: run_search(retriever, request, settings),
            queries,
            args,
            searches,
            date_fields=settings.date_field_names,
            progress=progress,
        )


def load_queries(path: str | Path) -> list[EvalQuery]:
    """Judged queries from a JSON-lines file (see `retrieve.evaluate`)."""
    from .evaluate import parse_queries

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise NotFound(f"cannot read queries file {file}: {exc.strerror}") from exc
    return parse_queries(text.splitlines(), str(file))


def similar(
    path: str | Path,
    settings: Settings,
    *,
    k: int = 10,
    threshold: float | None = None,
    collections: Sequence[str] = (),
    all_collections: bool = False,
    embedder: Embedder | None = None,
    group_by: str | None = None,
) -> SimilarResult:
    """The indexed documents nearest to the file at `path` (indexed or not); `group_by`:
    grouped by a field, `source`, `collection` or `path:N` (as `suggest`)."""
    file = Path(path).expanduser()
    embedder = embedder or embedder_for(settings)
    with open_retriever(settings, embedder) as retriever:
        return find_similar(
            retriever,
            file,
            embedder,
            k=k,
            threshold=settings.duplicate_threshold if threshold is None else threshold,
            collections=collections,
            all_collections=all_collections,
            own=indexed_as(file, settings),
            privacy_keys=settings.privacy_keys,
            group_by=group_by,
        )


def suggest(
    path: str | Path,
    settings: Settings,
    *,
    group_by: str,
    k: int = 3,
    similar_k: int = 5,
    threshold: float | None = None,
    collections: Sequence[str] = (),
    all_collections: bool = False,
    embedder: Embedder | None = None,
    source: str | None = None,
) -> SuggestResult:
    """Triage: the `k` groups (a metadata field, `source`, `collection` or a folder level
    `path:N`) whose indexed content is nearest to the file at `path` (indexed or not: it is
    chunked and embedded in memory, nothing written; when indexed, its own chunks are left
    out), each with a score, a confidence band and its two best-matching chunks, and the
    file's near-duplicates (see `retrieve.suggest`). With `source` (REST, MCP), `path` is
    an indexed file of that source as hits cite it, checked as `read_indexed_file` checks
    it (nothing else on disk can be read that way)."""
    if source is not None:
        file = indexed_file_location(settings, source, str(path))
    else:
        file = Path(path).expanduser()
    embedder = embedder or embedder_for(settings)
    with open_retriever(settings, embedder) as retriever:
        return find_suggestions(
            retriever,
            file,
            embedder,
            group_by=group_by,
            k=k,
            similar_k=similar_k,
            threshold=settings.duplicate_threshold if threshold is None else threshold,
            collections=collections,
            all_collections=all_collections,
            own=indexed_as(file, settings),
            privacy_keys=settings.privacy_keys,
        )


def links(
    target: str | None,
    settings: Settings,
    *,
    from_path: str | Path | None = None,
    source: str | None = None,
    collections: Sequence[str] = (),
    all_collections: bool = False,
    limit: int = 1000,
    on_disk: bool = True,
) -> LinksReport:
    """Reverse links: every indexed chunk linking to `target` (a URL and what is under it,
    a path, a note title); or, with `from_path`, what that file links to and which of its
    internal targets are missing (see `retrieve.links`). `from_path` is a file on disk
    when `on_disk` and one exists there, else a path as hits cite it (REST and MCP)."""
    with open_retriever(settings) as retriever:
        if from_path is None:
            if not target:
                raise ConfigError("give a link TARGET (a URL, path or note title) or --from PATH")
            return find_linking(
                retriever,
                target,
                collections=collections,
                all_collections=all_collections,
                limit=limit,
            )
        rel, label = str(from_path), source
        file = Path(from_path).expanduser()
        own = indexed_as(file, settings) if on_disk and file.is_file() else None
        if own is not None:
            label, rel = own
        with State.open(settings.data_dir, readonly=True) as state:
            roots = {row.source: Path(row.root).expanduser() for row in state.sources()}

        def exists(label: str, target: str) -> bool:
            root = roots.get(label)
            if root is None or target.startswith("note:"):
                return False
            candidate = root / target
            return candidate.exists() or candidate.with_name(candidate.name + ".md").exists()

        return outgoing_links(
            retriever,
            rel,
            source=label,
            exists=exists,
            collections=collections,
            all_collections=all_collections,
        )


def indexed_as(file: Path, settings: Settings) -> tuple[str, str] | None:
    """(source, relative path) when `file` lies under an ingested source's root."""
    resolved = file.resolve()
    with State.open(settings.data_dir, readonly=True) as state:
        for row in state.sources():
            try:
                rel = resolved.relative_to(Path(row.root).expanduser().resolve())
            except ValueError:
                continue
            return row.source, rel.as_posix()
    return None


def search_collections(settings: Settings, store: Store | None = None) -> list[str]:
    """The collections a search covers: the shared one, or every `<collection>-<kind>`
    plus the collections configured sources name explicitly."""
    if settings.collections == "shared":
        explicit = {e.collection for e in configured_entries(settings) if e.collection}
        return sorted({settings.collection} | explicit)
    store = store or open_store_for(settings)
    existing = store.list_collections()
    explicit = {e.collection for e in configured_entries(settings) if e.collection}
    names = [n for n in existing if settings.owns_collection(n) or n in explicit]
    if not names:
        raise NotFound(
            f"no collection of {settings.collection!r} in {settings.store_location()}; "
            "run `chromasync ingest` first"
        )
    return names
