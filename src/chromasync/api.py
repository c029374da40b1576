"""The Python API: every surface (CLI, REST, MCP, watch) calls these functions.

from chromasync import api
settings = api.resolve_settings({"data_dir": ".chromasync"}, os.environ)
summaries = api.ingest([api.source_for("notes/")], settings)
hits = api.search("how do I install", settings, k=5)
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .config.settings import CONFIG_ENV, ConfigFile, Settings, find_config_file, resolve_settings
from .config.sources import configured_entries, select_entries, spec_for
from .datadir import CACHE_FILE as CACHE_FILE
from .embed import Embedder, make_embedder
from .embed.cache import EmbeddingCache
from .errors import ChromasyncError, ConfigError, NotFound, SourceError, StoreError, storage_error
from .records import Hit, IngestSummary, SourceSpec
from .retrieve import MODES, Filters, Fusion, Retriever, SearchRequest, SearchResult
from .retrieve.access import (
    DEFAULT_MAX_BYTES,
    FileLines,
    FileText,
    get_document,
    get_file,
    get_files,
    read_indexed_file,
    select_known,
)
from .retrieve.evaluate import EvalQuery
from .retrieve.filters import filters_from_options, normalise_where
from .retrieve.links import LinksReport
from .retrieve.request import SearchArgs, build_request
from .retrieve.similar import SimilarDoc
from .retrieve.tasks import (
    EvalReport,
    SimilarResult,
    find_linking,
    find_similar,
    outgoing_links,
    run_evaluation,
)
from .state.lock import StoreLock
from .state.manifest import STATE_FILE, State, stored_root
from .sync.ingest import IngestOptions, Ingestor, Progress
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
    open_store_for,
    remove_source,
    reset_collections,
    status,
)
from .sync.verify import SourceCheck

if TYPE_CHECKING:
    from .answer.chat import ChatClient
    from .answer.records import Answer
    from .config.file import SourceEntry
    from .state.snapshots import Recorder
    from .store.chroma import Store
    from .sync.chunkreport import ChunkReport

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        # `SourceEntry` is public (what `selected_sources` returns) but lives in
        # `config.file`, which imports pydantic: load it on first use only (PEP 562), so
        # importing the API stays cheap and `from chromasync.api import *` still finds it.
        if name == "SourceEntry":
            from .config.file import SourceEntry

            globals()[name] = SourceEntry
            return SourceEntry
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def source_for(path: str | Path, label: str | None = None, **fields: Any) -> SourceSpec:
    """A source for a folder; its label defaults to the folder's name."""
    root = Path(path).expanduser()
    resolved = root.resolve()
    allow_root = bool(fields.pop("allow_root", False))
    if str(resolved) == "/" and not allow_root:
        raise SourceError("refusing to index '/' as a source; name a folder inside it")
    from .config.labels import check_label

    name = check_label(label or resolved.name or "root")
    return SourceSpec(label=name, root=resolved, **fields)


def configure(
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    *,
    config: str | Path | None = None,
    sources_file: str | Path | None = None,
    allow_root: bool = False,
) -> Settings:
    """Settings from flags, the environment and the config file (found by `config`, else
    `CHROMASYNC_CONFIG`, else `chromasync.yaml` in `cwd`), then defaults.

    `sources_file` adds the sources of a Markdown sources file (`content-sources.md`) to
    those of the config file, or stands in for a config file when there is none.
    """
    environ = os.environ if environ is None else environ
    folder = Path(cwd) if cwd is not None else Path.cwd()
    path = find_config_file(config, environ, folder)
    file = None
    if path is not None or sources_file is not None:  # pydantic loads only when needed
        from .config.file import check_unique_labels, load_config_file, load_sources_file
    if path is not None:
        found_by = "--config" if config else (CONFIG_ENV if environ.get(CONFIG_ENV) else "cwd")
        file = load_config_file(path, found_by=found_by, allow_root=allow_root)
    if sources_file is not None:
        md = Path(sources_file)
        md = md if md.is_absolute() else folder / md
        listed = load_sources_file(md, allow_root=allow_root)
        extra = listed.entries
        if file is None:
            file = ConfigFile(
                path=md,
                sources=extra,
                sources_file=md,
                found_by="--sources-file",
                inputs=listed.inputs,
            )
        elif file.sources_file is None or file.sources_file.resolve() != md.resolve():
            entries = (*file.sources, *extra)
            check_unique_labels(entries)
            file = dataclasses.replace(
                file, sources=entries, sources_file=md, inputs=file.inputs + listed.inputs
            )
    return resolve_settings(flags, environ, file)


