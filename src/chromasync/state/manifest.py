"""Local state: the per-source manifest and the keyword index, in one SQLite file.

Design notes: docs/internals.md, `state/manifest.py`.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..datadir import FILE_MODE, create_private_file, make_private_dir
from ..datadir import STATE_FILE as STATE_FILE
from ..errors import SourceError, StoreError
from ..metakeys import keyword_heading
from ..records import ChunkRecord, FileState
from .rows import SourceRow as SourceRow
from .rows import file_row, file_state, source_row
from .rows import stored_root as stored_root
from .schema import KEYWORD_INDEX_SQL as KEYWORD_INDEX_SQL
from .schema import (
    SCHEMA,
    SchemaMismatch,
    check_schema,
    open_db,
    open_db_readonly,
    unusable,
)
from .schema import is_corruption as is_corruption

log = logging.getLogger(__name__)


def check_identity(state: State, label: str, root: Path) -> list[str]:
    """Refuse to use `label` for `root` when the state knows it for another root.

    A source's identity is its resolved absolute root: two roots never share a label
    (the second ingest would delete the first's records), and a label never moves to
    another root. A relative root stored by an older version is taken as this one only
    when `root` ends with it (the same path typed again): the collections where that is so
    are returned, for the caller to store the absolute root once its run succeeded (the
    deletion guards of that run still apply, see `check_deletions`).
    """
    moved: list[str] = []
    for row in state.sources():
        if row.source != label or row.root == str(root):
            continue
        stored = Path(row.root)
        if not stored.is_absolute():
            parts = tuple(p for p in stored.parts if p not in ("", "."))
            if parts and ".." not in parts and root.parts[-len(parts) :] == parts:
                moved.append(row.collection)
                continue
        raise SourceError(
            f"source label {label!r} already belongs to {row.root} (collection "
            f"{row.collection!r}); refusing to index {root} under it, which would delete "
            f"that folder's records. Give this folder another label (--source LABEL, or "
            f"`label:` in the config file), or remove the old source first (`chromasync "
            f"sources remove {label}`)"
        )
    return moved


def check_shared_folder(state: State, label: str, root: Path, paths: Iterable[str]) -> None:
    """Refuse a new label for a folder another label already indexes the same files of.

    The same folder under two labels would return every hit twice. Two labels may share a
    root when they index different files of it (`subdirs`, patterns, extensions: a
    monorepo's docs and code); the first of `paths` (the files this run found) that the
    other label holds too is the proof of a duplicate."""
    others = [r for r in state.sources() if r.source != label and r.root == str(root)]
    if not others:
        return
    wanted = set(paths)
    for row in others:
        held = state.files(row.collection, row.source, with_records=False)
        shared = sorted(wanted.intersection(held))
        if shared:
            raise SourceError(
                f"folder {root} is already indexed as source {row.source!r} (collection "
                f"{row.collection!r}; {len(shared)} of its files, e.g. {shared[0]!r}); "
                f"indexing it again as {label!r} would return every hit twice. Use "
                f"--source {row.source} (or `label: {row.source}`), or remove the old "
                f"source first (`chromasync sources remove {row.source}`)"
            )


class State:
    """The SQLite state of one data dir. Not shared between processes (see `lock`)."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self.path = path

    @classmethod
    def open(cls, data_dir: Path, *, readonly: bool = False) -> State:
        """The state of `data_dir`, created (0600, in a 0700 folder) when absent.

        Only proven damage moves the file aside (`state.sqlite3.corrupt-<pid>-<time>`, then
        rebuilt from the collection): SQLite says it is not a database or is malformed, or
        it is not a chromasync state of this schema. Any other failure (permissions, a
        read-only mount, a full disk, a lock) is a `StoreError` naming the file, and every
        file is left as it was. `readonly` never writes, never creates and never moves
        anything: an absent state reads as empty, a damaged one is an error.
        """
        path = data_dir / STATE_FILE
        if readonly:
            return cls._open_readonly(path)
        try:
            make_private_dir(data_dir)
            create_private_file(path)
            if path.stat().st_mode & 0o077:  # written by an older version: make it private
                os.chmod(path, FILE_MODE)
        except OSError as exc:
            raise StoreError(unusable(path, exc)) from exc
        try:
            return cls(open_db(path), path)
        except (sqlite3.DatabaseError, SchemaMismatch) as exc:
            if isinstance(exc, sqlite3.DatabaseError) and not is_corruption(exc):
                raise StoreError(unusable(path, exc)) from exc
            aside = path.with_name(f"{STATE_FILE}.corrupt-{os.getpid()}-{_now_ns()}")
            log.warning(
                "state file %s is unusable (%s); moved to %s and rebuilding from the collection",
                path,
                exc,
                aside.name,
            )
            for suffix in ("", "-wal", "-shm"):
                candidate = Path(str(path) + suffix)
                if candidate.exists():
                    os.replace(candidate, Path(str(aside) + suffix))
            create_private_file(path)
            return cls(open_db(path), path)

    @classmethod
    def _empty(cls, path: Path) -> State:
        db = sqlite3.connect(":memory:", check_same_thread=False)
        db.executescript(SCHEMA + KEYWORD_INDEX_SQL)
        return cls(db, path)

    @classmethod
    def _open_readonly(cls, path: Path) -> State:
        if not path.exists():
            return cls._empty(path)
        try:
            db = open_db_readonly(path)
        except sqlite3.Error as exc:
            raise StoreError(unusable(path, exc)) from exc
        try:
            if not check_schema(db):  # created an instant ago, its schema not yet written
                db.close()
                return cls._empty(path)
            db.execute("SELECT COUNT(*) FROM sources").fetchone()
        except (sqlite3.DatabaseError, SchemaMismatch) as exc:
            db.close()
            if isinstance(exc, sqlite3.DatabaseError) and not is_corruption(exc):
                raise StoreError(unusable(path, exc)) from exc
            raise StoreError(
                f"state file {path} is damaged ({exc}); it is left as it is: the next "
                "`chromasync ingest` moves it aside and rebuilds it from the collection"
            ) from exc
        return cls(db, path)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> State:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sources -----------------------------------------------------------------------

    def source(self, collection: str, source: str) -> SourceRow | None:
        row = self._db.execute(
            "SELECT * FROM sources WHERE collection = ? AND source = ?", (collection, source)
        ).fetchone()
        return source_row(row) if row else None

    def sources(self) -> list[SourceRow]:
        rows = self._db.execute("SELECT * FROM sources ORDER BY collection, source")
        return [source_row(r) for r in rows]

    def begin_run(
        self,
        collection: str,
        source: str,
        root: str,
        kind: str,
        embedding_model: str,
        chunking_version: int,
    ) -> None:
        """Mark the source as being written; committed before any write to the store."""
        with self._db:
            self._db.execute(
                "INSERT INTO sources (collection, source, root, kind, embedding_model, "
                "chunking_version, status, last_started_ns) VALUES (?, ?, ?, ?, ?, ?, "
                "'running', ?) ON CONFLICT (collection, source) DO UPDATE SET root = "
                "excluded.root, kind = excluded.kind, embedding_model = "
                "excluded.embedding_model, chunking_version = excluded.chunking_version, "
                "status = 'running', last_started_ns = excluded.last_started_ns",
                (collection, source, root, kind, embedding_model, chunking_version, _now_ns()),
            )

    def finish_run(
        self, collection: str, source: str, outcome: str, summary: Mapping[str, Any]
    ) -> None:
        with self._db:
            self._db.execute(
                "UPDATE sources SET status = CASE WHEN ? = 'ok' THEN 'clean' ELSE status END, "
                "last_finished_ns = ?, last_outcome = ?, last_summary = ? "
                "WHERE collection = ? AND source = ?",
                (outcome, _now_ns(), outcome, json.dumps(summary), collection, source),
            )

    def record_noop_run(self, collection: str, source: str, summary: Mapping[str, Any]) -> None:
        """A run that wrote nothing: only its time and figures are kept."""
        with self._db:
            self._db.execute(
                "UPDATE sources SET last_started_ns = ?, last_finished_ns = ?, "
                "last_outcome = 'ok', last_summary = ? WHERE collection = ? AND source = ?",
                (_now_ns(), _now_ns(), json.dumps(summary), collection, source),
            )

    def records_version(self, collection: str, source: str) -> int:
        """The version of the keys the source's records in the store carry, as recorded
        after `store.peers.upgrade_records` (0: never recorded, an older index)."""
        row = self._db.execute(
            "SELECT value FROM meta WHERE key = ?", (_records_key(collection, source),)
        ).fetchone()
        return int(row[0]) if row is not None and str(row[0]).isdigit() else 0

    def set_records_version(self, collection: str, source: str, version: int) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                (_records_key(collection, source), str(version)),
            )

    def rename_keyword_keys(self, collection: str, source: str, names: Mapping[str, str]) -> None:
        """Move metadata keys (older name -> today's, values unchanged) in the source's
        rows of the keyword index, as `store.peers.upgrade_records` moves them in the store:
        `--where` over the keyword index then sees what the store holds."""
        with self._db:
            for old, new in names.items():
                path_old, path_new = f'$."{old}"', f'$."{new}"'  # chromasync's own names
                self._db.execute(
                    "UPDATE chunks SET metadata = json_remove(json_set(metadata, ?, "
                    "json_extract(metadata, ?)), ?) WHERE collection = ? AND source = ? "
                    "AND json_type(metadata, ?) IS NOT NULL",
                    (path_new, path_old, path_old, collection, source, path_old),
                )

    def set_root(self, collection: str, source: str, root: str) -> None:
        with self._db:
            self._db.execute(
                "UPDATE sources SET root = ? WHERE collection = ? AND source = ?",
                (root, collection, source),
            )

    def mark_dirty(self, collection: str, source: str) -> None:
        """Make the next run rebuild this source's manifest from the collection."""
        with self._db:
            self._db.execute(
                "UPDATE sources SET status = 'dirty' WHERE collection = ? AND source = ?",
                (collection, source),
            )

    def drop_source(self, collection: str, source: str) -> None:
        with self._db:
            self._db.execute(
                "DELETE FROM chunks WHERE collection = ? AND source = ?", (collection, source)
            )
            for table in ("files", "sources"):
                self._db.execute(
                    f"DELETE FROM {table} WHERE collection = ? AND source = ?",
                    (collection, source),
                )
            self._db.execute("DELETE FROM meta WHERE key = ?", (_records_key(collection, source),))

    # -- files -------------------------------------------------------------------------

    def files(
        self, collection: str, source: str, with_records: bool = True
    ) -> dict[str, FileState]:
        """The manifest of a source; without records, `FileState.records` is empty."""
        columns = "records" if with_records else "'[]'"
        rows = self._db.execute(
            "SELECT path, size, mtime_ns, file_hash, version, checked_ns, "
            f"{columns}, skip_reason, ctime_ns, inode, asset, asset_issue "
            "FROM files WHERE collection = ? AND source = ?",
            (collection, source),
        )
        return {r[0]: file_state(r) for r in rows}

    def record_total(self, collection: str, source: str) -> int:
        """How many records the manifest holds for a source (without parsing them)."""
        (total,) = self._db.execute(
            "SELECT COALESCE(SUM(json_array_length(records)), 0) FROM files "
            "WHERE collection = ? AND source = ?",
            (collection, source),
        ).fetchone()
        return int(total)

    def commit_files(
        self,
        collection: str,
        source: str,
        states: Sequence[FileState],
        records: Mapping[str, Sequence[ChunkRecord]],
        after_first: Callable[[], None] | None = None,
    ) -> None:
        """Write manifest rows and replace their keyword rows, in one transaction
        (`after_first`: a test hook called inside it, after the first file's rows)."""
        with self._db:
            for index, state in enumerate(states):
                self._db.execute(
                    f"INSERT OR REPLACE INTO files VALUES ({', '.join('?' * 14)})",
                    (collection, source, *file_row(state)),
                )
                self._replace_chunks(
                    collection, source, state.rel_path, records.get(state.rel_path)
                )
                if index == 0 and after_first is not None:
                    after_first()

    def touch_files(self, collection: str, source: str, states: Sequence[FileState]) -> None:
        """Update the stat fields and confirmation time of files whose content is unchanged
        (and a sidecar's asset fields, which also depend on the file it names)."""
        with self._db:
            self._db.executemany(
                "UPDATE files SET size = ?, mtime_ns = ?, checked_ns = ?, ctime_ns = ?, "
                "inode = ?, asset = ?, asset_issue = ? "
                "WHERE collection = ? AND source = ? AND path = ?",
                [
                    (
                        s.size,
                        s.mtime_ns,
                        s.checked_ns,
                        s.ctime_ns,
                        s.inode,
                        s.asset,
                        s.asset_issue,
                        collection,
                        source,
                        s.rel_path,
                    )
                    for s in states
                ],
            )

    def remove_files(self, collection: str, source: str, paths: Iterable[str]) -> None:
        with self._db:
            for path in paths:
                self._db.execute(
                    "DELETE FROM files WHERE collection = ? AND source = ? AND path = ?",
                    (collection, source, path),
                )
                self._replace_chunks(collection, source, path, None)

    def replace_source(
        self,
        collection: str,
        source: str,
        states: Sequence[FileState],
        records: Mapping[str, Sequence[ChunkRecord]],
    ) -> None:
        """Replace the whole manifest of a source (used when healing from the collection)."""
        with self._db:
            self._db.execute(
                "DELETE FROM files WHERE collection = ? AND source = ?", (collection, source)
            )
            self._db.execute(
                "DELETE FROM chunks WHERE collection = ? AND source = ?", (collection, source)
            )
            self._db.executemany(
                "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(collection, source, *file_row(s)) for s in states],
            )
            for path, rows in records.items():
                self._insert_chunks(collection, source, path, rows)

    def _replace_chunks(
        self, collection: str, source: str, path: str, rows: Sequence[ChunkRecord] | None
    ) -> None:
        self._db.execute(
            "DELETE FROM chunks WHERE collection = ? AND source = ? AND path = ?",
            (collection, source, path),
        )
        if rows:
            self._insert_chunks(collection, source, path, rows)

    def _insert_chunks(
        self, collection: str, source: str, path: str, rows: Sequence[ChunkRecord]
    ) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO chunks (id, collection, source, path, heading, text, "
            "metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (  # a stream: a file of 60,000 chunks held 1 KB of JSON a row
                (
                    r.id,
                    collection,
                    source,
                    path,
                    keyword_heading(r.metadata),
                    r.document,
                    json.dumps(dict(r.metadata), ensure_ascii=False),
                )
                for r in rows
            ),
        )

    # -- keyword index (read side, used by retrieval and verify) -----------------------

    def keyword_ids(self, collection: str, source: str | None = None) -> set[str]:
        if source is None:
            rows = self._db.execute("SELECT id FROM chunks WHERE collection = ?", (collection,))
        else:
            rows = self._db.execute(
                "SELECT id FROM chunks WHERE collection = ? AND source = ?", (collection, source)
            )
        return {r[0] for r in rows}

    def document_chunks(
        self,
        path: str,
        source: str | None = None,
        limit: int | None = None,
        collection: str | None = None,
    ) -> list[tuple[str, str, str, str, str, dict[str, Any]]]:
        """(collection, source, id, heading, text, metadata) of every chunk of `path`, in
        line order, from every collection or from `collection` (the heading path, not the
        keyword column's `metakeys.keyword_heading`); the first `limit` only, when given."""
        sql = "SELECT collection, source, id, text, metadata FROM chunks WHERE path = ? "
        args: list[str | int] = [path]
        if source is not None:
            sql += "AND source = ? "
            args.append(source)
        if collection is not None:
            sql += "AND collection = ? "
            args.append(collection)
        sql += (
            "ORDER BY collection, source, "
            "CAST(json_extract(metadata, '$.start_line') AS INTEGER), id"
        )
        if limit is not None:
            sql += " LIMIT ?"
            args.append(max(limit, 0))
        rows = [(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in self._db.execute(sql, args)]
        return [(c, s, i, str(meta.get("heading", "")), t, meta) for c, s, i, t, meta in rows]

    @property
    def db(self) -> sqlite3.Connection:
        """The raw connection, for read-only queries by retrieval."""
        return self._db


def _now_ns() -> int:
    import time

    return time.time_ns()


def _records_key(collection: str, source: str) -> str:
    return "records_version:" + json.dumps([collection, source])
