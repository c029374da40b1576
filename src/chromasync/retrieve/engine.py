"""The retrieval shell: filters, dense and keyword search, fusion, reranking and ordering.

Design notes: docs/internals.md, `retrieve/engine.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..embed import Embedder
from ..errors import EmbeddingError, NotFound
from ..records import Hit
from .bm25 import Condition, KeywordIndex
from .dense import dense_search, merge_by_score
from .filters import Filters, build_where, local_sql, match_paths, where_to_sql
from .links import stored_targets, target_matcher
from .mirror import KeywordMirror
from .rerank import DEFAULT_DEPTH, Reranker, rerank
from .results import (
    DEFAULT_FUSION,
    FEEDBACK_FUSION,
    MIN_CANDIDATES,
    Gathered,
    SearchRequest,
    SearchResult,
    collapse_copies,
    present,
    rank_hits,
)
from .rounds import Asked, second_round

if TYPE_CHECKING:
    from ..store.chroma import Collection, Store

log = logging.getLogger(__name__)

MODES = ("hybrid", "dense", "keyword")


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
        clean_at: int | None = None,
    ) -> None:
        """`clean_at`: the local index's `version` when `dirty_collections` was read."""
        self.store = store
        self.local_index = local_index
        self.dirty = dirty_collections
        self.clean_at = clean_at
        self._open_mirror = open_mirror
        self._mirror: KeywordMirror | None = None
        self._mirror_index: KeywordIndex | None = None
        self._embedder_factory = embedder
        self._embedder: Embedder | None = None
        self._vectors: dict[str, list[float]] = {}
        self._default_collections = default_collections
        self._defaults: tuple[str, ...] | None = None
        self.clock_ns = clock_ns
        self.reranker = reranker
        self.mirror_ttl_ns = int(mirror_ttl_s * 1e9)
        self.heading_weight = heading_weight
        self._collections: dict[str, Collection] = {}
        self._indexes: dict[str, KeywordIndex] = {}

    def close(self) -> None:
        if self._mirror is not None:
            self._mirror.close()

    def next_request(self, store_changes: bool) -> None:
        """Before a request on a retriever kept open (`session.WarmSessions`): forget the
        query vectors (the owner's embedder keeps its own bounded cache) and, when others may
        change the store meanwhile (`store_changes`: a Chroma server), the collections' handles
        and counts and the default collections, which are read again."""
        self._vectors.clear()
        if store_changes:
            self._collections.clear()
            self._indexes.clear()
            self._defaults = None

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
        if request.collections:
            return tuple(dict.fromkeys(request.collections))
        if self._defaults is None:
            self._defaults = tuple(self._default_collections())
        return self._defaults

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

    def known_sources(self) -> set[str]:
        """The source labels of the local keyword index and of each index searched so far."""
        indexes = {id(i): i for i in (self.local_index, *self._indexes.values()) if i}
        return {label for index in indexes.values() for label in index.sources()}

    def query_vector(self, query: str) -> list[float] | str:
        """The query's vector; or the text itself when the store embeds (`server` provider)."""
        if self.embeds_in_store:
            return query
        if query not in self._vectors:
            self._vectors[query] = list(self.embedder().embed_query(query))
        return self._vectors[query]

    @property
    def embeds_in_store(self) -> bool:
        return self.embedder().embeds_in_store

    def dense_collection(self, name: str) -> Collection:
        """The collection to query by meaning (opened with its own function for `server`)."""
        if not self.embeds_in_store:
            return self.collection(name)
        key = "\0server:" + name
        if key not in self._collections:
            self._collections[key] = self.store.collection(name, provider="server")
        return self._collections[key]

    # -- search -----------------------------------------------------------------------------

    def search(self, request: SearchRequest, full_fetch: bool = False) -> SearchResult:
        """The result of `request`. `full_fetch`: read every candidate's text and metadata
        even where only the returned hits need them (the same result, slower)."""
        if request.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        reranker = self.reranker if request.rerank else None
        lean = not full_fetch and reranker is None and not _reads_candidates(request)
        only = self.latest_ids(request) if request.latest is not None else None
        gathered = self.gather(request, (request.mode,), fields=not lean, only=only)
        # a lean search shows a prefix of the ranking: its first k (the relevance floor
        # keeps a prefix too), so only those become hits; when copies of one text in
        # several files fold (`collapse_copies`), the window's next hits (2k in all) are read
        limit = 2 * request.k if lean else None
        hits = rank_hits(gathered, request.mode, request.fusion or DEFAULT_FUSION, limit)
        reranked = False
        if reranker is not None:
            hits = rerank(request.query, hits, reranker, max(DEFAULT_DEPTH, request.k))
            reranked = True
        if lean:
            filled = self._fill(hits[: request.k], gathered.keyword_versions)
            copies = filled is not None and len(collapse_copies(filled)) < len(filled)
            if copies and len(hits) > request.k:  # copies folded: read the whole window
                filled = self._fill(hits, gathered.keyword_versions)
            if filled is None:  # a chunk went or changed between the query and the read
                return self.search(request, full_fetch=True)
            hits = list(filled)
        return present(request, gathered, hits, reranked)

    def _fill(
        self, hits: Sequence[Hit], versions: Sequence[tuple[str, int]]
    ) -> tuple[Hit, ...] | None:
        """`hits` with their text and metadata, read from the keyword index of their list
        (`versions`), in one read per index, and with one `get` per collection for those
        from a dense list (whose fields win, as in `rank_hits`) unless the state's own index
        covers a local store (`_holds_fields`); None if one is no longer stored or a keyword
        index changed since its list was read."""
        dense: dict[str, list[str]] = {}
        keyword: dict[str, list[str]] = {}
        read_at = dict(versions)
        for hit in hits:
            name = hit.collection
            from_index = "dense" not in hit.ranks or self._holds_fields(name, read_at.get(name))
            (keyword if from_index else dense).setdefault(name, []).append(hit.id)
        stored: dict[tuple[str, str], Hit] = {}
        for name, ids in dense.items():
            for record in self.collection(name).get(ids):
                stored[(name, record.id)] = Hit.from_metadata(
                    record.id, record.metadata, record.document or "", 0.0, name
                )
        for name, ids in keyword.items():
            index = self._indexes.get(name)
            if index is None or name not in read_at:
                return None
            for found in index.records(name, ids):
                stored[(name, found.id)] = found
            if index.version() != read_at[name]:
                return None
        out = []
        for hit in hits:
            full = stored.get((hit.collection, hit.id))
            if full is None:
                return None
            out.append(replace(hit, **{name: getattr(full, name) for name in _FILLED}))
        return tuple(out)

    def _holds_fields(self, name: str, version: int | None) -> bool:
        """Whether the state's own keyword index covers collection `name` of a local store,
        which only this data dir's ingests write (a Chroma server: others too), unchanged
        since it was seen clean (its list read at `version`, no ingest begun since): it
        then holds each record's text and metadata as the collection does."""
        index = self._indexes.get(name)
        return (
            self.store.target is None
            and index is not None
            and index is self.local_index
            and version is not None
            and version == self.clean_at
        )

    def latest_ids(self, request: SearchRequest) -> dict[str, list[str]]:
        """Per collection, the chunk ids of the `request.latest` newest documents that pass
        its filters, by their date field (the first of `date_fields` a document has; an
        undated document is never among them), across all its collections."""
        assert request.latest is not None
        found: list[tuple[float, str, str, str]] = []
        conditions: dict[str, Condition] = {}
        for name in self.collection_names(request):
            where, condition, ids = self._restrict(name, request.filters)
            if where is _NOTHING:
                continue
            if ids is not None:
                condition = condition.and_(_id_condition(ids))
            conditions[name] = condition
            index = self.keyword_index(name)
            newest = index.newest(name, condition, request.filters.date_fields, request.latest)
            found += [(-ts, name, source, path) for ts, source, path in newest]
        out: dict[str, list[str]] = {}
        for _, name, source, path in sorted(found)[: request.latest]:
            ids = self.keyword_index(name).document_ids(name, source, path, conditions[name])
            out.setdefault(name, []).extend(ids)
        return out

    def gather(
        self,
        request: SearchRequest,
        modes: Sequence[str],
        fields: bool = True,
        only: dict[str, list[str]] | None = None,
    ) -> Gathered:
        """Dense and keyword lists for `request` across its collections, filters applied.

        `fields` False: the hits carry ids and scores only (see `Retriever.search`).
        `only`: the chunk ids each collection may return (`latest_ids`), none elsewhere.
        """
        names = self.collection_names(request)
        want_dense = any(m in ("dense", "hybrid") for m in modes)
        want_keyword = any(m in ("keyword", "hybrid") for m in modes)
        depth = request.depth
        dense_lists: list[Sequence[Hit]] = []
        keyword_lists: list[Sequence[Hit]] = []
        warnings: list[str] = []
        plan: list[tuple[str, str, str, tuple[Any, ...]]] = []
        versions: list[tuple[str, int]] = []
        asked: list[Asked] = []  # what each collection was asked, for a second round
        for name in names:
            collection = self.collection(name)
            where, condition, ids = self._restrict(name, request.filters)
            if only is not None and where is not _NOTHING:
                allowed = only.get(name, [])
                if ids is not None:
                    kept = set(ids)
                    allowed = [i for i in allowed if i in kept]
                ids = allowed
                if not ids:
                    where = _NOTHING
                else:
                    condition = condition.and_(_id_condition(ids))
            if where is _NOTHING:
                plan.append((name, "none", condition.sql, condition.params))
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
                    dense_lists.append(
                        dense_search(searched, vector, depth, where, ids, fields=fields)
                    )
                    asked.append(Asked(name, "dense", where, ids, condition))
            if want_keyword:
                index = self.keyword_index(name)
                if not fields:
                    versions.append((name, index.version()))
                keyword_lists.append(
                    index.search(name, request.query, depth, condition, fields=fields)
                )
                made = "state" if index is self.local_index else "mirror"
                plan.append((name, made, condition.sql, condition.params))
                asked.append(Asked(name, "keyword", where, ids, condition))
        dense = merge_by_score(dense_lists, depth * len(names))
        keyword = merge_by_score(keyword_lists, depth * len(names))
        feedback = (request.fusion or DEFAULT_FUSION).feedback
        fed = None
        if feedback is not None and "hybrid" in modes and (dense or keyword):
            fed = second_round(self, request, feedback, dense, keyword, asked, fields)
        gathered = Gathered(
            dense=dense,
            keyword=keyword,
            collections=names,
            warnings=tuple(warnings),
            keyword_plan=tuple(plan),
            keyword_versions=tuple(versions),
            fed=fed,
        )
        if request.filters.phrases and only is None:  # after the second round: what passed
            return self._unphrased(request, gathered, modes, fields)
        return gathered

    def _unphrased(
        self, request: SearchRequest, gathered: Gathered, modes: Sequence[str], fields: bool
    ) -> Gathered:
        """`--phrase` filters, it does not rank: `gathered` (what holds the phrase) with the
        lists asked again without it, so that every candidate is fused and scaled among the
        query's whole ranking, and `allowed` (the keys holding it) choosing the hits."""
        depth = request.depth
        passing: set[tuple[str, str]] = set()
        dense: list[Hit] = []
        keyword: list[Hit] = []
        for name in gathered.collections:
            where, _, ids = self._restrict(name, request.filters)
            if where is _NOTHING or ids is None:
                continue
            passing.update((name, i) for i in ids)
            where, condition, ids = self._restrict(name, replace(request.filters, phrases=()))
            if any(m in ("dense", "hybrid") for m in modes):
                try:
                    self._check_model(self.collection(name))
                except EmbeddingError:
                    continue  # a collection of another model (warned): not searched at all
                vector = self.query_vector(request.query)
                searched = self.dense_collection(name)
                dense += dense_search(searched, vector, depth, where, ids, fields=fields)
            if any(m in ("keyword", "hybrid") for m in modes):
                index = self.keyword_index(name)
                keyword += index.search(name, request.query, depth, condition, fields=fields)
        wide = depth * len(gathered.collections)
        return replace(
            gathered,
            dense=_with_context(gathered.dense, merge_by_score([dense], wide)),
            keyword=_with_context(gathered.keyword, merge_by_score([keyword], wide)),
            allowed=frozenset(passing),
        )

    def _check_model(self, collection: Collection) -> None:
        embedder = self.embedder()
        if not self.embeds_in_store:  # `server`: the store checks its own function
            if embedder.follow(collection.model_id):
                self._vectors.clear()  # query vectors of the variant before
            collection.check_model(embedder.model_id, embedder.dimension)

    def _restrict(self, name: str, filters: Filters) -> tuple[Any, Condition, list[str] | None]:
        """(Chroma where, SQL condition, candidate ids) of `filters` for one collection."""
        paths = None
        if filters.paths:
            paths = match_paths(self.keyword_index(name).paths(name), filters.paths)
            if not paths:
                return _NOTHING, Condition(), None
        links: list[list[str]] = []
        for target in filters.links_to:
            found = stored_targets(self.keyword_index(name), name, target_matcher(target))
            if not found:
                return _NOTHING, Condition(), None
            links.append(found)
        where = build_where(filters, paths, links)
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


