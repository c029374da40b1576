"""Retrieval: filters, dense and keyword (BM25) search, fusion, reranking, evaluation.

filters.py    user filters -> a Chroma `where` and the same condition in SQL (pure)
dense.py      Chroma nearest neighbours under a filter
bm25.py       BM25 over the SQLite FTS5 keyword index
mirror.py     a keyword index rebuilt from a collection no local ingest covers
fuse.py       rank fusion, per-document collapse, date order, groups (pure)
results.py    request, ranked lists, result; ranking one mode and presenting it (pure)
rerank.py     optional local cross-encoder reranking
highlight.py  which words of a hit matched (pure)
similar.py    nearest documents to a file (pure aggregation)
evaluate.py   nDCG, recall, MRR over judged queries (pure)
engine.py     the shell that runs a search request end to end

The names below load on first use, so that `retrieve.bm25` and the pure modules can be
imported without the engine (and its store and model).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing`'s: the fast path imports `retrieve.options` (no typing)
if TYPE_CHECKING:
    from typing import Any

    from .engine import MODES, Gathered, Retriever, SearchRequest, SearchResult
    from .filters import Filters
    from .fuse import Fusion

_LAZY = {
    "MODES": "engine",
    "Gathered": "results",
    "Retriever": "engine",
    "SearchRequest": "results",
    "SearchResult": "results",
    "Filters": "filters",
    "Fusion": "fuse",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


__all__ = ["MODES", "Filters", "Fusion", "Gathered", "Retriever", "SearchRequest", "SearchResult"]
