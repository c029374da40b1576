"""The retrieval commands beyond one search: evaluation over judged queries, the
documents similar to a file, and reverse links (`links`). All run on a `Retriever` the
caller opened (see `api`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from ..chunk import Budget, chunk_document
from ..corpus.read import read_file
from ..embed import Embedder
from ..embed.tokens import default_token_meter, load_token_meter
from ..errors import ChromasyncError, ConfigError, NotFound, SourceError
from ..metakeys import FILE_HASH_KEY
from ..records import FileStat, Hit, Progress
from . import evaluate as ev
from .engine import Retriever, SearchRequest, SearchResult
from .fuse import grouped
from .links import (
    LinkingChunk,
    LinksReport,
    file_links,
    linking_chunks,
    target_matcher,
)
from .request import SearchArgs, build_request
from .similar import SimilarDoc, aggregate, nearest_sources
from .suggest import DEPTH as SUGGEST_DEPTH
from .suggest import GroupSuggestion, group_key, suggest_groups

#: The searches `eval` measures besides the modes: hybrid with pseudo-relevance feedback
#: (`search --feedback`), and hybrid reranked (a reranker configured).
FEEDBACK_VARIANT = "hybrid+feedback"
RERANK_VARIANT = "hybrid+rerank"
#: What eval reports per search: nDCG@k (binary and graded), recall@k and MRR@k.
EVAL_METRICS = ("ndcg", "ndcg_graded", "recall", "mrr")


@dataclass(frozen=True, slots=True)
class EvalReport:
    queries: int
    k: int
    modes: Mapping[str, Mapping[str, float]]  # mode -> metric -> mean
    per_query: Mapping[str, Sequence[Mapping[str, float]]]  # mode -> one row per query
    graded: bool = False  # some query has graded judgements
    ids: tuple[str, ...] = ()  # the queries' ids, in order
    #: mode -> per query, the paths of the documents its search returned, best first
    ranked: Mapping[str, Sequence[tuple[str, ...]]] = field(default_factory=dict)

    @property
    def headline(self) -> str:
        """The nDCG the comparisons use: graded when the judgements are."""
        return "ndcg_graded" if self.graded else "ndcg"

    def versus(self) -> dict[str, dict[str, int]]:
        """Per-query wins, losses and ties of hybrid against each single mode, and of each
        measured kind of hybrid (`hybrid+feedback`, `hybrid+rerank`) against hybrid (nDCG@k,
        graded when the judgements are), e.g. {"hybrid vs keyword": {"wins": 3, ...}}."""
        hybrid = self.per_query.get("hybrid")
        if hybrid is None:
            return {}
        out = {}
        for mode, rows in self.per_query.items():
            if mode in ("dense", "keyword"):
                out[f"hybrid vs {mode}"] = ev.versus(hybrid, rows, self.headline)
            elif mode.startswith("hybrid+"):
                out[f"{mode} vs hybrid"] = ev.versus(rows, hybrid, self.headline)
        return out

    def questions(self) -> list[dict[str, object]]:
        """One row per query: its id, each search's nDCG@k (the headline) and documents, and
        whether each other search won, lost or tied against plain hybrid on it."""
        out: list[dict[str, object]] = []
        for i, query_id in enumerate(self.ids):
            scores = {m: rows[i][self.headline] for m, rows in self.per_query.items()}
            row: dict[str, object] = {"id": query_id, self.headline: scores}
            row["ranked"] = {m: list(paths[i]) for m, paths in self.ranked.items()}
            if "hybrid" in scores:
                row["vs_hybrid"] = {
                    m: _outcome(s - scores["hybrid"]) for m, s in scores.items() if m != "hybrid"
                }
            out.append(row)
        return out

    def as_json(self) -> dict[str, object]:
        return {
            "queries": self.queries,
            "k": self.k,
            "graded": self.graded,
            "modes": {m: dict(v) for m, v in self.modes.items()},
            "versus": self.versus(),
            "per_query": self.questions(),
        }


def _outcome(gap: float) -> str:
    return "win" if gap > 1e-9 else "loss" if gap < -1e-9 else "tie"


def eval_searches(
    modes: Sequence[str], *, feedback: bool = False, rerank: bool = False
) -> dict[str, dict[str, Any]]:
    """The searches eval measures, by name, as the options each sets on a question's
    `SearchArgs`: each mode without reranking (`--no-rerank`); with `feedback`, hybrid with
    feedback; with `rerank` (a reranker configured), hybrid reranked."""
    out: dict[str, dict[str, Any]] = {m: {"mode": m, "rerank": False} for m in modes}
    if feedback:
        out[FEEDBACK_VARIANT] = {"mode": "hybrid", "feedback": True, "rerank": False}
    if rerank:
        out[RERANK_VARIANT] = {"mode": "hybrid", "rerank": True}
    return out


def run_evaluation(
    search: Callable[[SearchRequest], SearchResult],
    queries: Sequence[ev.EvalQuery],
    args: SearchArgs,
    searches: Mapping[str, Mapping[str, Any]],
    *,
    date_fields: Sequence[str] = (),
    progress: Progress | None = None,
) -> EvalReport:
    """nDCG@k, recall@k and MRR@k (k = `args.k`) of each search in `searches` over judged
    queries.

    Each query is searched as `search --per-doc` searches it: `args` (its filters, k and
    collections) with the query and the search's options set, made a request by the
    surfaces' `build_request` and run by `search` (the function the search command runs),
    so each figure scores exactly the documents that search returns.
    """
    rows: dict[str, list[Mapping[str, float]]] = {}
    ranked: dict[str, list[tuple[str, ...]]] = {}
    for done, item in enumerate(queries, 1):
        for name, options in searches.items():
            asked = replace(args, query=item.query, per_doc=True, **options)
            hits = search(build_request(asked, date_fields)).hits
            scored = ev.score_query(hits, item, args.k)
            rows.setdefault(name, []).append({m: scored[m] for m in EVAL_METRICS})
            ranked.setdefault(name, []).append(tuple(h.path for h in hits))
        if progress:
            progress("eval", done, len(queries))
    return EvalReport(
        queries=len(queries),
        k=args.k,
        modes={name: ev.mean_metrics(r, EVAL_METRICS) for name, r in rows.items()},
        per_query=rows,
        graded=any(q.graded for q in queries),
        ids=tuple(q.id for q in queries),
        ranked=ranked,
    )


@dataclass(frozen=True, slots=True)
class SimilarResult:
    path: str
    chunks: int
    threshold: float
    documents: tuple[SimilarDoc, ...]
    excluded: str | None  # "source:path" of the file itself, when it is indexed
    #: With `group_by` (a field, `source`, `collection` or `path:N`, as `suggest`'s), the
    #: documents come group by group: each group's value and its documents' indexes.
    group_by: str | None = None
    groups: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @property
    def nearest_sources(self) -> list[tuple[str, float, int]]:
        return nearest_sources(self.documents)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "path": self.path,
            "chunks": self.chunks,
            "threshold": self.threshold,
            "excluded": self.excluded,
            "duplicates": sum(d.duplicate for d in self.documents),
            "documents": [d.as_json() for d in self.documents],
            "sources": [
                {"source": s, "best_score": b, "documents": n} for s, b, n in self.nearest_sources
            ],
        }
        if self.group_by:
            out["group_by"] = self.group_by
            out["groups"] = [{"value": v, "documents": list(i)} for v, i in self.groups]
        return out


@dataclass(frozen=True, slots=True)
class _FileNeighbours:
    chunks: int
    weights: list[float]
    neighbours: list[list[Hit]]  # per chunk of the file, its nearest indexed chunks
    exact: list[Hit]  # indexed chunks of a file with the same bytes


def _file_neighbours(
    retriever: Retriever,
    file: Path,
    embedder: Embedder,
    *,
    depth: int,
    collections: Sequence[str],
    all_collections: bool,
    privacy_keys: tuple[str, ...],
) -> _FileNeighbours:
    """Chunk and embed `file` in memory (nothing written) and query each chunk."""
    try:
        info = file.stat()
    except OSError as exc:
        raise NotFound(f"cannot read {file}: {exc.strerror}") from exc
    if not file.is_file():
        raise SourceError(f"{file} is not a regular file")
    stat = FileStat(file.name, str(file), info.st_size, info.st_mtime_ns)
    outcome = read_file(stat, privacy_keys=privacy_keys)
    if outcome.document is None:
        reason = outcome.skip.reason if outcome.skip else "unreadable"
        raise SourceError(f"{file} cannot be compared: it is skipped as {reason!r}")
    tokenizer = embedder.tokenizer_path
    meter = load_token_meter(tokenizer) if tokenizer else default_token_meter()
    chunks = chunk_document(outcome.document, Budget(embedder.max_tokens, meter))
    if not chunks:
        raise SourceError(f"{file} has no text to compare")
    texts = [c.embed_text for c in chunks]
    # `server` provider: the collection's own function embeds each chunk's text.
    vectors: Sequence[Sequence[float] | str] = (
        texts if retriever.embeds_in_store else embedder.embed_documents(texts)
    )
    weights = [float(max(len(c.text), 1)) for c in chunks]
    request = SearchRequest("", collections=tuple(collections), all_collections=all_collections)
    neighbours: list[list[Hit]] = [[] for _ in chunks]
    exact: list[Hit] = []
    for name in retriever.collection_names(request):
        collection = retriever.collection(name)
        try:
            if not retriever.embeds_in_store:
                embedder.follow(collection.model_id)
                collection.check_model(embedder.model_id, embedder.dimension)
            searched = retriever.dense_collection(name)
        except ChromasyncError:
            if not all_collections:
                raise
            continue
        for index, vector in enumerate(vectors):
            neighbours[index] += searched.query(vector, depth)
        digest = outcome.file_hash or ""  # the older name: an index not upgraded yet
        same_bytes = collection.iter_records(
            where={"$or": [{FILE_HASH_KEY: digest}, {"file_hash": digest}]}, documents=True
        )

        exact += [
            Hit.from_metadata(r.id, r.metadata, r.document or "", 1.0, name) for r in same_bytes
        ]
    return _FileNeighbours(len(chunks), weights, neighbours, exact)


def find_similar(
    retriever: Retriever,
    file: Path,
    embedder: Embedder,
    *,
    k: int = 10,
    threshold: float,
    collections: Sequence[str] = (),
    all_collections: bool = False,
    own: tuple[str, str] | None = None,
    privacy_keys: tuple[str, ...] = ("private",),
    group_by: str | None = None,
) -> SimilarResult:
    """The indexed documents nearest to `file`; `own` is (source, path) if it is indexed;
    `group_by`: the documents grouped by that field (`suggest.group_key`)."""
    key = group_key(group_by) if group_by is not None else None  # a bad field: said first
    found = _file_neighbours(
        retriever,
        file,
        embedder,
        depth=max(4 * k, 20),
        collections=collections,
        all_collections=all_collections,
        privacy_keys=privacy_keys,
    )
    result = _similar_result(file, found, own, threshold=threshold, k=k)
    if key is None:
        return result
    documents, groups = grouped(result.documents, lambda doc: key(doc.best))
    return replace(result, documents=tuple(documents), group_by=group_by, groups=groups)


def _similar_result(
    file: Path, found: _FileNeighbours, own: tuple[str, str] | None, *, threshold: float, k: int
) -> SimilarResult:
    def is_self(hit: Hit) -> bool:
        return own is not None and (hit.source, hit.path) == own

    docs = aggregate(
        found.weights,
        found.neighbours,
        exclude=is_self,
        exact=found.exact,
        threshold=threshold,
        k=k,
    )
    return SimilarResult(
        path=str(file),
        chunks=found.chunks,
        threshold=threshold,
        documents=tuple(docs),
        excluded=f"{own[0]}:{own[1]}" if own else None,
    )


@dataclass(frozen=True, slots=True)
class SuggestResult:
    path: str
    group_by: str
    chunks: int
    groups: tuple[GroupSuggestion, ...]
    similar: SimilarResult  # the file's nearest documents and near-duplicates

    def as_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "group_by": self.group_by,
            "chunks": self.chunks,
            "excluded": self.similar.excluded,
            "groups": [g.as_json() for g in self.groups],
            "duplicates": [d.as_json() for d in self.similar.documents if d.duplicate],
            "similar": [d.as_json() for d in self.similar.documents],
        }


def find_suggestions(
    retriever: Retriever,
    file: Path,
    embedder: Embedder,
    *,
    group_by: str,
    k: int = 3,
    similar_k: int = 5,
    threshold: float,
    collections: Sequence[str] = (),
    all_collections: bool = False,
    own: tuple[str, str] | None = None,
    privacy_keys: tuple[str, ...] = ("private",),
) -> SuggestResult:
    """The `k` groups (by `group_by`) nearest to `file`, with its near-duplicates; `own`
    is (source, path) when the file is indexed: its own chunks never vote."""
    key = group_key(group_by)
    found = _file_neighbours(
        retriever,
        file,
        embedder,
        depth=max(4 * similar_k, 2 * SUGGEST_DEPTH),
        collections=collections,
        all_collections=all_collections,
        privacy_keys=privacy_keys,
    )

    def is_self(hit: Hit) -> bool:
        return own is not None and (hit.source, hit.path) == own

    groups = suggest_groups(found.weights, found.neighbours, key, exclude=is_self, k=k)
    return SuggestResult(
        path=str(file),
        group_by=group_by,
        chunks=found.chunks,
        groups=tuple(groups),
        similar=_similar_result(file, found, own, threshold=threshold, k=similar_k),
    )


def find_linking(
    retriever: Retriever,
    target: str,
    *,
    collections: Sequence[str] = (),
    all_collections: bool = False,
    limit: int = 1000,
) -> LinksReport:
    """Every indexed chunk (of the searched collections) that links to `target`."""
    matcher = target_matcher(target)
    request = SearchRequest("", collections=tuple(collections), all_collections=all_collections)
    chunks: list[LinkingChunk] = []
    for name in retriever.collection_names(request):
        chunks += linking_chunks(retriever.keyword_index(name), name, matcher, limit)
    return LinksReport(
        target=target,
        keys=matcher.keys + tuple(p + "*" for p in matcher.prefixes),
        chunks=tuple(chunks[:limit]),
    )


def outgoing_links(
    retriever: Retriever,
    path: str,
    *,
    source: str | None = None,
    exists: Callable[[str, str], bool] = lambda source, target: False,
    collections: Sequence[str] = (),
    all_collections: bool = False,
) -> LinksReport:
    """What the indexed file `path` links to; `exists(source, target)` checks the disk
    for internal targets the index does not hold (a skipped image is not broken)."""
    request = SearchRequest("", collections=tuple(collections), all_collections=all_collections)
    for name in retriever.collection_names(request):
        index = retriever.keyword_index(name)
        rows = index.db.execute(
            "SELECT DISTINCT source FROM chunks WHERE collection = ? AND path = ?",
            (name, path),
        ).fetchall()
        found = sorted(r[0] for r in rows if source is None or r[0] == source)
        if not found:
            continue
        if len(found) > 1:
            raise ConfigError(f"{path!r} is indexed in sources {found}; pass --source")
        label = found[0]
        outgoing = file_links(index, name, label, path, partial(exists, label))
        return LinksReport(
            target=None, keys=(), from_path=path, source=label, outgoing=tuple(outgoing)
        )
    raise NotFound(f"{path!r} is not indexed" + (f" in source {source!r}" if source else ""))


__all__ = [
    "EVAL_METRICS",
    "FEEDBACK_VARIANT",
    "RERANK_VARIANT",
    "EvalReport",
    "SimilarResult",
    "SuggestResult",
    "eval_searches",
    "find_linking",
    "find_similar",
    "find_suggestions",
    "outgoing_links",
    "run_evaluation",
]
