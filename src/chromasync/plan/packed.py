"""A document's records, packed: its chunks, two digests a record and one shared mapping.

The records of one file share most of their metadata (its path, hashes, front matter,
versions); a chunk adds a handful of fields (its hash, index, heading, lines). A record
object a chunk, with its ID, hex hashes and a dict, held all of it again: a dict a record
was 15 MB for 35,000 chunks, and the records of 65,000 one-line chunks were 38 MB beside
the chunks. Here a file's records are its chunks with 68 bytes a record (the two digests
and how many equal chunks came before it) and the few fields that are neither (pages,
links); a `ChunkRecord` is made when asked, its metadata a tuple of its own values over
the document's mapping.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

from ..metakeys import CHUNK_HASH_KEY, CONTEXT_KEY, RECORD_HASH_KEY
from ..records import Chunk, ChunkRecord, MetaValue

#: A digest's bytes (sha256); a record holds two, the chunk's then the record's.
DIGEST = 32


class PackedMetadata(Mapping[str, MetaValue]):
    """One record's metadata: its own values over its document's (`shared`)."""

    __slots__ = ("_index", "_shared", "_values")

    def __init__(
        self,
        shared: Mapping[str, MetaValue],
        index: Mapping[str, int],
        values: tuple[MetaValue, ...],
    ) -> None:
        self._shared, self._index, self._values = shared, index, values

    def __getitem__(self, key: str) -> MetaValue:
        at = self._index.get(key)
        return self._shared[key] if at is None else self._values[at]

    def __iter__(self) -> Iterator[str]:
        yield from (k for k in self._shared if k not in self._index)
        yield from self._index

    def __len__(self) -> int:
        return len(self._index) + sum(k not in self._index for k in self._shared)

    def __repr__(self) -> str:
        return repr(dict(self))


class Packer:
    """Packs the records of one document over its `shared` metadata."""

    def __init__(self, shared: Mapping[str, MetaValue]) -> None:
        self.shared = shared
        self._layouts: dict[tuple[str, ...], dict[str, int]] = {}

    def __call__(self, own: Mapping[str, MetaValue]) -> PackedMetadata:
        keys = tuple(own)
        index = self._layouts.get(keys)
        if index is None:
            index = self._layouts[keys] = {k: i for i, k in enumerate(keys)}
        return PackedMetadata(self.shared, index, tuple(own.values()))


def own_fields(
    chunk_hash: str, index: int, chunk: Chunk, extra: Mapping[str, MetaValue]
) -> dict[str, MetaValue]:
    """A record's own fields that its record hash covers: its chunk's hash, place and lines,
    then `extra` (pages, symbol, links)."""
    return {
        CHUNK_HASH_KEY: chunk_hash,
        "chunk_index": index,
        "heading": chunk.heading,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        **extra,
    }


def record_id(prefix: str, chunk_hash: str, occurrence: int) -> str:
    """A record's ID: its document's `plan.triage.id_prefix`, its chunk's hash, and how
    many equal chunks of the document came before it."""
    return f"{prefix}{chunk_hash[:16]}-{occurrence}"


@dataclass(frozen=True, slots=True)
class Columns:
    """What a file's records are made of (see the module's docstring)."""

    chunks: Sequence[Chunk]
    prefix: str  # a record ID's first parts: `plan.triage.id_prefix`
    digests: bytes  # a record's chunk hash then its record hash, `DIGEST` bytes each
    occurrences: array[int]  # equal chunks before a record's: the last part of its ID
    extras: Mapping[int, Mapping[str, MetaValue]]  # a record's fields past `own_fields`
    pack: Packer


class FileRecords(Sequence[ChunkRecord]):
    """One file's records, in order (`rows`: which of the file's chunks they are)."""

    __slots__ = ("_columns", "_rows")

    def __init__(self, columns: Columns, rows: Sequence[int] | None = None) -> None:
        self._columns = columns
        self._rows = range(len(columns.chunks)) if rows is None else rows

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, at: int) -> ChunkRecord: ...
    @overload
    def __getitem__(self, at: slice) -> FileRecords: ...
    def __getitem__(self, at: int | slice) -> ChunkRecord | FileRecords:
        if isinstance(at, slice):
            return FileRecords(self._columns, self._rows[at])
        return self._record(self._rows[at])

    def __iter__(self) -> Iterator[ChunkRecord]:
        return map(self._record, self._rows)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FileRecords({list(self)!r})"

    def take(self, rows: Sequence[int]) -> FileRecords:
        """The records of the file's chunks `rows` (positions in the file, not in this)."""
        return FileRecords(self._columns, array("I", rows))

    def id_rows(self) -> Iterator[tuple[int, str, str]]:
        """Each record's row, ID and record hash, without making the record."""
        for row in self._rows:
            chunk_hash, record_hash = self._hashes(row)
            yield row, self._id(row, chunk_hash), record_hash

    def _hashes(self, row: int) -> tuple[str, str]:
        at = 2 * DIGEST * row
        both = self._columns.digests[at : at + 2 * DIGEST]
        return both[:DIGEST].hex(), both[DIGEST:].hex()

    def _id(self, row: int, chunk_hash: str) -> str:
        return record_id(self._columns.prefix, chunk_hash, self._columns.occurrences[row])

    def _record(self, row: int) -> ChunkRecord:
        columns = self._columns
        chunk = columns.chunks[row]
        chunk_hash, record_hash = self._hashes(row)
        own = own_fields(chunk_hash, row, chunk, columns.extras.get(row, {}))
        own[RECORD_HASH_KEY] = record_hash
        if chunk.context:
            own[CONTEXT_KEY] = chunk.context
        own["char_count"] = len(chunk.text)
        return ChunkRecord(
            self._id(row, chunk_hash), chunk_hash, record_hash, chunk.text, columns.pack(own)
        )
