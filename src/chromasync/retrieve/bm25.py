"""Keyword search: BM25 over the SQLite FTS5 index of the chunks (`state.schema`, `mirror`).

Design notes: docs/internals.md, `retrieve/bm25.py`.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..records import Hit
from .dense import LeanList
from .filters import SQL_ICONTAINS, SQL_REGEXP

_TOKEN = re.compile(r"[^\W_]+")
#: Lucene's English stop words (the analyzer behind the published BM25 baselines).
STOP_WORDS = frozenset(
    {
        *("a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into"),
        *("is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then"),
        *("there", "these", "they", "this", "to", "was", "will", "with"),
    }
)


@dataclass(frozen=True, slots=True)
class Condition:
    """An SQL condition over `chunks AS c` and its parameters."""

    sql: str = "1"
    params: tuple[Any, ...] = ()

    def and_(self, other: Condition) -> Condition:
        if other.sql == "1":
            return self
        if self.sql == "1":
            return other
        return Condition(f"({self.sql}) AND ({other.sql})", self.params + other.params)


def query_terms(text: str) -> list[str]:
    """The distinct lower-case words of a query, stop words dropped (kept if nothing else)."""
    words = list(dict.fromkeys(w.lower() for w in _TOKEN.findall(text)))
    kept = [w for w in words if w not in STOP_WORDS]
    return kept or words


def fts_query(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of the terms, each quoted (no query syntax leaks)."""
    return " OR ".join('"' + t.replace('"', "") + '"' for t in terms)


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _regexp(pattern: str, text: str | None) -> bool:
    return text is not None and _compiled(pattern).search(text) is not None


def _icontains(value: Any, needle: str) -> bool:
    return value is not None and needle.casefold() in str(value).casefold()


