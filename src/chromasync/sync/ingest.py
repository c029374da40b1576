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

from ..chunk import Budget, Deadline, TooSlow, chunk_document
from ..corpus.documents import document_format
from ..corpus.read import TRANSIENT_REASONS, read_file
from ..corpus.walk import discover_source
from ..embed import Embedder, follow_stored
from ..embed.cache import EmbeddingCache
from ..embed.tokens import TokenMeter, default_token_meter, load_token_meter
from ..errors import NotFound, SourceError, StoreError
from ..plan.limits import SKIP_REASON, LimitChecker, check_limits
from ..plan.sidecars import group_reads, link_sidecars, remembered_targets, sidecar_metadata
from ..plan.triage import RecordContext, Triage, check_deletions, plan_file, triage
from ..records import (
    CHUNKING_VERSION,
    AssetRef,
    Discovery,
    FileChange,
    FileStat,
    FileState,
    IngestSummary,
    ReadOutcome,
    SettledSource,
    Skip,
    SourceSpec,
    StoreLimits,
)
from ..state.manifest import State, check_identity
from .heal import rebuild_manifest
from .waves import WAVE_RECORDS, CrashPoints, Progress, Tally, WaveWriter, waves

if TYPE_CHECKING:
    from ..store.chroma import Collection, Store

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


