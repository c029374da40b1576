"""The retrieval shell: filters, dense and keyword search, fusion, reranking and ordering.

`Retriever.gather` runs each ranked list once per request (dense through Chroma, keyword
through the SQLite FTS5 index), for every collection asked for, under the same filters;
`Retriever.rank` turns those lists into the hits of one mode. `search` is the two together;
the evaluation calls `rank` three times on one `gather`, so it measures what `search` does.

Which keyword index a collection uses: the state's own index when it covers the collection
(same row count as the collection, and no local source of it mid-run); otherwise a mirror
rebuilt from the collection's documents (`mirror.py`), refreshed when its count differs
from the collection's or it is older than `mirror_ttl_s`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..embed import Embedder, follow_stored
from ..errors import EmbeddingError, NotFound
from ..records import Hit
from .bm25 import Condition, KeywordIndex
from .dense import dense_search, merge_by_score
from .filters import Filters, build_where, local_sql, match_paths, where_to_sql
from .fuse import Fusion, Ranked, collapse_per_doc, fuse, group_by, sort_by_date
from .mirror import KeywordMirror
from .rerank import DEFAULT_DEPTH, Reranker, rerank

if TYPE_CHECKING:
    from ..store.chroma import Collection, Store

log = logging.getLogger(__name__)

MODES = ("hybrid", "dense", "keyword")
#: Fusion chosen on SciFact's 809 training claims (benchmarks/retrieval.py --sweep): the sum
#: of z-normalised scores, equal weights, nDCG@10 0.735, against 0.716 for RRF (k = 60),
#: 0.732 for min-max, 0.688 for keyword and 0.670 for dense alone.
DEFAULT_FUSION = Fusion("zscore")
#: Depth of each ranked list; the same as `eval` uses, so it measures what search returns.
MIN_CANDIDATES = 200


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    mode: str = "hybrid"
    k: int = 10
    filters: Filters = field(default_factory=Filters)
    collections: tuple[str, ...] = ()
    all_collections: bool = False
    per_doc: bool = False
    sort: str = "rank"  # or "date"
    group_by: str | None = None
    candidates: int | None = None  # depth of each ranked list (default max(4k, 200))
    fusion: Fusion | None = None
    rerank: bool = True  # when a reranker is configured

    @property
    def depth(self) -> int:
        return self.candidates or max(4 * self.k, MIN_CANDIDATES)


@dataclass(frozen=True, slots=True)
class Gathered:
    """The ranked lists of one request, before fusion."""

    dense: tuple[Hit, ...]
    keyword: tuple[Hit, ...]
    collections: tuple[str, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchResult:
    query: str
    mode: str
    collections: tuple[str, ...]
    filters: Filters
    hits: tuple[Hit, ...]
    groups: tuple[tuple[str, tuple[int, ...]], ...] = ()  # group value -> hit indexes
    group_field: str | None = None
    reranked: bool = False
    warnings: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "query": self.query,
            "mode": self.mode,
            "collections": list(self.collections),
            "filters": self.filters.as_json(),
            "reranked": self.reranked,
            "hits": [h.as_json() for h in self.hits],
        }
        if self.group_field:
            out["group_by"] = self.group_field
            out["groups"] = [{"value": v, "hits": list(i)} for v, i in self.groups]
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


class Retriever:
    """Searches one store; local keyword state and the mirror are passed in."""

    def __init__(
        self,
        store: Store,
        local_index: KeywordIndex | None,
        dirty_collections: set[str],
        open_mirror: Callable[[], KeywordMirror],
        embedder: Callable[[], Embedder],
        default_collections: Callable[[], Sequence[str]],
        clock_ns: Callable[[], int],
        reranker: Reranker | None = None,
        mirror_ttl_s: float = 300.0,
        heading_weight: float = 1.0,
    ) -> None:
        self.store = store
        self.local_index = local_index
        self.dirty = dirty_collections
        self._open_mirror = open_mirror
        self._mirror: KeywordMirror | None = None
        self._mirror_index: KeywordIndex | None = None
        self._embedder_factory = embedder
        self._embedder: Embedder | None = None
        self._vectors: dict[str, list[float]] = {}
        self._default_collections = default_collections
        self.clock_ns = clock_ns
        self.reranker = reranker
        self.mirror_ttl_ns = int(mirror_ttl_s * 1e9)
        self.heading_weight = heading_weight
        self._collections: dict[str, Collection] = {}
        self._indexes: dict[str, KeywordIndex] = {}

    def close(self) -> None:
        if self._mirror is not None:
            self._mirror.close()

    # -- resources ------------------------------------------------------------------------

    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._embedder_factory()
        return self._embedder

    def collection(self, name: str) -> Collection:
        if name not in self._collections:
            self._collections[name] = self.store.collection(name, create=False)
        return self._collections[name]

    def collection_names(self, request: SearchRequest) -> tuple[str, ...]:
        if request.all_collections:
            names = tuple(self.store.list_collections())
            if not names:
                raise NotFound("the store has no collections yet; run `chromasync ingest`")
            return names
        return tuple(dict.fromkeys(request.collections)) or tuple(self._default_collections())

    def keyword_index(self, name: str) -> KeywordIndex:
        """The local index when it covers the collection, else the synced mirror."""
        if name in self._indexes:
            return self._indexes[name]
        count = self.collection(name).count()
        local = self.local_index
        if local is not None and name not in self.dirty and local.count(name) == count:
            index = local
        else:
            index = self._synced_mirror(name, count)
        self._indexes[name] = index
        return index

    def _synced_mirror(self, name: str, count: int) -> KeywordIndex:
        if self._mirror is None:
            self._mirror = self._open_mirror()
            self._mirror_index = KeywordIndex(self._mirror.db, self.heading_weight)
        assert self._mirror_index is not None
        last = self._mirror.last_sync(name)
        now = self.clock_ns()
        stale = (
            last is None
            or now - last[0] > self.mirror_ttl_ns
            or self._mirror_index.count(name) != count
        )
        if stale:
            log.info("keyword index does not cover collection %r; syncing the mirror", name)
            self._mirror.sync(self.collection(name), now)
        return self._mirror_index

    def query_vector(self, query: str) -> list[float] | str:
        """The query's vector; or the text itself when the store embeds (`server` provider)."""
        if self.embeds_in_store:
            return query
        if query not in self._vectors:
            self._vectors[query] = list(self.embedder().embed_query(query))
        return self._vectors[query]

    @property
    def embeds_in_store(self) -> bool:
        return bool(getattr(self.embedder(), "embeds_in_store", False))

    def dense_collection(self, name: str) -> Collection:
        """The collection to query by meaning (opened with its own function for `server`)."""
        if not self.embeds_in_store:
            return self.collection(name)
        key = "\0server:" + name
        if key not in self._collections:
            self._collections[key] = self.store.collection(name, provider="server")
        return self._collections[key]

    # -- search -----------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> SearchResult:
        if request.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        gathered = self.gather(request, (request.mode,))
        hits = self.rank(gathered, request.mode, request.fusion)
        reranked = False
        if request.rerank and self.reranker is not None:
            hits = rerank(request.query, hits, self.reranker, max(DEFAULT_DEPTH, request.k))
            reranked = True
        return self.present(request, gathered, hits, reranked)

    def gather(self, request: SearchRequest, modes: Sequence[str]) -> Gathered:
        """Dense and keyword lists for `request` across its collections, filters applied."""
        names = self.collection_names(request)
        want_dense = any(m in ("dense", "hybrid") for m in modes)
        want_keyword = any(m in ("keyword", "hybrid") for m in modes)
        depth = request.depth
        dense_lists: list[list[Hit]] = []
        keyword_lists: list[list[Hit]] = []
        warnings: list[str] = []
        for name in names:
            collection = self.collection(name)
            where, condition, ids = self._restrict(name, request.filters)
            if where is _NOTHING:
                continue
            if want_dense:
                try:
                    self._check_model(collection)
                    searched = self.dense_collection(name)
                except EmbeddingError as exc:
                    if not request.all_collections:
                        raise
                    warnings.append(str(exc))
                else:
                    vector = self.query_vector(request.query)
                    dense_lists.append(dense_search(searched, vector, depth, where, ids))
            if want_keyword:
                index = self.keyword_index(name)
                keyword_lists.append(index.search(name, request.query, depth, condition))
        return Gathered(
            dense=tuple(merge_by_score(dense_lists, depth * len(names))),
            keyword=tuple(merge_by_score(keyword_lists, depth * len(names))),
            collections=names,
            warnings=tuple(warnings),
        )

    def _check_model(self, collection: Collection) -> None:
        embedder = self.embedder()
        if not self.embeds_in_store:  # `server`: the store checks its own function
            if follow_stored(embedder, collection.model_id):
                self._vectors.clear()  # query vectors of the variant before
            collection.check_model(embedder.model_id, embedder.dimension)

    def _restrict(self, name: str, filters: Filters) -> tuple[Any, Condition, list[str] | None]:
        """(Chroma where, SQL condition, candidate ids) of `filters` for one collection."""
        paths = None
        if filters.paths:
            paths = match_paths(self.keyword_index(name).paths(name), filters.paths)
            if not paths:
                return _NOTHING, Condition(), None
        where = build_where(filters, paths)
        sql, params = where_to_sql(where)
        condition = Condition(sql, tuple(params))
        ids = None
        if filters.phrases or filters.matches:
            local, local_params = local_sql(filters)
            condition = condition.and_(Condition(local, tuple(local_params)))
            ids = self.keyword_index(name).candidate_ids(name, condition)
            if not ids:
                return _NOTHING, condition, None
        return where, condition, ids

    def rank(self, gathered: Gathered, mode: str, fusion: Fusion | None = None) -> list[Hit]:
        """The hits of one mode, best first, each with its rank in every list it is in."""
        dense_ranks = _ranks(gathered.dense)
        keyword_ranks = _ranks(gathered.keyword)
        if mode == "dense":
            chosen: list[tuple[tuple[str, str], float]] = [
                (_key(h), h.score) for h in gathered.dense
            ]
        elif mode == "keyword":
            chosen = [(_key(h), h.score) for h in gathered.keyword]
        else:
            chosen = fuse(
                [
                    Ranked("dense", tuple((_key(h), h.score) for h in gathered.dense)),
                    Ranked("keyword", tuple((_key(h), h.score) for h in gathered.keyword)),
                ],
                fusion or DEFAULT_FUSION,
            )
        by_key = {_key(h): h for h in (*gathered.keyword, *gathered.dense)}
        out = []
        for key, score in chosen:
            ranks = {}
            if key in dense_ranks:
                ranks["dense"] = dense_ranks[key]
            if key in keyword_ranks:
                ranks["keyword"] = keyword_ranks[key]
            out.append(replace(by_key[key], score=score, ranks=ranks))
        return out

    def present(
        self, request: SearchRequest, gathered: Gathered, hits: Sequence[Hit], reranked: bool
    ) -> SearchResult:
        """Per-doc collapse, the top k, then date order and groups."""
        if request.per_doc:
            hits = [
                replace(hit, collapsed=n)
                for hit, n in collapse_per_doc(hits, lambda h: (h.collection, h.source, h.path))
            ]
        top = list(hits[: request.k])
        if request.sort == "date":
            top = sort_by_date(top, lambda h: _date_of(h, request.filters.date_fields))
        groups: tuple[tuple[str, tuple[int, ...]], ...] = ()
        if request.group_by:
            field_name = request.group_by
            grouped = group_by(list(range(len(top))), lambda i: _group_value(top[i], field_name))
            order = [i for _, members in grouped for i in members]
            top = [top[i] for i in order]
            position = 0
            regrouped = []
            for value, members in grouped:
                regrouped.append((value, tuple(range(position, position + len(members)))))
                position += len(members)
            groups = tuple(regrouped)
        return SearchResult(
            query=request.query,
            mode=request.mode,
            collections=gathered.collections,
            filters=request.filters,
            hits=tuple(top),
            groups=groups,
            group_field=request.group_by,
            reranked=reranked,
            warnings=gathered.warnings,
        )


_NOTHING: Any = object()


def _key(hit: Hit) -> tuple[str, str]:
    return (hit.collection, hit.id)


def _ranks(hits: Sequence[Hit]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for rank, hit in enumerate(hits, 1):
        out.setdefault(_key(hit), rank)
    return out


def _date_of(hit: Hit, fields: Sequence[str]) -> float | None:
    for name in fields:
        value = hit.metadata.get(f"{name}_ts")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _group_value(hit: Hit, field_name: str) -> str:
    value: Any = hit.metadata.get(field_name)
    if value is None:
        value = getattr(hit, field_name, None) if field_name in ("collection",) else None
    if value is None or value == "":
        return "(none)"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


__all__ = ["MODES", "Gathered", "Retriever", "SearchRequest", "SearchResult"]
