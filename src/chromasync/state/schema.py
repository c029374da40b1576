"""The state file's on-disk format: its tables, its schema check, and opening it.

Design notes: docs/internals.md, `state/schema.py`.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ..records import MANIFEST_SCHEMA

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources (
    collection TEXT NOT NULL,
    source TEXT NOT NULL,
    root TEXT NOT NULL,
    kind TEXT NOT NULL,
    embedding_model TEXT NOT NULL,
    chunking_version INTEGER NOT NULL,
    status TEXT NOT NULL,
    last_started_ns INTEGER,
    last_finished_ns INTEGER,
    last_outcome TEXT,
    last_summary TEXT,
    PRIMARY KEY (collection, source)
);
CREATE TABLE IF NOT EXISTS files (
    collection TEXT NOT NULL,
    source TEXT NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    file_hash TEXT NOT NULL,
    version INTEGER NOT NULL,
    checked_ns INTEGER NOT NULL,
    records TEXT NOT NULL,
    skip_reason TEXT NOT NULL DEFAULT '',
    ctime_ns INTEGER NOT NULL DEFAULT 0,
    inode INTEGER NOT NULL DEFAULT 0,
    asset TEXT NOT NULL DEFAULT '',
    asset_issue TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (collection, source, path)
) WITHOUT ROWID;
"""
#: The `chunks` table of both keyword indexes: the state's, and `retrieve.mirror`'s, whose
#: `{extra}` column is `record_hash`.
CHUNKS_TABLE = """
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    collection TEXT NOT NULL,
    source TEXT NOT NULL,
    path TEXT NOT NULL,
    heading TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,{extra}
    UNIQUE (collection, id)
);
"""
SCHEMA += CHUNKS_TABLE.format(extra="")
SCHEMA += "CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks (collection, source, path);\n"
#: The FTS5 index over a `chunks` table, kept in step by triggers (the keyword mirror of
#: `retrieve.mirror` uses the same definition). Its `heading` column is
#: `metakeys.keyword_heading`: the heading path, and on a page's first chunk the page's
#: description its context embeds (a record's heading path is in its metadata).
KEYWORD_INDEX_SQL = """
CREATE VIRTUAL TABLE IF NOT EXISTS keyword USING fts5(
    text, heading, content='chunks', content_rowid='rowid', tokenize='porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO keyword(rowid, text, heading) VALUES (new.rowid, new.text, new.heading);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO keyword(keyword, rowid, text, heading)
    VALUES ('delete', old.rowid, old.text, old.heading);
END;
"""


class SchemaMismatch(Exception):
    pass


#: SQLite's primary result codes that prove a file damaged (SQLITE_CORRUPT, SQLITE_NOTADB).
_CORRUPTION_CODES = frozenset({11, 26})


def is_corruption(exc: sqlite3.Error) -> bool:
    """Whether SQLite says the file itself is damaged (not merely unwritable or busy)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _CORRUPTION_CODES
    text = str(exc).lower()
    return "file is not a database" in text or "malformed" in text


def unusable(path: Path, exc: BaseException) -> str:
    return (
        f"cannot use the state file {path}: {exc}. It is left as it is; check that the data "
        f"dir {path.parent} is writable by this user, not on a read-only or full disk, and "
        "not held by another program, then run the command again"
    )


def check_schema(db: sqlite3.Connection) -> bool:
    """Whether the file holds a state of this schema (False: no table yet); a file of
    another schema or another program is `SchemaMismatch`."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not tables:
        return False
    if "meta" in tables:
        row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None or int(row[0]) != MANIFEST_SCHEMA:
            raise SchemaMismatch(f"schema {row[0] if row else None}, want {MANIFEST_SCHEMA}")
    else:
        raise SchemaMismatch("not a chromasync state file")
    return True


def open_db(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        check_schema(db)
        # one transaction: another process never sees tables without their schema row
        db.executescript(
            "BEGIN IMMEDIATE;\n"
            + SCHEMA
            + KEYWORD_INDEX_SQL
            + f"INSERT OR IGNORE INTO meta VALUES ('schema', '{MANIFEST_SCHEMA}');\nCOMMIT;"
        )
        db.execute("SELECT COUNT(*) FROM sources").fetchone()
    except BaseException:
        db.close()
        raise
    return db


def open_db_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection. On a read-only file system SQLite cannot even open a WAL
    database for reading (it needs to write the `-shm` index): there, when the write-ahead
    log is absent or empty (everything is in the file itself), the file is opened as
    immutable, which reads it as it is."""
    uri = path.absolute().as_uri()
    db = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.OperationalError:
        db.close()
        wal = Path(f"{path}-wal")
        if os.access(path.parent, os.W_OK) or (wal.exists() and wal.stat().st_size > 0):
            raise
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)
    except sqlite3.DatabaseError:
        pass  # not a database, or damaged: the caller's schema check says so
    return db