class KeywordIndex:
    """Read side of one SQLite keyword index (the state's, or a mirror's)."""

    def __init__(self, db: sqlite3.Connection, heading_weight: float = 1.0) -> None:
        self.db = db
        self.heading_weight = heading_weight
        self._size: tuple[int, int] | None = None
        db.create_function(SQL_REGEXP, 2, _regexp, deterministic=True)
        db.create_function(SQL_ICONTAINS, 2, _icontains, deterministic=True)

    def count(self, collection: str) -> int:
        row = self.db.execute(
            "SELECT COUNT(*) FROM chunks WHERE collection = ?", (collection,)
        ).fetchone()
        return int(row[0])

    def paths(self, collection: str) -> list[str]:
        rows = self.db.execute(
            "SELECT DISTINCT path FROM chunks WHERE collection = ?", (collection,)
        )
        return [r[0] for r in rows]

    def sources(self) -> set[str]:
        """Every source label the index holds chunks of (any collection)."""
        rows = self.db.execute("SELECT DISTINCT source FROM chunks")
        return {str(r[0]) for r in rows}

    def newest(
        self, collection: str, condition: Condition, date_fields: Sequence[str], n: int
    ) -> list[tuple[float, str, str]]:
        """(date, source, path) of the `n` newest documents of `collection` with a chunk
        meeting `condition`; a document's date is its first date field's `<field>_ts`
        (an undated document is left out). One pass over the collection's rows."""
        if not date_fields or n <= 0:
            return []
        dates = ", ".join("json_extract(c.metadata, ?)" for _ in date_fields)
        date = f"COALESCE({dates}, NULL)" if len(date_fields) > 1 else dates
        rows = self.db.execute(
            f"SELECT MAX({date}) AS ts, c.source, c.path FROM chunks AS c "
            f"WHERE c.collection = ? AND {condition.sql} GROUP BY c.source, c.path "
            "HAVING ts IS NOT NULL ORDER BY ts DESC, c.source, c.path LIMIT ?",
            (*(f'$."{f}_ts"' for f in date_fields), collection, *condition.params, n),
        )
        return [(float(ts), str(source), str(path)) for ts, source, path in rows]

    def document_ids(
        self, collection: str, source: str, path: str, condition: Condition
    ) -> list[str]:
        """The ids of one document's chunks that meet `condition`."""
        rows = self.db.execute(
            "SELECT c.id FROM chunks AS c WHERE c.collection = ? AND c.source = ? AND "
            f"c.path = ? AND {condition.sql}",
            (collection, source, path, *condition.params),
        )
        return [str(r[0]) for r in rows]

    def candidate_ids(self, collection: str, condition: Condition) -> list[str]:
        rows = self.db.execute(
            f"SELECT c.id FROM chunks AS c WHERE c.collection = ? AND {condition.sql}",
            (collection, *condition.params),
        )
        return [r[0] for r in rows]

    def search(
        self,
        collection: str,
        query: str,
        n: int,
        condition: Condition | None = None,
        fields: bool = True,
        terms: Sequence[str] | None = None,
    ) -> Sequence[Hit]:
        """The `n` best chunks for the words of `query` among those meeting `condition`.

        `fields` False: the same statement selects only ids and scores, as a `LeanList`
        (`records` reads the text and metadata of the hits kept; `version` tells whether
        the index changed in between). `terms`: these words
        instead of the query's (a word given twice counts twice: `retrieve.feedback`)."""
        terms = query_terms(query) if terms is None else list(terms)
        if not terms or n <= 0:
            return []
        condition = condition or Condition()
        columns = "c.metadata, c.text, " if fields else ""
        params = (self.heading_weight, fts_query(terms))
        if condition.sql == "1" and self.holds_only(collection):
            # Every row matches the condition: rank in FTS5 alone and look up the top `n`,
            # instead of joining each match to its row first (the same rows, half the time)
            sql = (
                f"SELECT c.id, {columns}k.bm25_score FROM (SELECT rowid, "
                "bm25(keyword, 1.0, ?) AS bm25_score FROM keyword WHERE keyword MATCH ? "
                "ORDER BY bm25_score, rowid LIMIT ?) AS k JOIN chunks AS c ON c.rowid = k.rowid "
                "ORDER BY k.bm25_score, k.rowid"
            )
            rows = self.db.execute(sql, (*params, n))
        else:
            rows = self.db.execute(
                f"SELECT c.id, {columns}bm25(keyword, 1.0, ?) AS bm25_score "
                "FROM keyword JOIN chunks AS c ON c.rowid = keyword.rowid "
                f"WHERE keyword MATCH ? AND c.collection = ? AND {condition.sql} "
                "ORDER BY bm25_score, keyword.rowid LIMIT ?",
                (*params, collection, *condition.params, n),
            )
        if not fields:
            found = rows.fetchall()
            return LeanList([(collection, r[0]) for r in found], [-float(r[1]) for r in found])
        return [_hit(collection, rid, meta, text, -float(rank)) for rid, meta, text, rank in rows]

    def document_counts(self, words: Sequence[str]) -> dict[str, int]:
        """How many chunks of the index hold each word (stemmed as the index stems it)."""
        out = {}
        for word in dict.fromkeys(words):
            row = self.db.execute(
                "SELECT count(*) FROM keyword WHERE keyword MATCH ?", (fts_query([word]),)
            ).fetchone()
            out[word] = int(row[0])
        return out

    def size(self) -> int:
        """How many chunks the index holds (counted once per `version`)."""
        version = self.version()
        if self._size is None or self._size[0] != version:
            (count,) = self.db.execute("SELECT count(*) FROM chunks").fetchone()
            self._size = (version, int(count))
        return self._size[1]

    def holds_only(self, collection: str) -> bool:
        """Whether every row of the index belongs to `collection` (two index seeks)."""
        other = self.db.execute(
            "SELECT 1 FROM chunks WHERE collection < ? OR collection > ? LIMIT 1",
            (collection, collection),
        ).fetchone()
        return other is None

    def version(self) -> int:
        """SQLite's `data_version` of the index: the same at two reads when no other
        connection committed a change between them (so both read the same rows)."""
        return int(self.db.execute("PRAGMA data_version").fetchone()[0])

    def records(self, collection: str, ids: Sequence[str]) -> list[Hit]:
        """Chunks by id (for `similar` and for tests)."""
        out: list[Hit] = []
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT id, metadata, text FROM chunks WHERE collection = ? AND id IN ({marks})",
                (collection, *part),
            )
            out += [_hit(collection, rid, meta, text, 0.0) for rid, meta, text in rows]
        return out


def _hit(collection: str, rid: str, metadata: str, text: str, score: float) -> Hit:
    return Hit.from_metadata(rid, json.loads(metadata), text, score, collection)


__all__ = ["STOP_WORDS", "Condition", "KeywordIndex", "fts_query", "query_terms"]
