"""Writing planned changes wave by wave: vectors, upserts, then the files' manifest rows.

Per wave of about `WAVE_RECORDS` records (the order of effects is in `ingest` and
docs/reliability.md), `PART_RECORDS` at a time: vectors come from the embedding cache, else
from the collection (records that are only rewritten), else from the model, which puts them
in the cache; then one upsert. Then the wave's manifest rows in one transaction. The named
crash points `after-embed`, `after-upsert`, `mid-manifest` and `after-manifest` sit between
these steps (`CrashPoints`, for the crash tests).
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from itertools import islice
from typing import TYPE_CHECKING

from ..embed import Embedder
from ..embed.cache import EmbeddingCache
from ..records import ChunkRecord, FileChange, FileState, IngestSummary, Progress, RecordRef
from ..state.manifest import State

if TYPE_CHECKING:
    from ..store.chroma import Collection

WAVE_RECORDS = 256
#: A wave's records are embedded and written this many at a time: a file of 60,000 chunks
#: held its vectors (as Python floats, 12 KB a record) and its write requests at once.
PART_RECORDS = 1024


class CrashPoints:
    """Test hook: SIGKILL this process at the n-th arrival at a named point."""

    def __init__(self, spec: str | None) -> None:
        name, _, nth = (spec or "").partition(":")
        self._name = name
        self._left = int(nth or 1)

    def hit(self, name: str) -> None:
        if name == self._name:
            self._left -= 1
            if self._left <= 0:
                os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class Tally:
    """Mutable tallies of one source's run."""

    skipped: Counter[str] = field(default_factory=Counter)
    files_new: int = 0
    files_updated: int = 0
    files_unchanged: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    embed_ns: int = 0
    keys_dropped: int = 0
    batch_size: int | None = None
    read_ns: int = 0  # when this run began reading files: the racy check's reference
    documents: Counter[str] = field(default_factory=Counter)  # documents read, per format
    pages: int = 0  # their pages
    warnings: Counter[str] = field(default_factory=Counter)  # e.g. date-unreadable

    def summary(self, base: Mapping[str, object], started: int) -> IngestSummary:
        """The run's summary: `base` (what the shell knows) with these tallies; `started`:
        the run's `perf_counter_ns` at its start."""
        return IngestSummary(
            **base,  # type: ignore[arg-type]
            files_skipped=dict(self.skipped),
            chunks_embedded=self.chunks_embedded,
            chunks_reused=max(self.chunks_reused, 0),
            duration_ms=(time.perf_counter_ns() - started) // 1_000_000,
            embed_ms=self.embed_ns // 1_000_000,
            documents_read=dict(self.documents),
            pages_read=self.pages,
            warnings=dict(self.warnings),
        )