def make_embedder_for(settings: Settings) -> Embedder:
    return make_embedder(settings.provider, settings.embedding_options())


def open_store(settings: Settings, existing: bool = False) -> Store:
    return open_store_for(settings, existing)


def default_options(settings: Settings, **fields: Any) -> IngestOptions:
    """IngestOptions carrying the settings' file size limit and privacy keys."""
    fields.setdefault("max_file_bytes", settings.max_file_bytes)
    fields.setdefault("privacy_keys", settings.privacy_keys)
    fields.setdefault("chunk_max_tokens", settings.chunk_max_tokens)
    return IngestOptions(**fields)


def collection_of(spec: SourceSpec, settings: Settings) -> str:
    """The collection a source's records live in (see `config` for the naming)."""
    return settings.collection_for(spec.kind, spec.collection)


def ingest(
    sources: Sequence[SourceSpec],
    settings: Settings,
    options: IngestOptions | None = None,
    *,
    embedder: Embedder | None = None,
    environ: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    wait: bool = False,
    recorder: Recorder | None = None,
) -> list[IngestSummary]:
    """Bring each source's records in its collection in line with its files on disk.

    Each source goes to `collection_of(spec, settings)`; the settings' `skip_paths` apply
    to every source. A `recorder` (the CLI's) is told what an unchanged re-run would
    report, and writes it down for the fast path (`fastpath`, `snapshots`).
    """
    run_options = options or default_options(settings)
    return _ingest_jobs(
        settings,
        lambda: [(spec, run_options) for spec in sources],
        embedder=embedder,
        environ=environ,
        progress=progress,
        wait=wait,
        recorder=recorder,
    )


def ingest_configured(
    settings: Settings,
    labels: Sequence[str] = (),
    options: IngestOptions | None = None,
    *,
    embedder: Embedder | None = None,
    environ: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    wait: bool = False,
    recorder: Recorder | None = None,
) -> list[IngestSummary]:
    """Ingest the config's `include: true` sources (or those named by `labels`).

    Repository sources are fetched into the data dir's cache first (under the lock), and
    their records carry `indexed_commit_sha`.
    """
    run_options = options or default_options(settings)
    return _ingest_jobs(
        settings,
        lambda: configured_jobs(settings, labels, run_options, environ=environ),
        embedder=embedder,
        environ=environ,
        progress=progress,
        wait=wait,
        recorder=recorder,
    )


