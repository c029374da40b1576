"""Dense search: Chroma's nearest neighbours under the same filters as keyword search.

Design notes: docs/internals.md, `retrieve/dense.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from ..records import Hit

if TYPE_CHECKING:
    from ..store.chroma import Collection


class LeanList(Sequence[Hit]):
    """A ranked list read as ids and scores only (a lean list): each item a bare `Hit` (its
    id, score and collection; no text nor metadata) made when read; `keys` ((collection, id)
    each) and `scores` without making any (`results.rank_hits`)."""

    __slots__ = ("keys", "scores")

    def __init__(self, keys: list[tuple[str, str]], scores: list[float]) -> None:
        self.keys = keys
        self.scores = scores

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, index: int) -> Hit: ...

    @overload
    def __getitem__(self, index: slice) -> LeanList: ...

    def __getitem__(self, index: int | slice) -> Hit | LeanList:
        if isinstance(index, slice):
            return LeanList(self.keys[index], self.scores[index])
        return self.hit(index)

    def hit(self, index: int, **fields: Any) -> Hit:
        """Item `index`, with `fields` (its score, ranks...) in place of its own: what
        `dataclasses.replace` of the item makes, made once."""
        (collection, rid), score = self.keys[index], self.scores[index]
        return Hit(rid, "", "", "", 0, 0, fields.pop("score", score), "", collection, **fields)

    def __eq__(self, other: object) -> bool:
        """Equal to a sequence of the same hits, as the list it stands for."""
        return isinstance(other, Sequence) and list(self) == list(other)


def dense_search(
    collection: Collection,
    vector: Sequence[float] | str,
    n: int,
    where: Mapping[str, Any] | None = None,
    ids: Sequence[str] | None = None,
    fields: bool = True,
) -> Sequence[Hit]:
    """The `n` nearest chunks of one collection (cosine similarity as the score); a string
    is embedded by the collection's own function (`server` provider). `fields` False: ids
    and scores only, as a `LeanList` (see `Collection.nearest`)."""
    if n <= 0:
        return []
    if not fields:
        found, scores = collection.nearest(vector, n, where, ids)
        return LeanList([(collection.name, rid) for rid in found], scores)
    return collection.query(vector, n, where, ids)


def merge_by_score(lists: Iterable[Sequence[Hit]], n: int) -> Sequence[Hit]:
    """Several collections' ranked hits as one list, best score first (stable); lean lists
    stay one."""
    lists = [hits for hits in lists if hits]
    lean = [hits for hits in lists if isinstance(hits, LeanList)]
    if lean and len(lean) == len(lists):
        pairs = [pair for hits in lean for pair in zip(hits.keys, hits.scores, strict=True)]
        pairs.sort(key=lambda p: -p[1])
        del pairs[n:]
        return LeanList([key for key, _ in pairs], [score for _, score in pairs])
    merged = [hit for hits in lists for hit in hits]
    merged.sort(key=lambda h: -h.score)
    return tuple(merged[:n])


__all__ = ["LeanList", "dense_search", "merge_by_score"]
