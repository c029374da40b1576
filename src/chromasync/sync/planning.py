"""Planning a source's file writes: read each file triage found changed, chunk it, match it
against the manifest, fit the writes to the store's limits. Nothing here writes: the shell
(`ingest`) hands in the reader, the token meter, the clock, the cache and the limits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Container, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from ..chunk import Budget, Deadline, TooSlow, chunk_document
from ..corpus.documents import document_format
from ..corpus.frontmatter import unreadable_dates
from ..corpus.read import TRANSIENT_REASONS
from ..embed.cache import EmbeddingCache
from ..embed.tokens import TokenMeter
from ..plan.identities import Identities, shared_rows
from ..plan.limits import SKIP_REASON, LimitChecker, check_limits
from ..plan.sidecars import group_reads, link_sidecars, remembered_targets, sidecar_metadata
from ..plan.triage import RecordContext, Triage, plan_file, restat
from ..records import (
    AssetRef,
    Discovery,
    Document,
    FileChange,
    FileStat,
    FileState,
    Progress,
    ReadOutcome,
    Skip,
    SourceSpec,
    StoreLimits,
)
from .waves import Tally, waves

log = logging.getLogger(__name__)

#: The counted warnings of a file indexed all the same: what each logs after its path.
WARNINGS = {
    "identity-duplicate": "%s %r is %s's too; indexed under its own path",
    "frontmatter-dropped": "%d front matter value(s) left out (why: docs/reliability.md)",
    "date-unreadable": "date field(s) %s are not dates (YYYY-MM-DD or ISO 8601); --after, "
    "--before, --sort date and --latest do not see this file",
}

#: Reads one file: `read_file(file, identity_key, privacy_keys, max_bytes=...)`.
ReadFile = Callable[..., ReadOutcome]


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """How one run reads and chunks files: `tokens`, a chunk's budget; `file_seconds`, a
    file's from its read to its last chunk (past it, `too-slow`); `rechunk`: chunk every
    file read even if unchanged (records of an older chunker)."""

    model_id: str
    tokens: int
    privacy_keys: tuple[str, ...]
    max_file_bytes: int
    extra_metadata: Mapping[str, str | int | float | bool]
    file_seconds: float
    rechunk: bool = False
    date_fields: tuple[str, ...] = ("date", "published_at")
    #: path -> (identity claimed, held) as last written (`plan.identities`), with an
    #: `identity_key`: who holds each identity is decided from them.
    claims: Mapping[str, tuple[str, bool]] = field(default_factory=dict)


class Planner(Protocol):
    """What a streamed run needs of its planner (`FilePlanner`, or `ahead.AheadPlanner`)."""

    manifest: Mapping[str, FileState]
    run: Tally
    touched: list[FileState]
    skipped: dict[str, FileState]

    def changes(self) -> Iterator[FileChange]: ...


class FilePlanner:
    """Plans the writes of one source's run, one file at a time (`changes`); files that need
    none go to `touched` (re-stat only) or `skipped` (skips to remember), counts to `run`."""

    def __init__(
        self,
        spec: SourceSpec,
        discovery: Discovery,
        sorted_: Triage,
        manifest: Mapping[str, FileState],
        run: Tally,
        settings: PlanSettings,
        *,
        meter: Callable[[], TokenMeter],
        read: ReadFile,
        clock: Callable[[], float],
        progress: Progress,
    ) -> None:
        self.spec = spec
        self.discovery = discovery
        self.sorted_ = sorted_
        self.manifest = manifest
        self.run = run
        self.settings = settings
        self._meter = meter
        self._read = read
        self._clock = clock
        self._progress = progress
        self._ctx = RecordContext.of(
            spec, settings.model_id, settings.extra_metadata, time.time_ns()
        )
        self._now = 0
        self.touched: list[FileState] = []
        self.skipped: dict[str, FileState] = {}
        self._ids: Identities | None = None
        self._forced: set[str] = set()  # read again for an identity: written whatever it holds

    def changes(self) -> Iterator[FileChange]:
        """Read what triage found changed and plan each file's writes as it is read; the files
        of sidecar groups (`plan.sidecars`) are held and planned after every other file."""
        sorted_, manifest, settings = self.sorted_, self.manifest, self.settings
        self._now = self.run.read_ns = time.time_ns()
        before = remembered_targets(manifest)
        had_sidecar = set(before.values())
        listed = {f.rel_path: f for f in self.discovery.files}
        gone = set(sorted_.gone)
        unchanged = set(sorted_.unchanged)
        read: set[str] = set()
        held: dict[str, ReadOutcome] = {}  # the sidecar groups' files, planned last
        pending = list(sorted_.to_read)
        if self.spec.identity_key:  # the first claimant by path holds an identity
            pending = self._identities(pending, listed, gone)
        total = len(pending)
        while True:
            for file in pending:
                self._progress("read", len(read) + 1, total)
                outcome = self._read_one(file)
                path = file.rel_path
                read.add(path)
                self._uncount(path, unchanged)
                if self._ids is not None and self._ids_wait(outcome):
                    held[path] = outcome
                elif (
                    outcome.asset is None
                    and path not in before
                    and path not in had_sidecar
                    and document_format(path) is None
                ):
                    rechunk = settings.rechunk or path in self._forced
                    change = self._plan_one(outcome, manifest.get(path), rechunk=rechunk)
                    if change is not None:
                        yield change
                else:
                    held[path] = outcome
            refs = {p: o.asset for p, o in held.items() if o.asset is not None}
            more = group_reads(read, gone, refs, manifest, listed.keys())
            more |= self._takeovers(read, listed.keys())
            if not more:
                break
            pending = [listed[p] for p in sorted(more)]
            total += len(pending)
        yield from self._plan_held(held, refs, before, listed)

    def _plan_held(
        self,
        held: dict[str, ReadOutcome],
        refs: dict[str, AssetRef],
        before: dict[str, str],
        listed: dict[str, FileStat],
    ) -> Iterator[FileChange]:
        """Plan the sidecar groups' files (`held`: sidecars, documents a sidecar could name,
        files a remembered sidecar named, and what completes their groups), sidecars last;
        `before`: each sidecar the manifest remembers -> the file it named."""
        manifest, had_sidecar = self.manifest, set(before.values())
        links = link_sidecars(
            refs,
            {p for p, o in held.items() if o.skip is not None and o.skip.reason == "private"},
            set(listed),
            {s.rel_path: s.reason for s in self.discovery.skipped},
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
                rechunk=self.settings.rechunk
                or path in links.described
                or path in had_sidecar
                or path in self._forced,
                row=links.rows.get(path, ("", "")),
                private=path in links.private,
                sidecar=(sidecar, held[sidecar].asset, path in links.mismatched)
                if sidecar is not None
                else None,
            )
            if change is not None:
                yield change

    def _read_one(self, file: FileStat) -> ReadOutcome:
        spec, limit = self.spec, self.settings.max_file_bytes
        keys = self.settings.privacy_keys
        return self._read(file, spec.identity_key, keys, max_bytes=limit, encoding=spec.encoding)

    def _uncount(self, path: str, unchanged: Container[str]) -> None:
        """Uncount a file triage counted unchanged (or skipped) but read for a sidecar group."""
        run = self.run
        if path in unchanged:
            run.files_unchanged -= 1
        elif path in self.sorted_.remembered_skips:
            reason = self.sorted_.remembered_skips[path]
            run.skipped[reason] -= 1
            if run.skipped[reason] <= 0:
                del run.skipped[reason]

    def _skip(
        self, reason: str, outcome: ReadOutcome, previous: FileState | None, row: tuple[str, str]
    ) -> None:
        """Count a skipped file; remember it (no records) unless the skip keeps its records:
        a transient reason, or a file with records caught empty mid-rewrite (a non-atomic
        save), whose new stat is recorded until it has text again or is removed."""
        stat, now = outcome.stat, self._now
        self.run.skipped[reason] += 1
        if reason == "empty" and previous is not None and previous.records:
            self.touched.append(restat(previous, stat, now, *row))
        elif reason not in TRANSIENT_REASONS and outcome.file_hash:
            version = previous.version if previous else 0
            self.skipped[stat.rel_path] = FileState(
                stat.rel_path,
                stat.size,
                stat.mtime_ns,
                outcome.file_hash,
                version,
                now,
                (),
                reason,
                stat.ctime_ns,
                stat.inode,
                *row,
            )

    def _identities(
        self, pending: list[FileStat], listed: Mapping[str, FileStat], gone: Collection[str]
    ) -> list[FileStat]:
        """Start deciding who holds each identity (`plan.identities`): read in path order,
        and read again the files whose rows share records with another row."""
        self._ids = Identities(self.settings.claims, gone, (f.rel_path for f in pending))
        reading = {f.rel_path for f in pending}
        self._forced = {p for p in shared_rows(self.manifest, gone) if p in listed}
        pending += [listed[p] for p in sorted(self._forced - reading)]
        return sorted(pending, key=lambda f: f.rel_path)

    def _takeovers(self, read: Container[str], listed: Collection[str]) -> set[str]:
        """Files to read again, and write whatever they hold: the next claimant of each
        identity whose holder went (it takes the identity over)."""
        taking = self._ids.rereads(read) & set(listed) if self._ids is not None else set()
        self._forced |= taking
        return taking

    def _ids_wait(self, outcome: ReadOutcome) -> bool:
        """Record an identity-keyed source's read; True: planned once every claim is known."""
        assert self._ids is not None
        path = outcome.stat.rel_path
        if outcome.skip is not None and outcome.skip.reason in TRANSIENT_REASONS:
            self._ids.kept(path)
            return False
        doc = outcome.document
        return self._ids.read(path, doc.identity if doc is not None else None)

    def _key(self, doc: Document) -> str | None:
        """A document's key when it is not its identity or path: its path when another file
        holds its identity (a counted, logged `identity-duplicate`)."""
        if self._ids is None or not doc.identity:
            return None
        holder = self._ids.holder(doc.identity)
        if holder == doc.rel_path:
            return None
        self._warn("identity-duplicate", doc.rel_path, self.spec.identity_key, doc.identity, holder)
        return doc.rel_path

    def _warn(self, kind: str, path: str, *args: object) -> None:
        """A counted warning (`WARNINGS`), logged with the file's path: the file is indexed
        all the same."""
        self.run.warnings[kind] += 1
        log.warning(f"%s: {WARNINGS[kind]}", path, *args)

    def _plan_one(
        self,
        outcome: ReadOutcome,
        previous: FileState | None,
        *,
        rechunk: bool = False,
        row: tuple[str, str] = ("", ""),
        private: bool = False,
        sidecar: tuple[str, AssetRef | None, bool] | None = None,
    ) -> FileChange | None:
        """One file read: its planned writes, or None when it needs none (its row goes to
        `touched` or `skipped`). `rechunk`: chunk it even if its content is unchanged (a new
        chunker, a sidecar group); `row`: a sidecar's (asset, asset_issue); `private`: named
        by a private sidecar; `sidecar`: (path, its reference, sha256 mismatch) of the
        sidecar whose metadata a document takes."""
        run, now = self.run, self._now
        stat = outcome.stat
        path = stat.rel_path
        asset, asset_issue = row
        skip = outcome.skip
        if skip is None and private:
            skip = Skip(path, "private")
        if skip is not None:
            self._skip(skip.reason, outcome, previous, row)
            return None
        doc = outcome.document
        assert doc is not None
        if doc.kind == "document":
            run.documents[doc.doc_format] += 1
            run.pages += len(doc.pages)
        if outcome.dropped:
            self._warn("frontmatter-dropped", path, outcome.dropped)
        if unreadable := unreadable_dates(doc.metadata, self.settings.date_fields):
            self._warn("date-unreadable", path, ", ".join(unreadable))
        if (
            previous is not None
            and not rechunk
            and not (self._ids is not None and doc.identity)  # its key may have changed
            and not previous.skip_reason
            and previous.file_hash == doc.file_hash
        ):
            self.touched.append(restat(previous, stat, now, asset, asset_issue))
            return None
        deadline = Deadline(self.settings.file_seconds, self._clock)
        budget = Budget(self.settings.tokens, self._meter(), deadline=deadline)
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
        change = plan_file(stat, doc, chunks, previous, self._ctx, self._key(doc))
        change = replace(change, asset=asset, asset_issue=asset_issue)
        if path in self._forced and previous is not None:  # its records may show another file
            before = {r.id for r in previous.records}
            change = replace(change, to_rewrite=tuple(r for r in change.records if r.id in before))
        if (
            previous is not None
            and not previous.skip_reason
            and not (change.to_embed or change.to_rewrite or change.to_delete)
        ):
            touched = restat(previous, stat, now, asset, asset_issue)
            self.touched.append(replace(touched, file_hash=doc.file_hash))
            return None
        return change