@dataclass(slots=True)
class _Plan:
    """What planning found besides the changes: files to re-stat only, and content skips
    to remember."""

    touched: list[FileState] = field(default_factory=list)
    skipped: dict[str, FileState] = field(default_factory=dict)


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
        self._open_store = open_store
        self._open_cache = cache
        self._store: Store | None = None
        self._collection: Collection | None = None
        self._cache: EmbeddingCache | None = None
        self._meter: TokenMeter | None = None
        self._labels: list[str] = []  # the sources this ingestor has been asked to ingest
        self._crash = CrashPoints((environ or {}).get("CHROMASYNC_CRASH_AT"))
        self._progress = progress or (lambda phase, done, total: None)
        self._on_settled = on_settled

    # -- lazily opened resources ---------------------------------------------------------

    @property
    def store_embeds(self) -> bool:
        """True when the collection's own embedding function embeds (`server` provider)."""
        return bool(getattr(self.embedder, "embeds_in_store", False))

    def collection(self, reembed: bool = False) -> Collection:
        if self._collection is None:
            self._store = self._open_store()
            if reembed and not self.store_embeds:
                self._reset_for_reembed(self._store)
            elif not self.store_embeds:
                try:
                    existing = self._store.collection(self.collection_name, create=False)
                except NotFound:
                    pass
                else:
                    follow_stored(self.embedder, existing.model_id)
            self._collection = self._store.collection(
                self.collection_name,
                self.embedder.model_id,
                0 if self.store_embeds else self.embedder.dimension,
                provider=self.embedder.name,
            )
        return self._collection

    def _prefetch_model(self) -> None:
        prefetch = getattr(self.embedder, "prefetch", None)
        if callable(prefetch):
            prefetch()

    def limits(self, options: IngestOptions) -> StoreLimits:
        """The target's limits; a dry run opens no store that does not exist yet."""
        if not options.dry_run:
            self.collection(options.reembed)
            assert self._store is not None
            return self._store.limits
        try:
            return self._open_store(existing=True).limits
        except NotFound:
            return StoreLimits()

    def _reset_for_reembed(self, store: Store) -> None:
        existing = store.collection(self.collection_name)
        if existing.model_id not in (None, self.embedder.model_id):
            ours = sorted(
                {r.source for r in self.state.sources() if r.collection == self.collection_name}
                | set(self._labels)
            )
            other = existing.other_source(ours)
            if other is not None:
                raise StoreError(
                    f"collection {self.collection_name!r} also holds records of source "
                    f"{other!r}, which this data dir did not write (another ingester shares "
                    "the collection); --reembed would delete them. Re-embed into a new "
                    "collection (--collection), and move every ingester to it"
                )
            log.warning(
                "--reembed: recreating collection %r for model %s (was %s); every source in "
                "it must be ingested again",
                self.collection_name,
                self.embedder.model_id,
                existing.model_id,
            )
            store.delete_collection(self.collection_name)
            for row in self.state.sources():
                if row.collection == self.collection_name:
                    self.state.drop_source(row.collection, row.source)

    def cache(self) -> EmbeddingCache:
        if self._cache is None:
            self._cache = self._open_cache()
        return self._cache

    def meter(self) -> TokenMeter:
        if self._meter is None:
            path = self.embedder.tokenizer_path
            self._meter = load_token_meter(path) if path else default_token_meter()
        return self._meter

    def budget_tokens(self, options: IngestOptions) -> int:
        limit = self.embedder.max_tokens
        return min(limit, options.chunk_max_tokens) if options.chunk_max_tokens else limit

    def close(self) -> None:
        if self._cache is not None:
            self._cache.finish_run()
            self._cache.close()

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
        self._labels.append(spec.label)
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
        if row is not None and not options.reembed:
            follow_stored(self.embedder, row.embedding_model)
        model_changed = row is not None and row.embedding_model != self.embedder.model_id
        must_heal = row is None or row.status != "clean" or options.reembed or model_changed
        rechunk = row is not None and row.chunking_version != CHUNKING_VERSION
        # Stat fields only: the fast path parses no record lists.
        manifest = self.state.files(name, label, with_records=must_heal)
        if row is None and discovery.files and not options.dry_run:
            self._prefetch_model()  # a first run embeds: load while the store opens
        if must_heal and (discovery.files or manifest):
            manifest, chunked_by = self._heal(spec, manifest, options)
            # records of an older chunker, found by a rebuild: their files are chunked again
            rechunk = rechunk or any(v != CHUNKING_VERSION for v in chunked_by)
        sorted_ = triage(discovery, manifest, checksum=options.checksum or rechunk)
        if options.limit:
            sorted_ = replace(sorted_, gone=())
        run.skipped.update(sorted_.remembered_skips.values())
        run.files_unchanged = len(sorted_.unchanged)
        if not (must_heal or sorted_.to_read or sorted_.gone):
            summary = self._noop_summary(spec, discovery, sorted_, started, options.dry_run)
            if not options.dry_run:
                self.state.record_noop_run(name, label, summary.as_json())
                self._settle(spec, discovery, options, summary)
            return summary
        if not must_heal:
            manifest = self.state.files(name, label)

        if not options.dry_run and any(f.rel_path not in manifest for f in sorted_.to_read):
            self._prefetch_model()  # new files embed: load while they are read and chunked
        if self._can_stream(spec, discovery, sorted_, manifest, options, adopting):
            return self._stream(
                spec, discovery, sorted_, manifest, options, run, rechunk, must_heal, started
            )
        changes, touched, newly_skipped = self._read_and_plan(
            spec, discovery, sorted_, manifest, options, run, rechunk
        )
        if options.gc_only:
            changes, newly_skipped = [], {}
        if changes:
            changes = self._preflight(changes, newly_skipped, options, run)
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

        delete_ids = [i for c in changes for i in c.to_delete]
        delete_ids += [r.id for p in gone for r in manifest[p].records]
        delete_ids += [r.id for p in newly_skipped if p in manifest for r in manifest[p].records]
        # A document whose identity key moved with it (a rename) keeps its record IDs:
        # what another path still wants is rewritten, never deleted.
        wanted = {r.id for c in changes for r in c.records}
        delete_ids = [i for i in dict.fromkeys(delete_ids) if i not in wanted]
        summary_base = dict(
            collection=name,
            source=label,
            files_seen=len(discovery.files) + len(discovery.skipped),
            files_new=sum(c.is_new for c in changes),
            files_updated=sum(not c.is_new for c in changes),
            files_unchanged=run.files_unchanged + len(touched),
            files_deleted=len(gone)
            + sum(1 for p in newly_skipped if p in manifest and manifest[p].records),
            chunks_total=self._chunks_total(manifest, changes, gone, newly_skipped),
            chunks_deleted=len(delete_ids),
            dry_run=options.dry_run,
            metadata_keys_dropped=run.keys_dropped,
        )
        if options.dry_run:
            run.chunks_embedded = self._count_uncached(changes)
            run.chunks_reused = sum(len(c.records) for c in changes) - run.chunks_embedded
            return self._summary(summary_base, run, started)

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
        summary = self._summary(summary_base, run, started)
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
            self.collection().delete(list(delete_ids))
            self._crash.hit("after-delete")
        self.state.remove_files(name, label, gone)
        if newly_skipped:
            self.state.commit_files(name, label, list(newly_skipped.values()), {})
        summary = self._summary(summary_base, run, started)
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
        checker: LimitChecker | None = None  # the store opens with the first change
        # deletions are of IDs the manifest holds: only those can be wanted again
        known = {r.id for state in manifest.values() for r in state.records}
        wanted: set[str] = set()
        delete_ids: list[str] = []
        plan = _Plan()
        counts = {"new": 0, "updated": 0}
        chunks_total = sum(len(state.records) for state in manifest.values())
        begun = False

        def checked() -> Iterator[FileChange]:
            nonlocal begun, checker, chunks_total
            planned = self._plan_changes(
                spec, discovery, sorted_, manifest, options, run, rechunk, plan
            )
            for group in waves(planned, WAVE_RECORDS):
                if checker is None:
                    checker = LimitChecker(self.limits(options))
                    run.batch_size = checker.batch
                kept = checker.check(group)
                for change in group:
                    why = checker.oversized.get(change.rel_path)
                    if why is not None:
                        self._skip_oversized(change, why, run, plan.skipped)
                for change in kept:
                    counts["new" if change.is_new else "updated"] += 1
                    previous = manifest.get(change.rel_path)
                    chunks_total += len(change.records) - (len(previous.records) if previous else 0)
                    delete_ids.extend(change.to_delete)
                    if known:
                        wanted.update(r.id for r in change.records if r.id in known)
                    if not begun:
                        self._begin(spec)
                        begun = True
                    yield change

        files = len(sorted_.to_read)
        self._write(label, checked(), run, options, files=files)
        if checker is not None:
            for note in checker.preflight().notes:
                log.warning("collection %r: %s", name, note)
            run.keys_dropped += checker.dropped
        newly_skipped = plan.skipped
        delete_ids += [r.id for p in gone for r in manifest[p].records]
        delete_ids += [r.id for p in newly_skipped if p in manifest for r in manifest[p].records]
        # A document whose identity key moved with it (a rename) keeps its record IDs:
        # what another path still wants is rewritten, never deleted.
        delete_ids = [i for i in dict.fromkeys(delete_ids) if i not in wanted]
        for path in (*gone, *newly_skipped):
            if path in manifest:
                chunks_total -= len(manifest[path].records)
        summary_base = dict(
            collection=name,
            source=label,
            files_seen=len(discovery.files) + len(discovery.skipped),
            files_new=counts["new"],
            files_updated=counts["updated"],
            files_unchanged=run.files_unchanged + len(plan.touched),
            files_deleted=len(gone)
            + sum(1 for p in newly_skipped if p in manifest and manifest[p].records),
            chunks_total=chunks_total,
            chunks_deleted=len(delete_ids),
            dry_run=False,
            metadata_keys_dropped=run.keys_dropped,
        )
        if not (begun or plan.touched or newly_skipped or gone or must_heal):
            return self._noop(spec, discovery, options, summary_base, run, started)
        if not begun:
            self._begin(spec)
        if plan.touched:
            self.state.touch_files(name, label, plan.touched)
        return self._conclude(
            spec, discovery, options, summary_base, run, started, delete_ids, gone, newly_skipped
        )

    def _noop_summary(
        self,
        spec: SourceSpec,
        discovery: Discovery,
        sorted_: Triage,
        started: int,
        dry_run: bool = False,
    ) -> IngestSummary:
        """What a run reports when triage finds nothing to read and nothing gone."""
        run = Tally()
        run.skipped.update(s.reason for s in discovery.skipped)
        run.skipped.update(sorted_.remembered_skips.values())
        base = dict(
            collection=self.collection_name,
            source=spec.label,
            files_seen=len(discovery.files) + len(discovery.skipped),
            files_unchanged=len(sorted_.unchanged),
            chunks_total=self.state.record_total(self.collection_name, spec.label),
            dry_run=dry_run,
        )
        return self._summary(base, run, started)

    def _settle(
        self,
        spec: SourceSpec,
        discovery: Discovery,
        options: IngestOptions,
        summary: IngestSummary | None = None,
    ) -> None:
        """Report the source as settled when a re-run over the tree just walked would be a
        no-op (`summary`: the no-op this run was); see `fastpath`."""
        if (
            self._on_settled is None
            or discovery.listing is None
            or options.dry_run
            or options.limit
            or options.gc_only
            or not options.gc
        ):
            return
        if summary is None:
            name, label = self.collection_name, spec.label
            row = self.state.source(name, label)
            if (
                row is None
                or row.status != "clean"
                or row.embedding_model != self.embedder.model_id
                or row.chunking_version != CHUNKING_VERSION
            ):
                return
            again = triage(discovery, self.state.files(name, label, with_records=False))
            if again.to_read or again.gone:
                return
            summary = self._noop_summary(spec, discovery, again, time.perf_counter_ns())
        self._on_settled(
            SettledSource(
                collection=self.collection_name,
                source=spec.label,
                root=str(spec.root),
                starts=spec.starts,
                pruned_dirs=discovery.pruned_dirs,
                use_gitignore=spec.use_gitignore,
                listing=discovery.listing,
                summary=summary.as_json(),
            )
        )

    # -- stages of a run -----------------------------------------------------------------

    def _preflight(
        self,
        changes: list[FileChange],
        newly_skipped: dict[str, FileState],
        options: IngestOptions,
        run: Tally,
    ) -> list[FileChange]:
        """Fit the planned writes to the target's limits (see `preflight`), before writing."""
        checked = check_limits(changes, self.limits(options))
        for note in checked.notes:
            log.warning("collection %r: %s", self.collection_name, note)
        run.keys_dropped += checked.keys_dropped
        run.batch_size = checked.batch_size
        by_path = {c.rel_path: c for c in changes}
        for path, why in checked.oversized.items():
            self._skip_oversized(by_path[path], why, run, newly_skipped)
        return list(checked.changes)

    @staticmethod
    def _skip_oversized(
        change: FileChange, why: str, run: Tally, newly_skipped: dict[str, FileState]
    ) -> None:
        """A file with a chunk larger than the store accepts: a remembered skip."""
        log.warning("skipping %s: %s", change.rel_path, why)
        run.skipped[SKIP_REASON] += 1
        newly_skipped[change.rel_path] = FileState(
            change.rel_path,
            change.stat.size,
            change.stat.mtime_ns,
            change.file_hash,
            change.version,
            time.time_ns(),
            (),
            SKIP_REASON,
            asset=change.asset,
            asset_issue=change.asset_issue,
        )

    def _heal(
        self, spec: SourceSpec, manifest: dict[str, FileState], options: IngestOptions
    ) -> tuple[dict[str, FileState], frozenset[int]]:
        """Rebuild the manifest of `spec` from the collection (no embedding); with the
        chunking versions of the records found."""
        if options.dry_run:
            try:
                collection = self._open_store(existing=True).collection(
                    self.collection_name, create=False
                )
            except NotFound:
                return manifest, frozenset()
        else:
            collection = self.collection(reembed=options.reembed)
        stored = collection.iter_records(where={"source": spec.label}, documents=True)
        rebuilt = rebuild_manifest(stored, manifest)
        if rebuilt.inconsistent:
            log.warning(
                "source %r: %d file(s) were left half-written by an earlier run; re-reading them",
                spec.label,
                len(rebuilt.inconsistent),
            )
        if not options.dry_run:
            self.state.replace_source(
                self.collection_name, spec.label, list(rebuilt.files.values()), rebuilt.records
            )
        return rebuilt.files, rebuilt.chunking_versions

    def _read_and_plan(
        self,
        spec: SourceSpec,
        discovery: Discovery,
        sorted_: Triage,
        manifest: Mapping[str, FileState],
        options: IngestOptions,
        run: Tally,
        rechunk: bool,
    ) -> tuple[list[FileChange], list[FileState], dict[str, FileState]]:
        """Every change at once (a dry run, `--gc-only`, a run that may delete most of a
        source); see `_plan_changes`."""
        plan = _Plan()
        changes = list(
            self._plan_changes(spec, discovery, sorted_, manifest, options, run, rechunk, plan)
        )
        return changes, plan.touched, plan.skipped

    def _plan_changes(
        self,
        spec: SourceSpec,
        discovery: Discovery,
        sorted_: Triage,
        manifest: Mapping[str, FileState],
        options: IngestOptions,
        run: Tally,
        rechunk: bool,
        plan: _Plan,
    ) -> Iterator[FileChange]:
        """Read what triage found changed and plan each file's writes, one file at a time:
        a file outside every sidecar group is planned as soon as it is read, and its text
        is not kept; the files of sidecar groups (sidecars, documents a sidecar could name,
        files a remembered sidecar named) and what completes their groups (`plan.sidecars`)
        are planned together after every other file, sidecars last. Files that need no
        write go to `plan` (re-stat only, or a remembered skip)."""
        ctx = RecordContext(
            source=spec.label,
            source_kind=spec.kind,
            embedding_model=self.embedder.model_id,
            static_metadata=spec.static_metadata,
            extra_metadata=options.extra_metadata,
        )
        now = run.read_ns = time.time_ns()
        tokens = self.budget_tokens(options)
        before = remembered_targets(manifest)
        had_sidecar = set(before.values())
        listed = {f.rel_path: f for f in discovery.files}
        gone = set(sorted_.gone)
        unchanged = set(sorted_.unchanged)
        read: set[str] = set()
        held: dict[str, ReadOutcome] = {}  # the sidecar groups' files, planned last
        pending = list(sorted_.to_read)
        total = len(pending)
        while True:
            for file in pending:
                self._progress("read", len(read) + 1, total)
                outcome = read_file(
                    file,
                    spec.identity_key,
                    options.privacy_keys,
                    max_bytes=options.max_file_bytes,
                )
                path = file.rel_path
                read.add(path)
                # a file read only to complete a sidecar group was counted unchanged (or as
                # a remembered skip) by triage: it is counted by what its read finds instead
                if path in unchanged:
                    run.files_unchanged -= 1
                elif path in sorted_.remembered_skips:
                    reason = sorted_.remembered_skips[path]
                    run.skipped[reason] -= 1
                    if run.skipped[reason] <= 0:
                        del run.skipped[reason]
                if (
                    outcome.asset is None
                    and path not in before
                    and path not in had_sidecar
                    and document_format(path) is None
                ):
                    change = self._plan_one(
                        outcome, manifest.get(path), ctx, now, run, plan, tokens, rechunk=rechunk
                    )
                    if change is not None:
                        yield change
                else:
                    held[path] = outcome
            refs = {p: o.asset for p, o in held.items() if o.asset is not None}
            more = group_reads(read, gone, refs, manifest, listed.keys())
            if not more:
                break
            pending = [listed[p] for p in sorted(more)]
            total += len(pending)
        links = link_sidecars(
            refs,
            {p for p, o in held.items() if o.skip is not None and o.skip.reason == "private"},
            set(listed),
            {s.rel_path: s.reason for s in discovery.skipped},
            {p: o.file_hash for p, o in held.items() if o.file_hash},
        )
        # a sidecar that could not be read this time: its documents wait for the next run
        deferred = {
            before[p]
            for p, o in held.items()
            if o.skip is not None and o.skip.reason in TRANSIENT_REASONS and p in before
        }
        # sidecars last: a sidecar's row moves on only after its document's records did
        ordered = sorted(
            held.values(),
            key=lambda o: o.stat.rel_path in links.rows or o.stat.rel_path in before,
        )
        for outcome in ordered:
            path = outcome.stat.rel_path
            if path in deferred:
                continue
            sidecar = links.described.get(path)
            change = self._plan_one(
                outcome,
                manifest.get(path),
                ctx,
                now,
                run,
                plan,
                tokens,
                rechunk=rechunk or path in links.described or path in had_sidecar,
                row=links.rows.get(path, ("", "")),
                private=path in links.private,
                sidecar=(sidecar, held[sidecar].asset, path in links.mismatched)
                if sidecar is not None
                else None,
            )
            if change is not None:
                yield change

    def _plan_one(
        self,
        outcome: ReadOutcome,
        previous: FileState | None,
        ctx: RecordContext,
        now: int,
        run: Tally,
        plan: _Plan,
        tokens: int,
        *,
        rechunk: bool = False,
        row: tuple[str, str] = ("", ""),
        private: bool = False,
        sidecar: tuple[str, AssetRef | None, bool] | None = None,
    ) -> FileChange | None:
        """One file read: its planned writes, or None when it needs none (its row goes to
        `plan`). `tokens`: a chunk's budget; `rechunk`: chunk it even if its content is
        unchanged (a new chunker, a sidecar group); `row`: a sidecar's (asset, asset_issue);
        `private`: named by a private sidecar; `sidecar`: (path, its reference, sha256
        mismatch) of the sidecar whose metadata a document takes."""
        stat = outcome.stat
        path = stat.rel_path
        asset, asset_issue = row
        skip = outcome.skip
        if skip is None and private:
            skip = Skip(path, "private")
        if skip is not None:
            run.skipped[skip.reason] += 1
            if skip.reason not in TRANSIENT_REASONS and outcome.file_hash:
                version = previous.version if previous else 0
                plan.skipped[path] = FileState(
                    path,
                    stat.size,
                    stat.mtime_ns,
                    outcome.file_hash,
                    version,
                    now,
                    (),
                    skip.reason,
                    stat.ctime_ns,
                    stat.inode,
                    asset,
                    asset_issue,
                )
            return None
        doc = outcome.document
        assert doc is not None
        if doc.kind == "document":
            run.documents[doc.doc_format] += 1
            run.pages += len(doc.pages)
        if (
            previous is not None
            and not rechunk
            and not previous.skip_reason
            and previous.file_hash == doc.file_hash
        ):
            plan.touched.append(_restat(previous, stat, now, asset, asset_issue))
            return None
        deadline = Deadline(self.file_seconds, self.clock)
        budget = Budget(tokens, self.meter(), deadline=deadline)
        try:
            chunks = chunk_document(doc, budget)
        except TooSlow as exc:  # earlier records are kept: the machine may be busy
            log.warning("%s: %s; skipped as too-slow", stat.rel_path, exc)
            run.skipped["too-slow"] += 1
            return None
        if sidecar is not None:  # chunked from its own text: a sidecar edit embeds nothing
            sidecar_path, ref, mismatched = sidecar
            assert ref is not None
            merged = sidecar_metadata(doc.metadata, sidecar_path, ref.metadata, mismatched)
            doc = replace(doc, metadata=merged)
        change = plan_file(stat, doc, chunks, previous, ctx)
        change = replace(change, asset=asset, asset_issue=asset_issue)
        if (
            previous is not None
            and not previous.skip_reason
            and not (change.to_embed or change.to_rewrite or change.to_delete)
        ):
            restat = _restat(previous, stat, now, asset, asset_issue)
            plan.touched.append(replace(restat, file_hash=doc.file_hash))
            return None
        return change

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
            cache=self.cache,
            collection=lambda: self.collection(options.reembed),
            crash=self._crash,
            progress=self._progress,
        )
        writer.write(label, changes, run, files=files)

    def _count_uncached(self, changes: Sequence[FileChange]) -> int:
        if self.store_embeds:
            return sum(len(c.to_embed) + len(c.to_rewrite) for c in changes)
        hashes = {r.chunk_hash for c in changes for r in c.to_embed}
        if not hashes:
            return 0
        cached = self.cache().get_many(self.embedder.model_id, hashes)
        return len(hashes - set(cached))

    @staticmethod
    def _chunks_total(
        manifest: Mapping[str, FileState],
        changes: Sequence[FileChange],
        gone: Iterable[str],
        skipped: Mapping[str, FileState],
    ) -> int:
        counts = {p: len(s.records) for p, s in manifest.items()}
        for change in changes:
            counts[change.rel_path] = len(change.records)
        for path in (*gone, *skipped):
            counts[path] = 0
        return sum(counts.values())

    @staticmethod
    def _summary(base: Mapping[str, object], run: Tally, started: int) -> IngestSummary:
        return IngestSummary(
            **base,  # type: ignore[arg-type]
            files_skipped=dict(run.skipped),
            chunks_embedded=run.chunks_embedded,
            chunks_reused=max(run.chunks_reused, 0),
            duration_ms=(time.perf_counter_ns() - started) // 1_000_000,
            embed_ms=run.embed_ns // 1_000_000,
            documents_read=dict(run.documents),
            pages_read=run.pages,
        )


def _restat(
    previous: FileState, stat: FileStat, now: int, asset: str, asset_issue: str
) -> FileState:
    return replace(
        previous,
        size=stat.size,
        mtime_ns=stat.mtime_ns,
        ctime_ns=stat.ctime_ns,
        inode=stat.inode,
        checked_ns=now,
        asset=asset,
        asset_issue=asset_issue,
    )


__all__ = ["IngestOptions", "Ingestor", "Progress", "StoreError"]
