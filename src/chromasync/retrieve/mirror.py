"""A keyword index rebuilt from the collection itself, for collections the state does not cover.

Design notes: docs/internals.md, `retrieve/mirror.py`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..datadir import MIRROR_FILE as MIRROR_FILE
from ..datadir import create_private_file, make_private_dir
from ..metakeys import LEGACY_NAMES, RECORD_HASH_KEY, keyword_heading, source_label
from ..state.schema import CHUNKS_TABLE, KEYWORD_INDEX_SQL

if TYPE_CHECKING:
    from ..store.chroma import Collection


log = logging.getLogger(__name__)

MIRROR_SCHEMA = 1
FETCH = 500
# The same tables as the state's keyword index (and its `KEYWORD_INDEX_SQL`), so
# `KeywordIndex` reads both.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS mirror_meta (
    collection TEXT PRIMARY KEY, synced_ns INTEGER NOT NULL, count INTEGER NOT NULL
);
""" + CHUNKS_TABLE.format(extra="\n    record_hash TEXT NOT NULL,")


@dataclass(frozen=True, slots=True)
class SyncFigures:
    collection: str
    added: int
    updated: int
    removed: int
    total: int


class KeywordMirror:
    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db = db
        self.path = path

    @classmethod
    def open(cls, data_dir: Path) -> KeywordMirror:
        make_private_dir(data_dir)
        path = data_dir / MIRROR_FILE
        create_private_file(path)
        try:
            return cls(_connect(path), path)
        except sqlite3.DatabaseError as exc:
            # A cache: throw it away and start again.
            log.warning("keyword mirror %s is unusable (%s); rebuilding it", path, exc)
            for suffix in ("", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
            return cls(_connect(path), path)

    def close(self) -> None:
        self.db.close()

    def last_sync(self, collection: str) -> tuple[int, int] | None:
        """(synced_ns, count) of the collection's last sync, or None."""
        row = self.db.execute(
            "SELECT synced_ns, count FROM mirror_meta WHERE collection = ?", (collection,)
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def sync(self, collection: Collection, now_ns: int) -> SyncFigures:
        """Make the mirror's rows for `collection` equal to the collection's records."""
        name = collection.name
        have = dict(
            self.db.execute(
                "SELECT id, record_hash FROM chunks WHERE collection = ?", (name,)
            ).fetchall()
        )
        want: dict[str, str] = {}
        for record in collection.iter_records():
            want[record.id] = _record_hash(record.metadata)
        changed = [rid for rid, h in want.items() if have.get(rid) != h]
        removed = [rid for rid in have if rid not in want]
        rows = []
        for start in range(0, len(changed), FETCH):
            for record in collection.get(changed[start : start + FETCH]):
                meta = dict(record.metadata)
                rows.append(
                    (
                        record.id,
                        name,
                        source_label(meta),
                        str(meta.get("path", "")),
                        keyword_heading(meta),
                        record.document or "",
                        json.dumps(meta, ensure_ascii=False),
                        _record_hash(meta),
                    )
                )
        with self.db:
            for rid in (*removed, *changed):
                self.db.execute("DELETE FROM chunks WHERE collection = ? AND id = ?", (name, rid))
            self.db.executemany(
                "INSERT INTO chunks (id, collection, source, path, heading, text, metadata, "
                "record_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            self.db.execute(
                "INSERT OR REPLACE INTO mirror_meta VALUES (?, ?, ?)", (name, now_ns, len(want))
            )
        added = sum(1 for rid in changed if rid not in have)
        figures = SyncFigures(name, added, len(changed) - added, len(removed), len(want))
        log.info(
            "keyword mirror of %r: %d added, %d updated, %d removed, %d in all",
            name,
            figures.added,
            figures.updated,
            figures.removed,
            figures.total,
        )
        return figures


def _record_hash(metadata: object) -> str:
    """Our records carry a record hash; others are compared by their whole metadata. A
    record that holds it under the older name compares apart, so that the rename of its
    keys (which changes no hash) is fetched into the mirror."""
    if isinstance(metadata, dict) and metadata.get(RECORD_HASH_KEY):
        return str(metadata[RECORD_HASH_KEY])
    if isinstance(metadata, dict) and metadata.get(LEGACY_NAMES[RECORD_HASH_KEY]):
        return "older:" + str(metadata[LEGACY_NAMES[RECORD_HASH_KEY]])
    text = json.dumps(metadata, sort_keys=True, ensure_ascii=False, default=str)
    return "meta:" + hashlib.sha256(text.encode()).hexdigest()


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, MIRROR_SCHEMA):
            raise sqlite3.DatabaseError(f"mirror schema {version}, want {MIRROR_SCHEMA}")
        db.executescript(_SCHEMA + KEYWORD_INDEX_SQL)
        db.execute(f"PRAGMA user_version = {MIRROR_SCHEMA}")
    except BaseException:
        db.close()
        raise
    return db


__all__ = ["MIRROR_FILE", "KeywordMirror", "SyncFigures"]
