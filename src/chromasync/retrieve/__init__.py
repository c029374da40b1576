"""Retrieval: filters, dense and keyword (BM25) search, fusion, reranking, evaluation.

filters.py    user filters -> a Chroma `where` and the same condition in SQL (pure)
dense.py      Chroma nearest neighbours under a filter
bm25.py       BM25 over the SQLite FTS5 keyword index
mirror.py     a keyword index rebuilt from a collection no local ingest covers
fuse.py       rank fusion, per-document collapse, date order, groups (pure)
rerank.py     optional local cross-encoder reranking
highlight.py  which words of a hit matched (pure)
similar.py    nearest documents to a file (pure aggregation)
evaluate.py   nDCG, recall, MRR over judged queries (pure)
engine.py     the shell that runs a search request end to end
"""

from __future__ import annotations

from .engine import MODES, Gathered, Retriever, SearchRequest, SearchResult
from .filters import Filters
from .fuse import Fusion

__all__ = ["MODES", "Filters", "Fusion", "Gathered", "Retriever", "SearchRequest", "SearchResult"]