def preflight(
    changes: list[FileChange],
    limits: StoreLimits,
    run: Tally,
    skipped: dict[str, FileState],
    collection_name: str,
) -> list[FileChange]:
    """Fit the planned writes to the target's limits (`check_limits`), before writing; a
    file with a chunk the store cannot take becomes a remembered skip in `skipped`."""
    checked = check_limits(changes, limits)
    for note in checked.notes:
        log.warning("collection %r: %s", collection_name, note)
    run.keys_dropped += checked.keys_dropped
    run.batch_size = checked.batch_size
    by_path = {c.rel_path: c for c in changes}
    for path, why in checked.oversized.items():
        skip_oversized(by_path[path], why, run, skipped)
    return list(checked.changes)


class FittedStream:
    """A streamed run's planned writes fitted to the store's limits wave by wave (the streamed
    `preflight`), with the `new`, `updated`, `chunks_total`, `delete_ids` and `wanted` that
    its summary and deletions need."""

    def __init__(
        self,
        planner: Planner,
        limits: Callable[[], StoreLimits],
        wave_records: int,
    ) -> None:
        self.planner = planner
        self.run = planner.run
        self._limits = limits  # opens the store: called with the first wave
        self._wave_records = wave_records
        self.checker: LimitChecker | None = None
        manifest = planner.manifest
        # deletions are of IDs the manifest holds: only those can be wanted again
        self._known = {r.id for state in manifest.values() for r in state.records}
        self.wanted: set[str] = set()
        self.delete_ids: list[str] = []
        self.changed: set[str] = set()  # the paths written (`deletions`)
        self.new = self.updated = 0
        # the source's records after the writes (the gone and skipped files not taken out)
        self.chunks_total = sum(len(state.records) for state in manifest.values())

    def changes(self) -> Iterator[FileChange]:
        """The planned changes the store can take, wave by wave; a file with a chunk it
        cannot take becomes a remembered skip (`planner.skipped`)."""
        run, manifest = self.run, self.planner.manifest
        for group in waves(self.planner.changes(), self._wave_records):
            if self.checker is None:
                self.checker = LimitChecker(self._limits())
                run.batch_size = self.checker.batch
            kept = self.checker.check(group)
            for change in group:
                why = self.checker.oversized.get(change.rel_path)
                if why is not None:
                    skip_oversized(change, why, run, self.planner.skipped)
            for change in kept:
                if change.is_new:
                    self.new += 1
                else:
                    self.updated += 1
                previous = manifest.get(change.rel_path)
                held = previous.records if previous else ()
                self.chunks_total += len(change.records) - len(held)
                self.delete_ids.extend(change.to_delete)
                self.changed.add(change.rel_path)
                if self._known:
                    self.wanted.update(r.id for r in change.records if r.id in self._known)
                yield change

    def finish(self, collection_name: str) -> None:
        """After the last wave: the limit checks' notes, and the metadata keys dropped."""
        if self.checker is not None:
            for note in self.checker.preflight().notes:
                log.warning("collection %r: %s", collection_name, note)
            self.run.keys_dropped += self.checker.dropped


def skip_oversized(change: FileChange, why: str, run: Tally, skipped: dict[str, FileState]) -> None:
    """A file with a chunk larger than the store accepts: a remembered skip."""
    log.warning("skipping %s: %s", change.rel_path, why)
    run.skipped[SKIP_REASON] += 1
    skipped[change.rel_path] = FileState(
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


def count_uncached(
    changes: Sequence[FileChange],
    model_id: str,
    cache: Callable[[], EmbeddingCache],
    store_embeds: bool = False,
) -> int:
    """The chunks a write of `changes` would embed (a dry run's count): those whose vector
    the cache lacks, or every written record when the store embeds; the cache is opened
    only if a chunk is new."""
    if store_embeds:
        return sum(len(c.to_embed) + len(c.to_rewrite) for c in changes)
    hashes = {r.chunk_hash for c in changes for r in c.to_embed}
    if not hashes:
        return 0
    cached = cache().get_many(model_id, hashes)
    return len(hashes - set(cached))


__all__ = [
    "FilePlanner",
    "FittedStream",
    "PlanSettings",
    "ReadFile",
    "count_uncached",
    "preflight",
    "skip_oversized",
]
