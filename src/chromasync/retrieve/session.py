"""A retrieval session over one data dir: the store, the state's keyword index, the model.

`open_retriever(settings)` opens what a search needs (a read-only store is searched from a copy,
the state is opened read-only) and closes it after; `evaluate`, `similar` and `links` run on
it. The API (`chromasync.api`) re-exports these; surfaces call them through it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.settings import Settings
from ..config.sources import configured_entries
from ..embed import Embedder, make_embedder
from ..errors import ConfigError, NotFound, storage_errors
from ..state.manifest import State
from ..sync.ingest import Progress
from ..sync.registry import open_store_for
from .engine import MODES, Retriever
from .evaluate import EvalQuery
from .filters import Filters
from .fuse import Fusion
from .links import LinksReport
from .tasks import (
    EvalReport,
    SimilarResult,
    find_linking,
    find_similar,
    outgoing_links,
    run_evaluation,
)

if TYPE_CHECKING:
    from ..store.chroma import Store


def embedder_for(settings: Settings) -> Embedder:
    """The embedding provider the settings name."""
    return make_embedder(settings.provider, settings.embedding_options())


@contextmanager
def open_retriever(settings: Settings, embedder: Embedder | None = None) -> Iterator[Retriever]:
    with storage_errors(settings.data_dir), _open(settings, embedder) as retriever:
        yield retriever


@contextmanager
def _open(settings: Settings, embedder: Embedder | None = None) -> Iterator[Retriever]:
    import time

    from .bm25 import KeywordIndex
    from .mirror import KeywordMirror
    from .rerank import make_reranker

    store = open_store_for(settings, reading=True)
    state = State.open(settings.data_dir, readonly=True)
    dirty = {row.collection for row in state.sources() if row.status != "clean"}
    retriever = Retriever(
        store,
        KeywordIndex(state.db),
        dirty,
        open_mirror=lambda: KeywordMirror.open(settings.data_dir),
        embedder=(lambda: embedder) if embedder is not None else (lambda: embedder_for(settings)),
        default_collections=lambda: search_collections(settings, store),
        clock_ns=time.time_ns,
        reranker=make_reranker(settings.rerank_model),
        mirror_ttl_s=settings.keyword_refresh_s,
    )
    try:
        yield retriever
    finally:
        retriever.close()
        state.close()


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
    """nDCG@k, recall@k, recall@100 and MRR per mode (see `retrieve.tasks.run_evaluation`)."""
    with open_retriever(settings, embedder) as retriever:
        return run_evaluation(
            retriever,
            queries,
            modes=modes,
            k=k,
            filters=filters or Filters(date_fields=settings.date_field_names),
            collections=collections,
            all_collections=all_collections,
            fusions=fusions,
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
) -> SimilarResult:
    """The indexed documents nearest to the file at `path` (indexed or not)."""
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
        roots = {row.source: Path(row.root).expanduser() for row in _source_rows(settings)}

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


def _source_rows(settings: Settings) -> list[Any]:
    with State.open(settings.data_dir, readonly=True) as state:
        return list(state.sources())


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
