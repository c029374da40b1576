"""The Python API: every surface (CLI, REST, MCP, watch) calls these functions.

from chromasync import api
settings = api.resolve_settings({"data_dir": ".chromasync"}, os.environ)
summaries = api.ingest([api.source_for("notes/")], settings)
hits = api.search("how do I install", settings, k=5)
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .answer.summaries import SummariesReport
from .config.settings import CONFIG_ENV, ConfigFile, Settings, find_config_file, resolve_settings
from .config.sources import configured_entries, select_entries, spec_for, with_skips
from .datadir import CACHE_FILE as CACHE_FILE
from .embed import Embedder
from .embed.cache import EmbeddingCache
from .errors import ConfigError, NotFound, SourceError, storage_errors
from .records import Hit, IngestSummary, SourceSpec
from .retrieve import MODES, Filters, Fusion, SearchRequest, SearchResult
from .retrieve.access import (
    DEFAULT_MAX_BYTES,
    FileLines,
    FileText,
    get_document,
    get_file,
    get_files,
    indexed_file_location,
    read_indexed_file,
    select_known,
)
from .retrieve.evaluate import EvalQuery
from .retrieve.filters import filters_from_options, normalise_where
from .retrieve.links import LinksReport
from .retrieve.request import SearchArgs, build_request
from .retrieve.session import (
    WarmSessions,
    embedder_for,
    evaluate,
    indexed_as,
    links,
    load_queries,
    open_retriever,
    search_collections,
    similar,
)
from .retrieve.similar import SimilarDoc
from .retrieve.tasks import (
    EvalReport,
    SimilarResult,
    SuggestResult,
    find_suggestions,
)
from .state.lock import StoreLock
from .state.manifest import STATE_FILE, State
from .sync.checks import check_sources
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
    return embedder_for(settings)


def open_store(settings: Settings, existing: bool = False, reading: bool = False) -> Store:
    return open_store_for(settings, existing, reading)


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
            spec = with_skips(job_spec, settings)
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
    spec = with_skips(spec, settings)
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
    with storage_errors(settings.data_dir), StoreLock(settings.data_dir, wait=wait):
        state = State.open(settings.data_dir)
        ingestors: dict[str, Ingestor] = {}
        try:
            for spec, options in jobs():
                spec = with_skips(spec, settings)
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
    checks, specs = check_sources(settings, labels, wait)
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
    after, _ = check_sources(settings, labels, wait)
    before = {(c.collection, c.source): c for c in checks}
    return [
        replace(c, repaired=not before[(c.collection, c.source)].ok)
        if (c.collection, c.source) in before
        else c
        for c in after
    ]


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
    embedder = embedder or make_embedder_for(settings)
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


def summaries(
    settings: Settings,
    *,
    group_by: str,
    collections: Sequence[str] = (),
    all_collections: bool = False,
    limit: int = 100,
    client: ChatClient | None = None,
) -> SummariesReport:
    """One short summary per value of `group_by` (a metadata field, `source`, `collection`
    or `path:N`) over every indexed chunk of the searched collections: written by the chat
    model when `llm_url` is configured (or `client` given), else extractive, with each
    group's distinctive terms. Cached in the data dir by each group's set of chunk hashes:
    only groups whose content changed are written again (see `answer.summaries`)."""
    from .answer.summaries import load_cache, save_cache, summarize_groups
    from .retrieve.suggest import group_key

    key = group_key(group_by)
    client = client if client is not None else chat_client(settings)
    groups: dict[str, list[Hit]] = {}
    with open_retriever(settings) as retriever:
        request = SearchRequest("", collections=tuple(collections), all_collections=all_collections)
        for name in retriever.collection_names(request):
            for record in retriever.collection(name).iter_records(documents=True):
                hit = Hit.from_metadata(
                    record.id, record.metadata, record.document or "", 0.0, name
                )
                groups.setdefault(key(hit), []).append(hit)
    if not groups:
        raise NotFound("nothing is indexed in the searched collections; run `chromasync ingest`")
    stored = load_cache(settings.data_dir)
    field_key = group_by.strip()
    cache = stored.get(field_key)
    cache = dict(cache) if isinstance(cache, dict) else {}
    report = summarize_groups(groups, group_by=field_key, cache=cache, client=client, limit=limit)
    if report.written or stored.get(field_key) != cache:
        stored[field_key] = cache
        save_cache(settings.data_dir, stored)
    return report


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
    "suggest",
    "summaries",
    "verify",
    "with_context",
]
