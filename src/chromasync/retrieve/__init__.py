"""Retrieval: filters, dense and keyword (BM25) search, fusion, reranking, evaluation.

Design notes: docs/internals.md, `retrieve/__init__.py`.
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