def configured_jobs(
    settings: Settings,
    labels: Sequence[str] = (),
    options: IngestOptions | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> list[tuple[SourceSpec, IngestOptions]]:
    """(spec, options) for each selected configured source; repositories are synced into
    the cache first (callers that write hold the lock)."""
    entries = select_entries(configured_entries(settings), labels)
    if not entries:
        where = settings.config_file.path if settings.config_file else "no config file"
        raise ConfigError(
            f"nothing to ingest: no source with `include: true` ({where}); add one with "
            "`chromasync sources add PATH`, or give a PATH"
        )
    run_options = options or default_options(settings)
    out = []
    for entry in entries:
        if entry.repo:
            from .corpus.git import sync_repository

            checkout = sync_repository(entry.repo, entry.branch, settings.data_dir, environ=environ)
            extra = {**run_options.extra_metadata, "indexed_commit_sha": checkout.commit}
            spec = spec_for(entry, settings, root=checkout.work_tree)
            out.append((spec, replace(run_options, extra_metadata=extra)))
        else:
            out.append((spec_for(entry, settings), run_options))
    return out


def export_manifest(
    settings: Settings,
    jobs: Sequence[tuple[SourceSpec, IngestOptions]],
    handle: IO[str],
    *,
    include_text: bool = False,
    embedder: Embedder | None = None,
) -> int:
    """Write the desired records of each job as JSON Lines (see `export`); returns the
    number of records. Reads files and the state; embeds and stores nothing."""
    from .embed.tokens import default_token_meter, load_token_meter
    from .sync.export import desired_records, write_jsonl

    embedder = embedder or make_embedder_for(settings)
    path = embedder.tokenizer_path
    meter = load_token_meter(path) if path else default_token_meter()
    state_file = settings.data_dir / STATE_FILE
    state = State.open(settings.data_dir, readonly=True) if state_file.exists() else None
    total = 0
    try:
        for job_spec, options in jobs:
            spec = _with_skips(job_spec, settings)
            name = collection_of(spec, settings)
            manifest = state.files(name, spec.label) if state is not None else {}
            total += write_jsonl(
                desired_records(
                    spec,
                    name,
                    model_id=embedder.model_id,
                    budget_tokens=min(
                        embedder.max_tokens, options.chunk_max_tokens or embedder.max_tokens
                    ),
                    meter=meter,
                    manifest=manifest,
                    max_file_bytes=options.max_file_bytes,
                    privacy_keys=options.privacy_keys,
                    limit=options.limit,
                    extra_metadata=options.extra_metadata,
                    include_text=include_text,
                ),
                handle,
            )
    finally:
        if state is not None:
            state.close()
    return total


def chunk_report(
    path: str | Path,
    settings: Settings,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    use_gitignore: bool = True,
    limit: int | None = None,
    embedder: Embedder | None = None,
) -> ChunkReport:
    """What ingest would cut the files under `path` into, summed up (see `chunkreport`).

    Discovery, reading and chunking are ingest's own, with its budget (the model's limit,
    or `chunk_max_tokens`) and tokenizer; the embedder is built for those and never run.
    Nothing is embedded, no store or state is opened, nothing is written.
    """
    from .chunk import Budget
    from .embed.tokens import default_token_meter, load_token_meter
    from .sync.chunkreport import build_chunk_report

    spec = source_for(
        path, include=tuple(include), exclude=tuple(exclude), use_gitignore=use_gitignore
    )
    spec = _with_skips(spec, settings)
    options = default_options(settings, limit=limit)
    embedder = embedder or make_embedder_for(settings)
    tokenizer = embedder.tokenizer_path
    meter = load_token_meter(tokenizer) if tokenizer else default_token_meter()
    max_tokens = min(embedder.max_tokens, options.chunk_max_tokens or embedder.max_tokens)
    return build_chunk_report(
        spec,
        Budget(max_tokens, meter),
        model=embedder.model_id,
        max_file_bytes=options.max_file_bytes,
        privacy_keys=options.privacy_keys,
        limit=limit,
    )


def _with_skips(spec: SourceSpec, settings: Settings) -> SourceSpec:
    if not settings.skip_paths:
        return spec
    return replace(
        spec, skip_substrings=tuple(dict.fromkeys((*spec.skip_substrings, *settings.skip_paths)))
    )


def selected_sources(settings: Settings, labels: Sequence[str] = ()) -> list[SourceEntry]:
    """The configured sources a plain ingest would run (or those named by `labels`)."""
    return select_entries(configured_entries(settings), labels)


def _ingest_jobs(
    settings: Settings,
    jobs: Callable[[], Sequence[tuple[SourceSpec, IngestOptions]]],
    *,
    embedder: Embedder | None,
    environ: Mapping[str, str] | None,
    progress: Progress | None,
    wait: bool,
    recorder: Recorder | None = None,
) -> list[IngestSummary]:
    embedder = embedder or make_embedder_for(settings)
    environ = os.environ if environ is None else environ
    summaries: list[IngestSummary] = []
    with _storage_errors(settings), StoreLock(settings.data_dir, wait=wait):
        state = State.open(settings.data_dir)
        ingestors: dict[str, Ingestor] = {}
        try:
            for spec, options in jobs():
                spec = _with_skips(spec, settings)
                name = collection_of(spec, settings)
                if name not in ingestors:
                    ingestors[name] = Ingestor(
                        state,
                        name,
                        embedder,
                        open_store=lambda existing=False: open_store(settings, existing),
                        cache=lambda: EmbeddingCache(
                            settings.data_dir / CACHE_FILE, settings.cache_max_entries
                        ),
                        environ=environ,
                        progress=progress,
                        on_settled=recorder.add if recorder is not None else None,
                    )
                summaries.append(ingestors[name].ingest(spec, options))
        finally:
            for ingestor in ingestors.values():
                ingestor.close()
            state.close()
        if recorder is not None:  # still under the lock, after the state file is closed
            recorder.commit(
                str(settings.data_dir),
                str(settings.data_dir / STATE_FILE),
                [(s.collection, s.source) for s in summaries],
            )
    return summaries


def verify(
    settings: Settings,
    labels: Sequence[str] = (),
    repair: bool = False,
    *,
    embedder: Embedder | None = None,
    environ: Mapping[str, str] | None = None,
    wait: bool = False,
) -> list[SourceCheck]:
    """Compare manifest, keyword index, collection and disk for each known source.

    With `repair`, each source with a difference is healed from the collection and
    ingested again (nothing cached is re-embedded); the returned checks are re-run after.
    """
    checks, specs = _verify_once(settings, labels, wait)
    broken = [
        specs[(c.collection, c.source)]
        for c in checks
        if not c.ok and (c.collection, c.source) in specs
    ]
    if not (repair and broken):
        return checks
    with StoreLock(settings.data_dir, wait=wait), State.open(settings.data_dir) as state:
        for check in checks:
            if not check.ok:
                state.mark_dirty(check.collection, check.source)
    ingest(broken, settings, embedder=embedder, environ=environ, wait=wait)
    after, _ = _verify_once(settings, labels, wait)
    before = {(c.collection, c.source): c for c in checks}
    return [
        replace(c, repaired=not before[(c.collection, c.source)].ok)
        if (c.collection, c.source) in before
        else c
        for c in after
    ]


def _check_unknown(
    settings: Settings,
    state: State,
    store: Store,
    labels: Sequence[str],
    checks: list[SourceCheck],
    specs: dict[tuple[str, str], SourceSpec],
) -> None:
    """Records of this data dir's collections whose source the state does not know (a lost
    or replaced state): each such source is a check whose records are all orphans. A
    configured source gets a spec, so `--repair` adopts its records (rebuilt from the
    collection, nothing re-embedded); the others are reported and kept, since another
    ingester sharing the collection may own them (`chromasync sources remove LABEL`)."""
    from .corpus.walk import discover_source
    from .sync.verify import compare_source

    rows = state.sources()
    configured = {e.label: e for e in configured_entries(settings)}
    names = {r.collection for r in rows}
    names |= {settings.collection_for(e.kind, e.collection) for e in configured.values()}
    names |= {n for n in store.list_collections() if settings.owns_collection(n)}
    for name in sorted(names):
        ours = sorted(r.source for r in rows if r.collection == name)
        where = {"source": {"$nin": ours}} if ours else None
        try:
            found = store.collection(name, create=False).iter_records(where=where)
            by_source: dict[str, list[Any]] = {}
            for record in found:
                by_source.setdefault(str(record.metadata.get("source", "")), []).append(record)
        except NotFound:
            continue
        for source, stored in sorted(by_source.items()):
            if labels and source not in labels:
                continue
            entry = configured.get(source)
            on_disk = None
            if (
                entry is not None
                and entry.path is not None
                and settings.collection_for(entry.kind, entry.collection) == name
            ):
                spec = _with_skips(spec_for(entry, settings), settings)
                specs[(name, source)] = spec
                try:
                    on_disk = {
                        f.rel_path: f for f in discover_source(spec, settings.max_file_bytes).files
                    }
                except SourceError:
                    on_disk = None
            checks.append(compare_source(name, source, {}, stored, set(), on_disk))


def _verify_once(
    settings: Settings, labels: Sequence[str], wait: bool
) -> tuple[list[SourceCheck], dict[tuple[str, str], SourceSpec]]:
    from .corpus.walk import discover_source
    from .sync.verify import compare_source

    configured = {e.label: e for e in configured_entries(settings)}
    checks: list[SourceCheck] = []
    specs: dict[tuple[str, str], SourceSpec] = {}
    with (
        StoreLock(settings.data_dir, wait=wait),
        State.open(settings.data_dir, readonly=True) as state,
    ):
        store = open_store(settings)
        for row in state.sources():
            if labels and row.source not in labels:
                continue
            entry = configured.get(row.source)
            row_absolute = Path(row.root).is_absolute()
            spec = (
                spec_for(entry, settings, root=Path(row.root) if row_absolute else None)
                if entry is not None
                else SourceSpec(label=row.source, root=stored_root(row), kind=row.kind)
            )
            spec = _with_skips(spec, settings)
            try:
                stored = list(
                    store.collection(row.collection, create=False).iter_records(
                        where={"source": row.source}
                    )
                )
            except NotFound:
                stored = []
            try:
                found = discover_source(spec, settings.max_file_bytes)
                on_disk = {f.rel_path: f for f in found.files}
            except SourceError:
                on_disk = None
            manifest = state.files(row.collection, row.source)
            keyword = state.keyword_ids(row.collection, row.source)
            checks.append(
                compare_source(row.collection, row.source, manifest, stored, keyword, on_disk)
            )
            specs[(row.collection, row.source)] = spec
        _check_unknown(settings, state, store, labels, checks, specs)
    return checks, specs


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
        return with_context(retriever.search(request), settings)


def with_context(result: SearchResult, settings: Settings) -> SearchResult:
    """Each hit with the config's description of its place (`context:`), when there is one."""
    file = settings.config_file
    if file is None or not file.contexts:
        return result
    hits = tuple(
        dataclasses.replace(h, context=file.context_for(h.source, h.path)) for h in result.hits
    )
    return dataclasses.replace(result, hits=hits)


def get_json(settings: Settings, spec: str, source: str | None = None) -> dict[str, Any]:
    """`get_file` as JSON (what `Index.get` returns on every surface)."""
    return dataclasses.asdict(get_file(settings, spec, source))


def multi_get_json(
    settings: Settings,
    pattern: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
    source: str | None = None,
) -> dict[str, Any]:
    """`get_files` as JSON: {files, left_out} (what `Index.multi_get` returns)."""
    files, left_out = get_files(settings, pattern, max_bytes, source)
    return {"files": [dataclasses.asdict(f) for f in files], "left_out": left_out}


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


def search_request(args: SearchArgs, settings: Settings) -> SearchRequest:
    """The search request of any surface's arguments (see `retrieve.request`)."""
    return build_request(args, settings.date_field_names)


def chat_client(settings: Settings) -> ChatClient | None:
    """The chat model of the settings (`llm_url`, `llm_model`, key from the environment via
    `llm_api_key`), or None when no `llm_url` is set (answers are then extractive)."""
    if not settings.llm_url:
        return None
    if not settings.llm_model:
        raise ConfigError(
            f"llm_url is set ({settings.origins.get('llm_url', 'flag')}) but no llm_model; "
            "pass --llm-model or set CHROMASYNC_LLM_MODEL (or answer.llm_model)"
        )
    from .answer.chat import ChatClient
    from .retry import RetryPolicy

    return ChatClient(
        settings.llm_url,
        settings.llm_model,
        api_key=settings.llm_api_key,
        timeout_s=settings.llm_timeout,
        retry=RetryPolicy(attempts=settings.llm_retries, deadline_s=settings.llm_timeout),
    )


def answer(
    question: str,
    result: SearchResult,
    settings: Settings,
    *,
    on_token: Callable[[str], None] | None = None,
    fallback: bool | None = None,
    llm: ChatClient | None = None,
    stream: bool = True,
) -> Answer:
    """Answer `question` from a search result (see `answer.ask.answer_question`).

    `llm`: the chat model (default: `chat_client(settings)`; None there: extractive).
    `fallback`: answer extractively when the model is unreachable (default: the settings'
    `answer_fallback`). No hits: "No sources matched these filters." (or "... the
    question." without filters), flagged `no-sources`.
    """
    from .answer.ask import NO_MATCH_TEXT, NO_SOURCES_TEXT, answer_question

    client = llm if llm is not None else chat_client(settings)
    if fallback is None:
        fallback = settings.answer_fallback == "extractive"
    found = answer_question(
        question,
        result.hits,
        llm=client,
        group_by=result.group_field,
        context_tokens=settings.answer_context_tokens,
        on_token=on_token,
        fallback=fallback,
        stream=stream,
        no_sources_text=NO_SOURCES_TEXT if result.filters.is_empty else NO_MATCH_TEXT,
    )
    return replace(found, warnings=result.warnings) if result.warnings else found


def ask(
    args: SearchArgs,
    settings: Settings,
    *,
    on_token: Callable[[str], None] | None = None,
    fallback: bool | None = None,
    llm: ChatClient | None = None,
    embedder: Embedder | None = None,
) -> Answer:
    """Retrieve with the search request of `args` (its query is the question), then answer
    with citations (see `answer`). The question is checked before anything is opened."""
    from .answer.ask import check_question

    check_question(args.query)
    request = search_request(args, settings)
    result = retrieve(request, settings, embedder=embedder)
    return answer(args.query, result, settings, on_token=on_token, fallback=fallback, llm=llm)


def make_filters(settings: Settings, **options: Any) -> Filters:
    """`Filters` from surface arguments (see `retrieve.filters.filters_from_options`)."""
    options.setdefault("date_fields", settings.date_field_names)
    return filters_from_options(**options)


@contextmanager
def _storage_errors(settings: Settings) -> Iterator[None]:
    """A full disk, a read-only data dir or a permission error as a clear `StoreError`
    naming the data dir (never a raw `OSError` or `sqlite3.OperationalError`)."""
    try:
        yield
    except ChromasyncError as exc:
        found = storage_error(exc, settings.data_dir) if isinstance(exc, StoreError) else None
        if found is None or found is exc:
            raise
        raise found from exc
    except (OSError, sqlite3.Error) as exc:
        found = storage_error(exc, settings.data_dir)
        if found is None:
            raise
        raise found from exc


@contextmanager
def _retriever(settings: Settings, embedder: Embedder | None = None) -> Iterator[Retriever]:
    with _storage_errors(settings), _open_retriever(settings, embedder) as retriever:
        yield retriever


@contextmanager
def _open_retriever(settings: Settings, embedder: Embedder | None = None) -> Iterator[Retriever]:
    import time

    from .retrieve.bm25 import KeywordIndex
    from .retrieve.mirror import KeywordMirror
    from .retrieve.rerank import make_reranker

    store = open_store(settings)
    state = State.open(settings.data_dir, readonly=True)
    dirty = {row.collection for row in state.sources() if row.status != "clean"}
    retriever = Retriever(
        store,
        KeywordIndex(state.db),
        dirty,
        open_mirror=lambda: KeywordMirror.open(settings.data_dir),
        embedder=(lambda: embedder)
        if embedder is not None
        else (lambda: make_embedder_for(settings)),
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
    with _retriever(settings, embedder) as retriever:
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
    from .retrieve.evaluate import parse_queries

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
    embedder = embedder or make_embedder_for(settings)
    with _retriever(settings, embedder) as retriever:
        return find_similar(
            retriever,
            file,
            embedder,
            k=k,
            threshold=settings.duplicate_threshold if threshold is None else threshold,
            collections=collections,
            all_collections=all_collections,
            own=_indexed_as(file, settings),
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
    with _retriever(settings) as retriever:
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
        own = _indexed_as(file, settings) if on_disk and file.is_file() else None
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
    with State.open(settings.data_dir) as state:
        return list(state.sources())


def _indexed_as(file: Path, settings: Settings) -> tuple[str, str] | None:
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
    store = store or open_store(settings)
    existing = store.list_collections()
    explicit = {e.collection for e in configured_entries(settings) if e.collection}
    names = [n for n in existing if settings.owns_collection(n) or n in explicit]
    if not names:
        raise NotFound(
            f"no collection of {settings.collection!r} in {settings.store_location()}; "
            "run `chromasync ingest` first"
        )
    return names


# -- for long-running owners (serve, watch, mcp) and their clients ---------------------------


def known_specs(settings: Settings, labels: Sequence[str] = ()) -> list[SourceSpec]:
    """Specs of the sources a service can reindex or watch (see `access.select_known`);
    repository sources are left out (their work tree is synced at ingest time)."""
    entries, others = select_known(settings, labels)
    return [spec_for(e, settings) for e in entries if e.path is not None] + others


def ingest_known(
    settings: Settings,
    labels: Sequence[str] = (),
    options: IngestOptions | None = None,
    *,
    embedder: Embedder | None = None,
    environ: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    wait: bool = False,
) -> list[IngestSummary]:
    """Ingest known sources by label (all when none): configured ones as `ingest_configured`
    does (repositories fetched first), undeclared indexed ones from their recorded root."""
    run_options = options or default_options(settings)
    select_known(settings, labels)  # unknown labels fail before the lock is taken

    def jobs() -> list[tuple[SourceSpec, IngestOptions]]:
        entries, others = select_known(settings, labels)
        out = [(s, run_options) for s in others]
        if entries:
            chosen = [e.label for e in entries]
            out[:0] = configured_jobs(settings, chosen, run_options, environ=environ)
        return out

    return _ingest_jobs(
        settings, jobs, embedder=embedder, environ=environ, progress=progress, wait=wait
    )


__all__ = [
    "DEFAULT_MAX_BYTES",
    "MODES",
    "DiscoverResult",
    "EvalQuery",
    "EvalReport",
    "FileLines",
    "FileText",
    "Filters",
    "Fusion",
    "IngestOptions",
    "LinksReport",
    "RemovedSource",
    "SearchArgs",
    "SearchRequest",
    "SearchResult",
    "Settings",
    "SimilarDoc",
    "SimilarResult",
    "SourceEntry",
    "SourceInfo",
    "SourceStatus",
    "StateHealth",
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
    "ingest_configured",
    "ingest_known",
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
    "similar",
    "snippet",
    "source_for",
    "status",
    "verify",
    "with_context",
]
