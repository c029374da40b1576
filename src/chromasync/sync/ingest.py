"""Ingest: the I/O shell around the pure stages, for one source at a time.

Order of effects (see docs/reliability.md): mark the source `running`; per wave of files embed,
upsert, then commit their manifest rows; only when every upsert succeeded, delete from
Chroma, then from the manifest; mark the source `clean`. A run that dies anywhere leaves
`running` behind, and the next run rebuilds the manifest from the collection first.

An unchanged re-run stats the tree and compares with the manifest: it reads no file,
imports no chromadb, loads no model, and writes nothing but its run record. When a re-run
over the tree just walked would be such a no-op, the source is reported as settled
(`on_settled`), which the CLI's fast path records (`fastpath`).

Named crash points (`CHROMASYNC_CRASH_AT=name[:n]` kills the process with SIGKILL at the
n-th time the point is reached; for the crash tests): `after-embed`, `after-upsert`,
`mid-manifest`, `after-manifest`, `after-delete`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..corpus import read as corpus_read
from ..corpus.read import read_file
from ..corpus.walk import discover_source
from ..embed import Embedder, follow_stored
from ..embed.cache import EmbeddingCache
from ..errors import SourceError, StoreError
from ..plan.triage import Triage, check_deletions, triage
from ..records import (
    CHUNKING_VERSION,
    Discovery,
    FileChange,
    FileState,
    IngestSummary,
    SettledSource,
    SourceSpec,
    StoreLimits,
)
from ..state.manifest import State, check_identity, check_shared_folder
from . import ahead
from .planning import (
    FilePlanner,
    FittedStream,
    Planner,
    PlanSettings,
    chunks_total,
    count_uncached,
    deletions,
    preflight,
)
from .resources import Resources
from .settled import noop_summary, settled
from .waves import WAVE_RECORDS, CrashPoints, Progress, Tally, WaveWriter

if TYPE_CHECKING:
    from ..store.chroma import Store

log = logging.getLogger(__name__)


#: A file's time budget in seconds, from its read to its last chunk.
FILE_SECONDS = 60.0
#: The clock of those budgets (tests put a fake one here).
FILE_CLOCK: Callable[[], float] = time.monotonic


@dataclass(frozen=True, slots=True)
class IngestOptions:
    dry_run: bool = False
    checksum: bool = False
    reembed: bool = False
    allow_mass_delete: bool = False
    gc: bool = True
    gc_only: bool = False
    limit: int | None = None
    max_file_bytes: int = 8 * 1024 * 1024
    privacy_keys: tuple[str, ...] = ("private",)
    extra_metadata: Mapping[str, str | int | float | bool] = field(default_factory=dict)
    chunk_max_tokens: int | None = None  # lower than the model's limit; None: the model's
    plan_ahead: str = "auto"  # read and chunk in a second process: auto, on, off (`ahead`)
    date_fields: tuple[str, ...] = ("date", "published_at")  # checked: `date-unreadable`


class Ingestor:
    """Runs ingests against one data dir's state and store; the caller holds the lock."""

    def __init__(
        self,
        state: State,
        collection_name: str,
        embedder: Embedder,
        open_store: Callable[..., Store],
        cache: Callable[[], EmbeddingCache],
        environ: Mapping[str, str] | None = None,
        progress: Progress | None = None,
        on_settled: Callable[[SettledSource], None] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.state = state
        #: Each file's time budget (read and chunk); past it, a `too-slow` skip.
        self.file_seconds = FILE_SECONDS
        self.clock = clock or FILE_CLOCK
        self.collection_name = collection_name
        self.embedder = embedder
        self.resources = Resources(state, collection_name, embedder, open_store, cache)
        self._crash = CrashPoints((environ or {}).get("CHROMASYNC_CRASH_AT"))
        self._progress = progress or (lambda phase, done, total: None)
        self._on_settled = on_settled

    def limits(self, options: IngestOptions) -> StoreLimits:
        """The target's limits; a dry run opens no store that does not exist yet."""
        return self.resources.limits(options.dry_run, options.reembed)

    def close(self) -> None:
        self.resources.close()

    # -- one source ----------------------------------------------------------------------

    def ingest(self, spec: SourceSpec, options: IngestOptions) -> IngestSummary:
        """Sync one source; its root is resolved, and must be the one its label belongs to
        (`check_identity`)."""
        spec = replace(spec, root=spec.root.expanduser().resolve())
        relative = check_identity(self.state, spec.label, spec.root)
        summary = self._ingest(spec, options, adopting=self.collection_name in relative)
        if self.collection_name in relative and not options.dry_run:
            self.state.set_root(self.collection_name, spec.label, str(spec.root))
        return summary

    def _ingest(
        self, spec: SourceSpec, options: IngestOptions, adopting: bool = False
    ) -> IngestSummary:
        """`adopting`: the source's old relative root is being resolved to this one; then
        a run that finds none of its files deletes nothing, whatever else the folder holds."""
        self.resources.labels.append(spec.label)
        started = time.perf_counter_ns()
        name, label = self.collection_name, spec.label
        run = Tally()
        discovery = discover_source(
            spec, options.max_file_bytes, listing=self._on_settled is not None
        )
        run.skipped.update(s.reason for s in discovery.skipped)
        files = discovery.files[: options.limit] if options.limit else discovery.files
        if options.limit:
            discovery = replace(discovery, files=files)
        row = self.state.source(name, label)
        if row is None:  # a new label: not a second name for an indexed folder
            check_shared_folder(self.state, label, spec.root, (f.rel_path for f in files))
        if row is not None and not options.reembed:
            follow_stored(self.embedder, row.embedding_model)
        model_changed = row is not None and row.embedding_model != self.embedder.model_id
        must_heal = row is None or row.status != "clean" or options.reembed or model_changed
        rechunk = row is not None and row.chunking_version != CHUNKING_VERSION
        # Stat fields only: the fast path parses no record lists.
        manifest = self.state.files(name, label, with_records=must_heal)
        if row is None and discovery.files and not options.dry_run:
            self.resources.prefetch_model()  # a first run embeds: load while the store opens
        if must_heal and (discovery.files or manifest):
            manifest, chunked_by = self.resources.heal(
                label, manifest, options.dry_run, options.reembed
            )
            # records of an older chunker, found by a rebuild: their files are chunked again
            rechunk = rechunk or any(v != CHUNKING_VERSION for v in chunked_by)
        reread = frozenset({"undecodable"} if spec.encoding != "utf-8" else ())
        sorted_ = triage(discovery, manifest, options.checksum or rechunk, reread)
        if options.limit:
            sorted_ = replace(sorted_, gone=())
        run.skipped.update(sorted_.remembered_skips.values())
        run.files_unchanged = len(sorted_.unchanged)
        if not (must_heal or sorted_.to_read or sorted_.gone):
            summary = noop_summary(
                self.state, name, spec, discovery, sorted_, started, options.dry_run
            )
            if not options.dry_run:
                self.state.record_noop_run(name, label, summary.as_json())
                self._settle(spec, discovery, options, summary)
            return summary
        if not must_heal:
            manifest = self.state.files(name, label)

        if not options.dry_run and any(f.rel_path not in manifest for f in sorted_.to_read):
            self.resources.prefetch_model()  # new files embed: load while they are read and chunked
        if self._can_stream(spec, discovery, sorted_, manifest, options, adopting):
            return self._stream(
                spec, discovery, sorted_, manifest, options, run, rechunk, must_heal, started
            )
        # every change at once: a dry run, `--gc-only`, a run that may delete most of a source
        planner = self._planner(spec, discovery, sorted_, manifest, options, run, rechunk)
        changes = list(planner.changes())
        touched, newly_skipped = planner.touched, planner.skipped
        if options.gc_only:
            changes, newly_skipped = [], {}
        if changes:
            limits = self.limits(options)
            changes = preflight(changes, limits, run, newly_skipped, self.collection_name)
        gone = sorted_.gone if (options.gc or options.gc_only) else ()
        # a file whose content reappears at a new path moved: that is not a deletion
        arrived = {c.file_hash for c in changes if c.is_new}
        moved = sum(1 for p in gone if manifest[p].file_hash in arrived)
        check_deletions(
            len(manifest),
            len(gone) - moved,
            options.allow_mass_delete,
            label,
            found_files=0 if adopting else len(discovery.files),
        )

        wanted = {r.id for c in changes for r in c.records}  # a rename keeps its record IDs
        deleted = (i for c in changes for i in c.to_delete)
        delete_ids = deletions(deleted, gone, newly_skipped, manifest, wanted)
        summary_base = dict(
            collection=name,
            source=label,
            files_seen=len(discovery.files) + len(discovery.skipped),
            files_new=sum(c.is_new for c in changes),
            files_updated=sum(not c.is_new for c in changes),
            files_unchanged=run.files_unchanged + len(touched),
            files_deleted=len(gone)
            + sum(1 for p in newly_skipped if p in manifest and manifest[p].records),
            chunks_total=chunks_total(manifest, changes, gone, newly_skipped),
            chunks_deleted=len(delete_ids),
            dry_run=options.dry_run,
            metadata_keys_dropped=run.keys_dropped,
        )
        if options.dry_run:
            run.chunks_embedded = count_uncached(
                changes, self.embedder.model_id, self.resources.cache, self.resources.store_embeds
            )
            run.chunks_reused = sum(len(c.records) for c in changes) - run.chunks_embedded
            return run.summary(summary_base, started)

        if not (changes or touched or newly_skipped or gone or must_heal):
            return self._noop(spec, discovery, options, summary_base, run, started)

        self._begin(spec)
        if touched:
            self.state.touch_files(name, label, touched)
        if changes:
            self._write(label, changes, run, options)
        return self._conclude(
            spec, discovery, options, summary_base, run, started, delete_ids, gone, newly_skipped
        )

    def _begin(self, spec: SourceSpec) -> None:
        """Mark the source `running` before its first write (a crash then heals it)."""
        self.state.begin_run(
            self.collection_name,
            spec.label,
            str(spec.root),
            spec.kind,
            self.embedder.model_id,
            CHUNKING_VERSION,
        )

    def _noop(
        self,
        spec: SourceSpec,
        discovery: Discovery,
        options: IngestOptions,
        summary_base: Mapping[str, object],
        run: Tally,
        started: int,
    ) -> IngestSummary:
        """A run that changes nothing: recorded as such, and settled for the fast path."""
        summary = run.summary(summary_base, started)
        self.state.record_noop_run(self.collection_name, spec.label, summary.as_json())
        self._settle(spec, discovery, options)
        return summary

    def _conclude(
        self,
        spec: SourceSpec,
        discovery: Discovery,
        options: IngestOptions,
        summary_base: Mapping[str, object],
        run: Tally,
        started: int,
        delete_ids: Sequence[str],
        gone: Sequence[str],
        newly_skipped: Mapping[str, FileState],
    ) -> IngestSummary:
        """After every write succeeded: the deletions, the gone and newly skipped files, the
        run's summary (both the whole-plan and the streamed path end here)."""
        name, label = self.collection_name, spec.label
        if delete_ids:
            self.resources.collection().delete(list(delete_ids))
            self._crash.hit("after-delete")
        self.state.remove_files(name, label, gone)
        if newly_skipped:
            self.state.commit_files(name, label, list(newly_skipped.values()), {})
        summary = run.summary(summary_base, started)
        self.state.finish_run(name, label, "ok", summary.as_json())
        self._settle(spec, discovery, options)
        return summary

    def _can_stream(
        self,
        spec: SourceSpec,
        discovery: Discovery,
        sorted_: Triage,
        manifest: Mapping[str, FileState],
        options: IngestOptions,
        adopting: bool,
    ) -> bool:
        """Whether the run can write each wave as soon as it is planned (`_stream`): not a
        dry run or `--gc-only`, and its deletions are allowed even if none of the gone files
        moved (a refusal must come before anything is written, and moves are known only
        once every file was read)."""
        if options.dry_run or options.gc_only:
            return False
        gone = sorted_.gone if options.gc else ()
        try:
            check_deletions(
                len(manifest),
                len(gone),
                options.allow_mass_delete,
                spec.label,
                found_files=0 if adopting else len(discovery.files),
            )
        except SourceError:
            return False
        return True

    def _stream(
        self,
        spec: SourceSpec,
        discovery: Discovery,
        sorted_: Triage,
        manifest: Mapping[str, FileState],
        options: IngestOptions,
        run: Tally,
        rechunk: bool,
        must_heal: bool,
        started: int,
    ) -> IngestSummary:
        """Read, plan and write wave by wave: a wave's records (texts, metadata, vectors)
        are dropped once its manifest rows are committed, so memory is bounded by a wave,
        not by the tree. Same effects, in the same order, as the run planned whole: the
        source is marked `running` before the first write; re-stats, deletions and
        remembered skips follow the last wave."""
        name, label = self.collection_name, spec.label
        gone = sorted_.gone if options.gc else ()
        planner = self._stream_planner(
            self._planner(spec, discovery, sorted_, manifest, options, run, rechunk), options
        )
        # the store opens with the first change
        fitted = FittedStream(planner, lambda: self.limits(options), WAVE_RECORDS)
        begun = False

        def begun_first() -> Iterator[FileChange]:
            nonlocal begun
            for change in fitted.changes():
                if not begun:
                    self._begin(spec)
                    begun = True
                yield change

        self._write(label, begun_first(), run, options, files=len(sorted_.to_read))
        fitted.finish(name)
        newly_skipped = planner.skipped
        delete_ids = deletions(fitted.delete_ids, gone, newly_skipped, manifest, fitted.wanted)
        total = fitted.chunks_total
        for path in (*gone, *newly_skipped):
            if path in manifest:
                total -= len(manifest[path].records)
        summary_base = dict(
            collection=name,
            source=label,
            files_seen=len(discovery.files) + len(discovery.skipped),
            files_new=fitted.new,
            files_updated=fitted.updated,
            files_unchanged=run.files_unchanged + len(planner.touched),
            files_deleted=len(gone)
            + sum(1 for p in newly_skipped if p in manifest and manifest[p].records),
            chunks_total=total,
            chunks_deleted=len(delete_ids),
            dry_run=False,
            metadata_keys_dropped=run.keys_dropped,
        )
        if not (begun or planner.touched or newly_skipped or gone or must_heal):
            return self._noop(spec, discovery, options, summary_base, run, started)
        if not begun:
            self._begin(spec)
        if planner.touched:
            self.state.touch_files(name, label, planner.touched)
        return self._conclude(
            spec, discovery, options, summary_base, run, started, delete_ids, gone, newly_skipped
        )

    def _settle(
        self,
        spec: SourceSpec,
        discovery: Discovery,
        options: IngestOptions,
        summary: IngestSummary | None = None,
    ) -> None:
        """Report the source as settled when a re-run over the tree just walked would be a
        no-op (`summary`: the no-op this run was); see `settled` and `fastpath`."""
        if self._on_settled is None:
            return
        if options.dry_run or options.limit or options.gc_only or not options.gc:
            return
        found = settled(
            self.state, self.collection_name, self.embedder.model_id, spec, discovery, summary
        )
        if found is not None:
            self._on_settled(found)

    # -- stages of a run -----------------------------------------------------------------

    def _planner(
        self,
        spec: SourceSpec,
        discovery: Discovery,
        sorted_: Triage,
        manifest: Mapping[str, FileState],
        options: IngestOptions,
        run: Tally,
        rechunk: bool,
    ) -> FilePlanner:
        """The planner of one run's file writes, reading through this module's `read_file`
        (the edge where tests count reads)."""
        limit = self.embedder.max_tokens
        settings = PlanSettings(
            model_id=self.embedder.model_id,
            tokens=min(limit, options.chunk_max_tokens) if options.chunk_max_tokens else limit,
            privacy_keys=options.privacy_keys,
            max_file_bytes=options.max_file_bytes,
            extra_metadata=options.extra_metadata,
            file_seconds=self.file_seconds,
            rechunk=rechunk,
            date_fields=options.date_fields,
        )
        return FilePlanner(
            spec,
            discovery,
            sorted_,
            manifest,
            run,
            settings,
            meter=self.resources.meter,
            read=read_file,
            clock=self.clock,
            progress=self._progress,
        )

    def _stream_planner(self, planner: FilePlanner, options: IngestOptions) -> Planner:
        """A streamed run's planner: in a second process when `ahead.use` says so (and no
        test clock or reader stands in), else `planner` itself."""
        stand_in = self.clock is not FILE_CLOCK or read_file is not corpus_read.read_file
        cores = bool(getattr(self.embedder, "uses_local_cores", False))
        files = len(planner.sorted_.to_read)
        if stand_in or not ahead.use(options.plan_ahead, files, model_on_cores=cores):
            return planner
        nice = ahead.NICE if cores else 0
        return ahead.AheadPlanner(planner, self.embedder.tokenizer_path, self._progress, nice)

    def _write(
        self,
        label: str,
        changes: Iterable[FileChange],
        run: Tally,
        options: IngestOptions,
        files: int | None = None,
    ) -> None:
        writer = WaveWriter(
            self.state,
            self.collection_name,
            self.embedder,
            cache=self.resources.cache,
            collection=lambda: self.resources.collection(options.reembed),
            crash=self._crash,
            progress=self._progress,
        )
        writer.write(label, changes, run, files=files)


__all__ = ["IngestOptions", "Ingestor", "Progress", "StoreError"]