_NOTHING: Any = object()
#: The fields `Retriever._fill` reads for a hit of a lean list.
_FILLED = ("path", "source", "heading", "start_line", "end_line", "text", "metadata")


def _with_context(hits: Sequence[Hit], context: Sequence[Hit]) -> tuple[Hit, ...]:
    """A filtered list with the unfiltered one's hits it lacks, best score first: every hit
    that passed stays (none is cut for the context's sake)."""
    seen = {(h.collection, h.id) for h in hits}
    extra = [h for h in context if (h.collection, h.id) not in seen]
    return tuple(sorted((*hits, *extra), key=lambda h: -h.score))


def _id_condition(ids: Sequence[str]) -> Condition:
    """`c.id IN (...)` for the keyword index (`latest`: at most MAX_LATEST documents)."""
    return Condition(f"c.id IN ({', '.join('?' * len(ids))})", tuple(ids))


def _reads_candidates(request: SearchRequest) -> bool:
    """Whether presenting `request` reads the ranked hits' text or metadata (per-document
    collapse by path, date order, groups): then every candidate is fetched whole."""
    return (
        request.per_doc
        or request.sort == "date"
        or bool(request.group_by)
        or request.latest is not None
    )


__all__ = [
    "DEFAULT_FUSION",
    "FEEDBACK_FUSION",
    "MIN_CANDIDATES",
    "MODES",
    "Gathered",
    "Retriever",
    "SearchRequest",
    "SearchResult",
]
