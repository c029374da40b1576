"""Ingest: the I/O shell around the pure stages, for one source at a time.

Design notes: docs/internals.md, `sync/ingest.py`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..corpus.read import read_file
from ..corpus.walk import discover_source
from ..errors import SourceError, StoreError
from ..plan.triage import Triage, check_deletions, chunks_total, deletions, triage
from ..plan.upgrade import RECORDS_VERSION
from ..records import (
    Discovery,
    FileChange,
    FileState,
    IngestSummary,
    Progress,
    SettledSource,
    SourceSpec,
    StoreLimits,
)
from ..state.manifest import check_identity, check_shared_folder
from ..state.rows import identity_claims
from ..versions import CHUNKING_VERSION
from . import ahead
from .planning import (
    FilePlanner,
    FittedStream,
    Planner,
    PlanSettings,
    ReadFile,
    count_uncached,
    preflight,
)
from .resources import Resources
from .settled import noop_summary, settled
from .waves import WAVE_RECORDS, CrashPoints, Tally, WaveWriter

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


@dataclass(frozen=True, slots=True)
class IngestRun:
    """One source's run, once its files are sorted: what every later step of it reads."""

    spec: SourceSpec
    options: IngestOptions
    discovery: Discovery
    triage: Triage
    manifest: Mapping[str, FileState]  # the source's manifest rows before this run
    tally: Tally  # what the run counts as it goes (skips, embedded, reused...)
    rechunk: bool  # unchanged files are chunked again (records of an older chunker)
    must_heal: bool  # the manifest was rebuilt from the collection first
    adopting: bool  # the source's old relative root is being resolved to this one
    started: int  # `perf_counter_ns` when the run began

    @property
    def gone(self) -> tuple[str, ...]:
        """The manifest's files the walk no longer finds, when this run collects them."""
        return tuple(self.triage.gone) if self.options.gc or self.options.gc_only else ()


@dataclass(frozen=True, slots=True)
class Written:
    """What a run's writes came to, whichever path planned them: its summary's figures."""

    new: int
    updated: int
    touched: Sequence[FileState]  # unchanged content, re-stat only
    newly_skipped: Mapping[str, FileState]  # remembered skips found by this run
    delete_ids: Sequence[str]
    chunks_total: int


