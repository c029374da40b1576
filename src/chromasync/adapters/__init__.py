"""Adapters: chromasync's hybrid, filter-first search inside the chains people already
have.

Design notes: docs/internals.md, `adapters/__init__.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..metakeys import BOOKKEEPING_KEYS
from ..records import Hit

#: Record keys that are chromasync's bookkeeping: never shown to a language model (besides
#: every `chromasync_*` key; the older names are those of a record not upgraded yet).
BOOKKEEPING = frozenset(
    {
        *BOOKKEEPING_KEYS,
        "chunk_count",
        "source_kind",
    }
)


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """A hit's metadata for a framework document: its own fields, then the citation
    (`source` is the file's path, where LangChain's loaders put it; `chromasync_source` the
    source's label), without bookkeeping (`BOOKKEEPING`, any `chromasync_*` but the label)."""
    kept: dict[str, Any] = {
        k: v
        for k, v in hit.metadata.items()
        if k not in BOOKKEEPING and not (k.startswith("chromasync_") and k != "chromasync_source")
    }
    kept.update(
        {
            "id": hit.id,
            "source": hit.path,
            "chromasync_source": hit.source,
            "path": hit.path,
            "heading": hit.heading,
            "start_line": hit.start_line,
            "end_line": hit.end_line,
            "citation": hit.citation,
            "collection": hit.collection,
            "score": hit.score,
        }
    )
    if hit.relevance is not None:
        kept["relevance"] = hit.relevance
    return kept


def search_hits(
    query: str,
    settings: Any,
    k: int,
    mode: str,
    where: Mapping[str, Any] | None,
    embedder: Any,
) -> list[Hit]:
    from .. import api

    return api.search(query, settings, k=k, where=where, embedder=embedder, mode=mode)


__all__ = ["BOOKKEEPING", "hit_metadata", "search_hits"]
