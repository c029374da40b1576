"""The manifest's rows as records: a source's row, and a file's row to and from `FileState`.

A file's records are stored as one compact JSON array of `[id, chunk_hash, record_hash]`
in `files.records`; a source's last summary as a JSON object in `sources.last_summary`.
`stored_root` is where a source row says its files are.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SourceError
from ..records import FileState, RecordRef


@dataclass(frozen=True, slots=True)
class SourceRow:
    collection: str
    source: str
    root: str
    kind: str
    embedding_model: str
    chunking_version: int
    status: str
    last_started_ns: int | None
    last_finished_ns: int | None
    last_outcome: str | None
    last_summary: Mapping[str, Any] | None


def stored_root(row: SourceRow) -> Path:
    """The root a source was indexed from, to reindex, watch or serve it again.

    Roots are stored absolute and resolved. An older version stored them as typed: a
    relative root depends on a working directory nobody recorded, so it is refused rather
    than resolved against this process's (where a same-named folder would be indexed in
    its place and the real records deleted). Naming the folder once records it absolute.
    """
    root = Path(row.root)
    if not root.is_absolute():
        raise SourceError(
            f"source {row.source!r} was recorded with the relative root {row.root!r} by an "
            "older version, and this process cannot know which folder that was; run "
            f"`chromasync ingest /absolute/path/to/{root.name} --source {row.source}` once to "
            "record it"
        )
    return root


def file_row(state: FileState) -> tuple[Any, ...]:
    refs = [[r.id, r.chunk_hash, r.record_hash] for r in state.records]
    return (
        state.rel_path,
        state.size,
        state.mtime_ns,
        state.file_hash,
        state.version,
        state.checked_ns,
        json.dumps(refs, separators=(",", ":")),
        state.skip_reason,
        state.ctime_ns,
        state.inode,
        state.asset,
        state.asset_issue,
    )


def file_state(row: Sequence[Any]) -> FileState:
    refs = tuple(RecordRef(*r) for r in json.loads(row[6])) if row[6] != "[]" else ()
    path, size, mtime_ns, file_hash, version, checked_ns = row[:6]
    skip_reason, ctime_ns, inode, asset, asset_issue = row[7:12]
    return FileState(
        path,
        size,
        mtime_ns,
        file_hash,
        version,
        checked_ns,
        refs,
        skip_reason,
        ctime_ns,
        inode,
        asset,
        asset_issue,
    )


def source_row(row: Sequence[Any]) -> SourceRow:
    summary = json.loads(row[10]) if row[10] else None
    return SourceRow(
        collection=row[0],
        source=row[1],
        root=row[2],
        kind=row[3],
        embedding_model=row[4],
        chunking_version=row[5],
        status=row[6],
        last_started_ns=row[7],
        last_finished_ns=row[8],
        last_outcome=row[9],
        last_summary=summary,
    )


def identity_claims(
    db: sqlite3.Connection, collection: str, source: str
) -> dict[str, tuple[str, bool]]:
    """path -> (the identity its front matter claims, whether its records are keyed by it),
    for the files of `source` that claim one (`plan.identities`), read from the keyword
    mirror's metadata: `document_id` is the identity (the path when none), `ref_doc_id`
    the key."""
    rows = db.execute(
        "SELECT path, json_extract(metadata, '$.document_id'), "
        "json_extract(metadata, '$.ref_doc_id') FROM chunks "
        "WHERE collection = ? AND source = ? GROUP BY path",
        (collection, source),
    )
    return {
        path: (str(identity), identity == key)
        for path, identity, key in rows
        if identity is not None and identity != path
    }
