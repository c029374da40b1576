"""Rebuilding the manifest from the collection itself, without embedding anything.

Design notes: docs/internals.md, `sync/heal.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..metakeys import (
    CHUNK_HASH_KEY,
    CHUNKING_VERSION_KEY,
    FILE_HASH_KEY,
    FILE_VERSION_KEY,
    RECORD_HASH_KEY,
    bookkeeping,
)
from ..records import ChunkRecord, FileState, RecordRef

if TYPE_CHECKING:
    from ..store.chroma import StoredRecord


@dataclass(frozen=True, slots=True)
class Rebuilt:
    files: dict[str, FileState]
    records: dict[str, list[ChunkRecord]]
    inconsistent: tuple[str, ...]  # paths whose records disagree
    chunking_versions: frozenset[int] = frozenset()  # of the records found


def rebuild_manifest(stored: Iterable[StoredRecord], previous: Mapping[str, FileState]) -> Rebuilt:
    """A manifest recomputed from a source's records; `previous` supplies the stat fields
    (size, mtime, ctime, inode, when checked) of each file whose stored content it describes,
    so that triage trusts them as it would have before the heal."""
    by_path: dict[str, list[StoredRecord]] = {}
    for record in stored:
        by_path.setdefault(str(record.metadata.get("path", "")), []).append(record)
    files: dict[str, FileState] = {}
    records: dict[str, list[ChunkRecord]] = {}
    inconsistent: list[str] = []
    chunking = {
        int(bookkeeping(r.metadata, CHUNKING_VERSION_KEY) or 0)
        for rows in by_path.values()
        for r in rows
    }
    for path, rows in sorted(by_path.items()):
        rows.sort(key=lambda r: (int(r.metadata.get("chunk_index", 0)), r.id))
        hashes = {str(bookkeeping(r.metadata, FILE_HASH_KEY) or "") for r in rows}
        versions = [int(bookkeeping(r.metadata, FILE_VERSION_KEY) or 1) for r in rows]
        indexes = sorted(int(r.metadata.get("chunk_index", -1)) for r in rows)
        counts = {int(r.metadata.get("chunk_count", -1)) for r in rows}
        consistent = (
            len(hashes) == 1
            and "" not in hashes
            and counts == {len(rows)}
            and indexes == list(range(len(rows)))
        )
        file_hash = next(iter(hashes)) if consistent else ""
        old = previous.get(path)
        asset, asset_issue = "", ""
        if consistent and old is not None and old.file_hash == file_hash:
            stat = (old.size, old.mtime_ns, old.checked_ns, old.ctime_ns, old.inode)
            asset, asset_issue = old.asset, old.asset_issue  # a sidecar's, read with it
        else:
            stat = (-1, -1, 0, 0, 0)
        size, mtime_ns, checked_ns, ctime_ns, inode = stat
        if not consistent:
            inconsistent.append(path)
        refs = tuple(
            RecordRef(
                r.id,
                str(bookkeeping(r.metadata, CHUNK_HASH_KEY) or ""),
                str(bookkeeping(r.metadata, RECORD_HASH_KEY) or ""),
            )
            for r in rows
        )
        files[path] = FileState(
            path,
            size,
            mtime_ns,
            file_hash,
            max(versions),
            checked_ns,
            refs,
            ctime_ns=ctime_ns,
            inode=inode,
            asset=asset,
            asset_issue=asset_issue,
        )
        records[path] = [
            ChunkRecord(
                id=r.id,
                chunk_hash=str(bookkeeping(r.metadata, CHUNK_HASH_KEY) or ""),
                record_hash=str(bookkeeping(r.metadata, RECORD_HASH_KEY) or ""),
                document=r.document or "",
                metadata=dict(r.metadata),
            )
            for r in rows
        ]
    for path, old in previous.items():
        if old.skip_reason and path not in files:
            files[path] = old
    return Rebuilt(files, records, tuple(inconsistent), frozenset(chunking))