class Ingestor:
    """Runs ingests against one data dir's state and store; the caller holds the lock.

    `read` and `clock` are where a run reads files and times them (tests count reads, or
    put a fake clock); a planner ahead (`ahead`) reads in its own process with
    `corpus.read.read_file` and the monotonic clock, so a caller that injects either one
    plans in this process (`plan_ahead: off`).
    """

    def __init__(
        self,
        resources: Resources,
        environ: Mapping[str, str] | None = None,
        progress: Progress | None = None,
        on_settled: Callable[[SettledSource], None] | None = None,
        clock: Callable[[], float] | None = None,
        read: ReadFile | None = None,
    ) -> None:
        self.state = resources.state
        #: Each file's time budget (read and chunk); past it, a `too-slow` skip.
        self.file_seconds = FILE_SECONDS
        self.clock = clock or FILE_CLOCK
        self.read = read or read_file
        self.collection_name = resources.collection_name
        self.embedder = resources.embedder
        self.resources = resources
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
        tally = Tally()
        discovery = discover_source(
            spec, options.max_file_bytes, listing=self._on_settled is not None
        )
        tally.skipped.update(s.reason for s in discovery.skipped)
        files = discovery.files[: options.limit] if options.limit else discovery.files
        if options.limit:
            discovery = replace(discovery, files=files)
        row = self.state.source(name, label)
        if row is None:  # a new label: not a second name for an indexed folder
            check_shared_folder(self.state, label, spec.root, (f.rel_path for f in files))
        if row is not None and not options.reembed:
            self.embedder.follow(row.embedding_model)
        model_changed = row is not None and row.embedding_model != self.embedder.model_id
        must_heal = row is None or row.status != "clean" or options.reembed or model_changed
        rechunk = row is not None and row.chunking_version != CHUNKING_VERSION
        # Stat fields only: the fast path parses no record lists.
        manifest = self.state.files(name, label, with_records=must_heal)
        if row is None and discovery.files and not options.dry_run:
            self.embedder.prefetch()  # a first run embeds: load while the store opens
        if must_heal and (discovery.files or manifest):
            manifest, chunked_by = self.resources.heal(
                label, manifest, options.dry_run, options.reembed
            )
            # records of an older chunker, found by a rebuild: their files are chunked again
            rechunk = rechunk or any(v != CHUNKING_VERSION for v in chunked_by)
        if (
            row is not None
            and not (options.dry_run or options.reembed)
            and self.state.records_version(name, label) < RECORDS_VERSION
        ):  # an index an older release wrote: its records get today's keys (metadata only)
            self.resources.upgrade(label)
        reread = frozenset({"undecodable"} if spec.encoding != "utf-8" else ())
        sorted_ = triage(discovery, manifest, options.checksum or rechunk, reread)
        if options.limit:
            sorted_ = replace(sorted_, gone=())
        tally.skipped.update(sorted_.remembered_skips.values())
        tally.files_unchanged = len(sorted_.unchanged)
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
        run = IngestRun(
            spec,
            options,
            discovery,
            sorted_,
            manifest,
            tally,
            rechunk,
            must_heal,
            adopting,
            started,
        )
        if not options.dry_run and any(f.rel_path not in manifest for f in sorted_.to_read):
            self.embedder.prefetch()  # new files embed: load while they are read and chunked
        if self._can_stream(run):
            return self._stream(run)
        return self._whole(run)

    def _whole(self, run: IngestRun) -> IngestSummary:
        """Every change at once: a dry run, `--gc-only`, a run that may delete most of a
        source (moves are known only once every file was read)."""
        options, manifest = run.options, run.manifest
        planner = self._planner(run)
        changes = list(planner.changes())
        touched, newly_skipped = planner.touched, planner.skipped
        if options.gc_only:
            changes, newly_skipped = [], {}
        if changes:
            limits = self.limits(options)
            changes = preflight(changes, limits, run.tally, newly_skipped, self.collection_name)
        gone = run.gone
        # a file whose content reappears at a new path moved: that is not a deletion
        arrived = {c.file_hash for c in changes if c.is_new}
        moved = sum(1 for p in gone if manifest[p].file_hash in arrived)
        check_deletions(
            len(manifest),
            len(gone) - moved,
            options.allow_mass_delete,
            run.spec.label,
            found_files=0 if run.adopting else len(run.discovery.files),
        )
        wanted = {r.id for c in changes for r in c.records}  # a rename keeps its record IDs
        deleted = (i for c in changes for i in c.to_delete)
        written = Written(
            new=sum(c.is_new for c in changes),
            updated=sum(not c.is_new for c in changes),
            touched=touched,
            newly_skipped=newly_skipped,
            delete_ids=deletions(
                deleted, gone, newly_skipped, manifest, wanted, {c.rel_path for c in changes}
            ),
            chunks_total=chunks_total(manifest, changes, gone, newly_skipped),
        )
        if options.dry_run:
            tally = run.tally
            tally.chunks_embedded = count_uncached(
                changes, self.embedder.model_id, self.resources.cache, self.embedder.embeds_in_store
            )
            tally.chunks_reused = sum(len(c.records) for c in changes) - tally.chunks_embedded
            return tally.summary(self._summary_base(run, written), run.started)
        if not (changes or touched or newly_skipped or gone or run.must_heal):
            return self._noop(run, written)
        self._begin(run.spec)
        if touched:
            self.state.touch_files(self.collection_name, run.spec.label, touched)
        if changes:
            self._write(run, changes)
        return self._conclude(run, written)

    def _stream(self, run: IngestRun) -> IngestSummary:
        """Read, plan and write wave by wave: a wave's records (texts, metadata, vectors)
        are dropped once its manifest rows are committed, so memory is bounded by a wave,
        not by the tree. Same effects, in the same order, as the run planned whole: the
        source is marked `running` before the first write; re-stats, deletions and
        remembered skips follow the last wave."""
        manifest, gone = run.manifest, run.gone
        planner = self._stream_planner(self._planner(run), run.options)
        # the store opens with the first change
        fitted = FittedStream(planner, lambda: self.limits(run.options), WAVE_RECORDS)
        begun = False

        def begun_first() -> Generator[FileChange, None, None]:
            nonlocal begun
            for change in fitted.changes():
                if not begun:
                    self._begin(run.spec)
                    begun = True
                yield change

        stream = begun_first()
        try:
            self._write(run, stream, files=len(run.triage.to_read))
        finally:
            stream.close()  # a failed write ends the planner now (its worker, `ahead`)
        fitted.finish(self.collection_name)
        newly_skipped = planner.skipped
        total = fitted.chunks_total
        for path in (*gone, *newly_skipped):
            if path in manifest:
                total -= len(manifest[path].records)
        written = Written(
            new=fitted.new,
            updated=fitted.updated,
            touched=planner.touched,
            newly_skipped=newly_skipped,
            delete_ids=deletions(
                fitted.delete_ids, gone, newly_skipped, manifest, fitted.wanted, fitted.changed
            ),
            chunks_total=total,
        )
        if not (begun or planner.touched or newly_skipped or gone or run.must_heal):
            return self._noop(run, written)
        if not begun:
            self._begin(run.spec)
        if planner.touched:
            self.state.touch_files(self.collection_name, run.spec.label, planner.touched)
        return self._conclude(run, written)

    def _summary_base(self, run: IngestRun, written: Written) -> dict[str, object]:
        """The run's summary figures (the tally adds its counts and times): one place for
        the whole-plan and the streamed path alike."""
        manifest, gone, skipped = run.manifest, run.gone, written.newly_skipped
        return dict(
            collection=self.collection_name,
            source=run.spec.label,
            files_seen=len(run.discovery.files) + len(run.discovery.skipped),
            files_new=written.new,
            files_updated=written.updated,
            files_unchanged=run.tally.files_unchanged + len(written.touched),
            files_deleted=len(gone)
            + sum(1 for p in skipped if p in manifest and manifest[p].records),
            chunks_total=written.chunks_total,
            chunks_deleted=len(written.delete_ids),
            dry_run=run.options.dry_run,
            metadata_keys_dropped=run.tally.keys_dropped,
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

    def _noop(self, run: IngestRun, written: Written) -> IngestSummary:
        """A run that changes nothing: recorded as such, and settled for the fast path."""
        summary = run.tally.summary(self._summary_base(run, written), run.started)
        self.state.record_noop_run(self.collection_name, run.spec.label, summary.as_json())
        self._settle(run.spec, run.discovery, run.options)
        return summary

    def _conclude(self, run: IngestRun, written: Written) -> IngestSummary:
        """After every write succeeded: the deletions, the gone and newly skipped files, the
        run's summary (both the whole-plan and the streamed path end here)."""
        name, label = self.collection_name, run.spec.label
        if written.delete_ids:
            self.resources.collection().delete(list(written.delete_ids))
            self._crash.hit("after-delete")
        self.state.remove_files(name, label, run.gone)
        if written.newly_skipped:
            self.state.commit_files(name, label, list(written.newly_skipped.values()), {})
        summary = run.tally.summary(self._summary_base(run, written), run.started)
        self.state.finish_run(name, label, "ok", summary.as_json())
        self._settle(run.spec, run.discovery, run.options)
        return summary

    def _can_stream(self, run: IngestRun) -> bool:
        """Whether the run can write each wave as soon as it is planned (`_stream`): not a
        dry run or `--gc-only`, and its deletions are allowed even if none of the gone files
        moved (a refusal must come before anything is written, and moves are known only
        once every file was read)."""
        options = run.options
        if options.dry_run or options.gc_only:
            return False
        try:
            check_deletions(
                len(run.manifest),
                len(run.gone),
                options.allow_mass_delete,
                run.spec.label,
                found_files=0 if run.adopting else len(run.discovery.files),
            )
        except SourceError:
            return False
        return True

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

    def _planner(self, run: IngestRun) -> FilePlanner:
        """The planner of one run's file writes, reading through `self.read` (the edge where
        tests count reads)."""
        options = run.options
        limit = self.embedder.max_tokens
        settings = PlanSettings(
            model_id=self.embedder.model_id,
            tokens=min(limit, options.chunk_max_tokens) if options.chunk_max_tokens else limit,
            privacy_keys=options.privacy_keys,
            max_file_bytes=options.max_file_bytes,
            extra_metadata=options.extra_metadata,
            file_seconds=self.file_seconds,
            rechunk=run.rechunk,
            date_fields=options.date_fields,
            claims=identity_claims(self.state.db, self.collection_name, run.spec.label)
            if run.spec.identity_key
            else {},
        )
        return FilePlanner(
            run.spec,
            run.discovery,
            run.triage,
            run.manifest,
            run.tally,
            settings,
            meter=self.resources.meter,
            read=self.read,
            clock=self.clock,
            progress=self._progress,
        )

    def _stream_planner(self, planner: FilePlanner, options: IngestOptions) -> Planner:
        """A streamed run's planner: in a second process when `ahead.use` says so, else
        `planner` itself."""
        cores = self.embedder.uses_local_cores
        files = len(planner.sorted_.to_read)
        if not ahead.use(options.plan_ahead, files, model_on_cores=cores):
            return planner
        nice = ahead.NICE if cores else 0
        return ahead.AheadPlanner(planner, self.embedder.tokenizer_path, self._progress, nice)

    def _write(
        self, run: IngestRun, changes: Iterable[FileChange], files: int | None = None
    ) -> None:
        writer = WaveWriter(
            self.state,
            self.collection_name,
            self.embedder,
            cache=self.resources.cache,
            collection=lambda: self.resources.collection(run.options.reembed),
            crash=self._crash,
            progress=self._progress,
        )
        writer.write(run.spec.label, changes, run.tally, files=files)


__all__ = ["IngestOptions", "IngestRun", "Ingestor", "Progress", "StoreError", "Written"]
