"""Preflight: check the planned writes against the target store's limits, before writing.

Design notes: docs/internals.md, `plan/limits.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..corpus.frontmatter import RESERVED_KEYS
from ..errors import StoreError
from ..records import ChunkRecord, FileChange, MetaValue, StoreLimits

#: Records per write when the target advertises no maximum (-1).
DEFAULT_BATCH = 1000
SKIP_REASON = "too-large-for-store"
#: Chroma Cloud's documented limits (per record and per write).
CLOUD_LIMITS = StoreLimits(
    max_batch=300,
    max_id_bytes=128,
    max_document_bytes=16 * 1024,
    max_metadata_keys=32,
    name="Chroma Cloud",
)


@dataclass(frozen=True, slots=True)
class Preflight:
    changes: tuple[FileChange, ...]  # what to write, metadata trimmed; oversized files left out
    oversized: Mapping[str, str]  # rel_path -> why it cannot be stored
    batch_size: int
    keys_dropped: int
    notes: tuple[str, ...] = ()


def combine_limits(advertised_batch: int | None, limits: StoreLimits) -> StoreLimits:
    """`limits` with its batch size lowered to what the server advertises (-1: none)."""
    if advertised_batch is None or advertised_batch <= 0:
        return limits
    if limits.max_batch is None or advertised_batch < limits.max_batch:
        return replace(limits, max_batch=advertised_batch)
    return limits


def _trim(metadata: Mapping[str, MetaValue], max_keys: int) -> tuple[dict[str, MetaValue], int]:
    if len(metadata) <= max_keys:
        return dict(metadata), 0
    ours = [k for k in metadata if k in RESERVED_KEYS]
    theirs = sorted(k for k in metadata if k not in RESERVED_KEYS)
    keep = set(ours) | set(theirs[: max(0, max_keys - len(ours))])
    return {k: v for k, v in metadata.items() if k in keep}, len(metadata) - len(keep)


class LimitChecker:
    """`check_limits` for changes that arrive in groups (a streamed ingest checks each wave
    before writing it): the oversized files and dropped keys add up over the groups, and
    `preflight` reports them once."""

    def __init__(self, limits: StoreLimits) -> None:
        self.limits = limits
        self.notes: list[str] = []
        if limits.max_batch is None or limits.max_batch <= 0:
            self.batch = DEFAULT_BATCH
            self.notes.append(
                f"{limits.name} advertises no maximum batch size; "
                f"writing {self.batch} records per request"
            )
        else:
            self.batch = limits.max_batch
        self.oversized: dict[str, str] = {}
        self.dropped = 0

    def check(self, changes: Sequence[FileChange]) -> list[FileChange]:
        """`changes` adapted to the limits, their oversized files left out (and added to
        `oversized`); raises `StoreError` when they cannot be adapted."""
        limits = self.limits
        if limits.max_id_bytes is not None:
            written = (r for c in changes for part in (c.to_embed, c.to_rewrite) for r in part)
            longest = max((len(r.id.encode("utf-8")) for r in written), default=0)
            if longest > limits.max_id_bytes:
                raise StoreError(
                    f"{limits.name} accepts IDs of at most {limits.max_id_bytes} bytes, but "
                    f"chromasync's are {longest}; use another store"
                )
        oversized: dict[str, str] = {}
        if limits.max_document_bytes is not None:
            for change in changes:
                biggest = max((len(r.document.encode("utf-8")) for r in change.records), default=0)
                if biggest > limits.max_document_bytes:
                    oversized[change.rel_path] = (
                        f"a chunk of {biggest} bytes; {limits.name} accepts at most "
                        f"{limits.max_document_bytes} bytes per document"
                    )
        self.oversized.update(oversized)
        kept: list[FileChange] = []
        for change in changes:
            if change.rel_path in oversized:
                continue
            most = limits.max_metadata_keys
            if most is None or all(len(r.metadata) <= most for r in change.records):
                kept.append(change)
                continue
            writes = {r.id for r in (*change.to_embed, *change.to_rewrite)}
            trimmed: dict[str, ChunkRecord] = {}
            for record in change.records:
                metadata, count = _trim(record.metadata, most)
                trimmed[record.id] = replace(record, metadata=metadata) if count else record
                if record.id in writes:
                    self.dropped += count
            kept.append(
                replace(
                    change,
                    records=tuple(trimmed[r.id] for r in change.records),
                    to_embed=tuple(trimmed.get(r.id, r) for r in change.to_embed),
                    to_rewrite=tuple(trimmed.get(r.id, r) for r in change.to_rewrite),
                )
            )
        return kept

    def preflight(self, kept: Sequence[FileChange] = ()) -> Preflight:
        """What the groups checked so far add up to (`kept`: what `check` kept of them)."""
        notes = list(self.notes)
        limits = self.limits
        if self.dropped:
            notes.append(
                f"{limits.name} accepts at most {limits.max_metadata_keys} metadata keys per "
                f"record; dropped {self.dropped} front-matter key(s) over the limit"
            )
        if self.oversized:
            notes.append(
                f"{len(self.oversized)} file(s) have a chunk larger than {limits.name} "
                f"accepts; skipped as {SKIP_REASON}"
            )
        return Preflight(tuple(kept), dict(self.oversized), self.batch, self.dropped, tuple(notes))


def check_limits(changes: Sequence[FileChange], limits: StoreLimits) -> Preflight:
    """The planned `changes` adapted to `limits`; raises `StoreError` when they cannot be."""
    checker = LimitChecker(limits)
    return checker.preflight(checker.check(changes))


__all__ = [
    "CLOUD_LIMITS",
    "DEFAULT_BATCH",
    "SKIP_REASON",
    "LimitChecker",
    "Preflight",
    "check_limits",
]
