"""The embedding cache: vectors keyed by (model id, sha256 of the embedding input).

Design notes: docs/internals.md, `embed/cache.py`.
"""

from __future__ import annotations

import array
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..datadir import create_private_file, make_private_dir

DEFAULT_MAX_ENTRIES = 500_000
_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    last_used INTEGER NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_lru ON vectors (last_used);
"""


class EmbeddingCache:
    def __init__(self, path: Path, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        make_private_dir(path.parent)
        create_private_file(path)
        self._db = sqlite3.connect(str(path), timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self.max_entries = max_entries
        self._stamp = time.time_ns()
        self._touched: set[tuple[str, str]] = set()

    def close(self) -> None:
        self._db.close()

    def get_many(self, model: str, hashes: Iterable[str]) -> dict[str, list[float]]:
        wanted = list(dict.fromkeys(hashes))
        found: dict[str, list[float]] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT text_hash, vector FROM vectors WHERE model = ? AND text_hash IN ({marks})",
                [model, *part],
            )
            for text_hash, blob in rows:
                vector = array.array("f")
                vector.frombytes(blob)
                found[text_hash] = vector.tolist()
        self._touched.update((model, h) for h in found)
        return found

    def put_many(self, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)",
                [(model, h, len(v), array.array("f", v).tobytes(), self._stamp) for h, v in items],
            )

    def finish_run(self) -> int:
        """Record this run's hits as recent and evict past the bound; returns evictions."""
        with self._db:
            touched = list(self._touched)
            for start in range(0, len(touched), 500):
                part = touched[start : start + 500]
                self._db.executemany(
                    "UPDATE vectors SET last_used = ? WHERE model = ? AND text_hash = ?",
                    [(self._stamp, m, h) for m, h in part],
                )
            self._touched.clear()
            (count,) = self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()
            if count <= self.max_entries:
                return 0
            excess = count - int(self.max_entries * 0.9)
            self._db.execute(
                "DELETE FROM vectors WHERE (model, text_hash) IN (SELECT model, text_hash "
                "FROM vectors ORDER BY last_used LIMIT ?)",
                (excess,),
            )
        return int(excess)