@dataclass
class WaveWriter:
    """Writes one source's planned changes into its collection and the manifest."""

    state: State
    collection_name: str
    embedder: Embedder
    _: KW_ONLY
    cache: Callable[[], EmbeddingCache]
    collection: Callable[[], Collection]
    crash: CrashPoints
    progress: Progress

    def write(
        self, label: str, changes: Iterable[FileChange], run: Tally, files: int | None = None
    ) -> None:
        """Per wave: vectors and an upsert a part, then the manifest rows of the wave's files.

        `changes` may be a stream (planned while the waves before are written: see
        `ingest`); then `files`, the files to read, is the total of the progress, which counts
        the files written instead of the records (a stream's records are not known ahead)."""
        if files is None:
            changes = list(changes)
            total = sum(len(c.to_embed) + len(c.to_rewrite) for c in changes)
        else:
            total = files
        done = written = 0
        for wave in waves(changes, WAVE_RECORDS):
            for part in _parts(wave, PART_RECORDS):
                self._write_part(part, run)
                done += len(part)
                if files is None:
                    self.progress("write", done, total)
            run.chunks_reused += sum(len(c.records) for c in wave)
            written += len(wave)
            if files is not None:  # files read to complete sidecar groups come on top
                self.progress("write", written, max(total, written))
            # one transaction per wave, not per file (a crash inside it rolls the whole
            # wave's rows back: the next run rewrites those files, idempotently)
            self.state.commit_files(
                self.collection_name,
                label,
                [state_of(change, run.read_ns) for change in wave],
                {change.rel_path: change.records for change in wave},
                after_first=(lambda: self.crash.hit("mid-manifest")) if len(wave) > 1 else None,
            )
            self.crash.hit("after-manifest")
        run.chunks_reused -= run.chunks_embedded

    def _write_part(self, part: Sequence[tuple[ChunkRecord, bool]], run: Tally) -> None:
        """Vectors for one part's records, then one upsert (True: a record only rewritten)."""
        records = [r for r, _ in part]
        rewrite_ids = {r.id for r, rewrite in part if rewrite}
        vectors: list[list[float]] | None = None
        if self.embedder.embeds_in_store:
            run.chunks_embedded += len(records)
        else:
            vectors = self._vectors(records, rewrite_ids, run)
        unset = self._unset(records, rewrite_ids)
        began = time.perf_counter_ns()
        self.collection().upsert(records, vectors, run.batch_size, unset)
        if self.embedder.embeds_in_store:
            run.embed_ns += time.perf_counter_ns() - began
        self.crash.hit("after-upsert")

    def _unset(self, records: Sequence[ChunkRecord], rewrite_ids: set[str]) -> dict[str, list[str]]:
        """Metadata keys that rewritten records hold in the collection and must lose (a
        front matter field removed, a sidecar gone): read from the collection itself."""
        if not rewrite_ids:
            return {}
        held = {r.id: r.metadata for r in self.collection().get(sorted(rewrite_ids))}
        unset: dict[str, list[str]] = {}
        for record in records:
            if record.id in held:
                stale = [k for k in held[record.id] if k not in record.metadata]
                if stale:
                    unset[record.id] = stale
        return unset

    def _vectors(
        self, records: Sequence[ChunkRecord], rewrite_ids: set[str], run: Tally
    ) -> list[list[float]]:
        """Vectors for `records`: from the cache, from the collection, or embedded."""
        model = self.embedder.model_id
        cache = self.cache()
        found = cache.get_many(model, [r.chunk_hash for r in records])
        missing_rewrites = [
            r.id for r in records if r.id in rewrite_ids and r.chunk_hash not in found
        ]
        stored = self.collection().embeddings(missing_rewrites) if missing_rewrites else {}
        for record in records:
            if record.id in stored:
                found[record.chunk_hash] = stored[record.id]
        # an embedding input is made only for a chunk to embed (once a chunk hash)
        todo = {r.chunk_hash: r for r in records if r.chunk_hash not in found}
        if todo:
            began = time.perf_counter_ns()
            vectors = self.embedder.embed_documents([r.embed_text for r in todo.values()])
            run.embed_ns += time.perf_counter_ns() - began
            fresh = list(zip(todo, vectors, strict=True))
            cache.put_many(model, fresh)
            found.update(fresh)
            run.chunks_embedded += len(todo)
            self.crash.hit("after-embed")
        return [found[r.chunk_hash] for r in records]


def state_of(change: FileChange, read_ns: int) -> FileState:
    """The manifest row of a written file; checked when its content was read (not now: a
    write in the same timestamp tick after the read must still look racy)."""
    return FileState(
        rel_path=change.rel_path,
        size=change.stat.size,
        mtime_ns=change.stat.mtime_ns,
        file_hash=change.file_hash,
        version=change.version,
        checked_ns=read_ns or time.time_ns(),
        records=tuple(RecordRef(r.id, r.chunk_hash, r.record_hash) for r in change.records),
        ctime_ns=change.stat.ctime_ns,
        inode=change.stat.inode,
        asset=change.asset,
        asset_issue=change.asset_issue,
    )


def _parts(wave: Sequence[FileChange], size: int) -> Iterator[list[tuple[ChunkRecord, bool]]]:
    """A wave's records to write, `size` at a time, each with whether it is only rewritten."""
    tagged = (
        (record, rewrite)
        for change in wave
        for rewrite, records in ((False, change.to_embed), (True, change.to_rewrite))
        for record in records
    )
    while part := list(islice(tagged, size)):
        yield part


def waves(changes: Iterable[FileChange], size: int) -> Iterator[list[FileChange]]:
    wave: list[FileChange] = []
    count = 0
    for change in changes:
        wave.append(change)
        count += len(change.to_embed) + len(change.to_rewrite)
        if count >= size:
            yield wave
            wave, count = [], 0
    if wave:
        yield wave
