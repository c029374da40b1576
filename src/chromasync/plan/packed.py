"""A document's record metadata, held as one shared mapping and a short tuple a record.

The records of one file share most of their metadata (its path, hashes, front matter,
versions); a chunk adds a handful of fields (its hash, index, heading, lines). A dict a
record holds all of it again: 35,000 chunks of one 8 MiB file were 15 MB of dicts. Here
each record holds its own values in a tuple, laid out by a key index that every record
with the same keys shares, over the document's mapping.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ..records import MetaValue


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
