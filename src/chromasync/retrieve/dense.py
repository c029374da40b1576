"""Dense search: Chroma's nearest neighbours under the same filters as keyword search.

The query is embedded once (`embed_query`) and sent to each collection whose recorded model
matches the embedder; Chroma applies the `where` filter (and, for `--phrase`/`--match`, the
candidate ids found by the keyword index) before ranking. Scores are cosine similarities,
comparable across collections of one model, so several collections merge by score.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..records import Hit

if TYPE_CHECKING:
    from ..store.chroma import Collection


def dense_search(
    collection: Collection,
    vector: Sequence[float] | str,
    n: int,
    where: Mapping[str, Any] | None = None,
    ids: Sequence[str] | None = None,
    fields: bool = True,
) -> list[Hit]:
    """The `n` nearest chunks of one collection (cosine similarity as the score); a string
    is embedded by the collection's own function (`server` provider). `fields` False: ids
    and scores only (see `Collection.query`)."""
    if n <= 0:
        return []
    return collection.query(vector, n, where, ids, fields=fields)


def merge_by_score(lists: Iterable[Sequence[Hit]], n: int) -> list[Hit]:
    """Several collections' ranked hits as one list, best score first (stable)."""
    merged = [hit for hits in lists for hit in hits]
    merged.sort(key=lambda h: -h.score)
    return merged[:n]


__all__ = ["dense_search", "merge_by_score"]
