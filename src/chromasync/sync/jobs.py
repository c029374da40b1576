"""Ingest jobs: which sources a run ingests, with which options, under one lock.

Design notes: docs/internals.md, `sync/jobs.py`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from ..config.settings import Settings
from ..config.sources import (
    collection_of,
    configured_entries,
    select_entries,
    spec_for,
    with_skips,
)
from ..datadir import cache_path
from ..embed import Embedder, embedder_for
from ..embed.cache import EmbeddingCache
from ..errors import ConfigError, storage_errors
from ..records import IngestSummary, SourceSpec
from ..state.lock import StoreLock
from ..state.manifest import STATE_FILE, State
from ..store.connect import open_store_for
from .ingest import IngestOptions, Ingestor, Progress
from .registry import select_known
from .resources import Resources

if TYPE_CHECKING:
    from ..state.snapshots import Recorder


def default_options(settings: Settings, **fields: Any) -> IngestOptions:
    """IngestOptions carrying the settings' file size limit and privacy keys."""
    fields.setdefault("max_file_bytes", settings.max_file_bytes)
    fields.setdefault("privacy_keys", settings.privacy_keys)
    fields.setdefault("chunk_max_tokens", settings.chunk_max_tokens)
    fields.setdefault("plan_ahead", settings.plan_ahead)
    fields.setdefault("date_fields", settings.date_field_names)
    return IngestOptions(**fields)


@dataclass(frozen=True, slots=True)
class ConfiguredSources:
    """The config's `include: true` sources, or exactly those `labels` name; repositories
    are fetched into the data dir's cache first (under the lock), and their records carry
    `indexed_commit_sha` (see `configured_jobs`)."""

    labels: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class KnownSources:
    """The sources a long-running owner knows (`registry.select_known`), by label or all:
    configured ones as `ConfiguredSources`, undeclared indexed ones from their recorded
    root. An unknown label fails before the lock is taken."""

    labels: tuple[str, ...] = ()


#: What an ingest runs: the given specs, the configured sources, or the known ones.
Sources: TypeAlias = Sequence[SourceSpec] | ConfiguredSources | KnownSources


def ingest(
    sources: Sources,
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
    to every source. Jobs run in one `Ingestor` per collection, under the data dir's lock,
    with one state file. A `recorder` (the CLI's) is told what an unchanged re-run would
    report, and writes it down for the fast path (`fastpath`, `snapshots`).
    """
    run_options = options or default_options(settings)
    if isinstance(sources, KnownSources):
        select_known(settings, sources.labels)  # unknown labels fail before the lock is taken
    environ = os.environ if environ is None else environ
    embedder = embedder or embedder_for(settings)
    summaries: list[IngestSummary] = []
    with storage_errors(settings.data_dir), StoreLock(settings.data_dir, wait=wait):
        state = State.open(settings.data_dir)
        ingestors: dict[str, Ingestor] = {}
        try:
            for spec, job_options in _jobs(sources, settings, run_options, environ):
                spec = with_skips(spec, settings)
                name = collection_of(spec, settings)
                if name not in ingestors:
                    resources = Resources(
                        state,
                        name,
                        embedder,
                        open_store=lambda existing=False: open_store_for(settings, existing),
                        cache=lambda: EmbeddingCache(
                            Path(cache_path(settings.data_dir)), settings.cache_max_entries
                        ),
                    )
                    ingestors[name] = Ingestor(
                        resources,
                        environ=environ,
                        progress=progress,
                        on_settled=recorder.add if recorder is not None else None,
                    )
                summaries.append(ingestors[name].ingest(spec, job_options))
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


def _jobs(
    sources: Sources, settings: Settings, options: IngestOptions, environ: Mapping[str, str]
) -> list[tuple[SourceSpec, IngestOptions]]:
    """(spec, options) for each source a run ingests (under the lock: it may fetch)."""
    if isinstance(sources, ConfiguredSources):
        return configured_jobs(settings, sources.labels, options, environ=environ)
    if isinstance(sources, KnownSources):
        entries, others = select_known(settings, sources.labels)
        out = [(s, options) for s in others]
        if entries:
            chosen = [e.label for e in entries]
            out[:0] = configured_jobs(settings, chosen, options, environ=environ)
        return out
    return [(spec, options) for spec in sources]


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
            from ..corpus.git import sync_repository

            checkout = sync_repository(entry.repo, entry.branch, settings.data_dir, environ=environ)
            extra = {**run_options.extra_metadata, "indexed_commit_sha": checkout.commit}
            spec = spec_for(entry, settings, root=checkout.work_tree)
            out.append((spec, replace(run_options, extra_metadata=extra)))
        else:
            out.append((spec_for(entry, settings), run_options))
    return out


# -- for long-running owners (serve, watch, mcp) ---------------------------------------------


def known_specs(settings: Settings, labels: Sequence[str] = ()) -> list[SourceSpec]:
    """Specs of the sources a service can reindex or watch (see `registry.select_known`);
    repository sources are left out (their work tree is synced at ingest time)."""
    entries, others = select_known(settings, labels)
    return [spec_for(e, settings) for e in entries if e.path is not None] + others
