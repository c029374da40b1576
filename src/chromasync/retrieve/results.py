"""A search's request, its ranked lists and its result, and the pure steps between them.

`rank_hits` turns the gathered lists into the hits of one mode (fused for hybrid);
`present` applies the per-document collapse, the top k, date order and groups;
`plain_lines` is the result as the CLI prints it where no terminal reads it. Nothing here
touches Chroma, the model or the disk.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from ..metakeys import CHUNK_HASH_KEY, bookkeeping
from ..records import Hit
from .dense import LeanList
from .feedback import Feedback
from .filters import Filters
from .fuse import Fusion, Ranked, collapse_per_doc, fuse, grouped, sort_by_date
from .relevance import WEAKER_SHARE, relevance_scale, weaker_index

#: Fusion chosen on two corpora, SciFact's 809 training claims and NFCorpus's 324 dev
#: questions (benchmarks/fusion.py, docs/retrieval.md): each list normalised over its
#: documents (min-max of each document's best chunk), dense 0.45 and keyword 0.55. nDCG@10
#: 0.737 on SciFact, graded 0.336 on NFCorpus, against 0.736 and 0.326 for the former
#: z-score sum over chunks, 0.719 and 0.326 for RRF (k = 60), 0.733 and 0.330 for min-max.
DEFAULT_FUSION = Fusion("convex", weights={"dense": 0.45, "keyword": 0.55}, unit="document")
#: Hybrid with pseudo-relevance feedback (opt-in: the `feedback` option, `--feedback`,
#: which `request.build_request` turns into `SearchRequest(fusion=FEEDBACK_FUSION)`):
#: DEFAULT_FUSION's ranking as the first round (its best 3 documents), then the dense and
#: keyword lists asked again toward them (`retrieve.feedback`, `retrieve.rounds`), fused by
#: min-max over documents, dense 0.4 and keyword 0.6. Measured on both corpora
#: (docs/retrieval.md): nDCG@10 0.744 on SciFact and graded 0.355 on NFCorpus against
#: DEFAULT_FUSION's 0.737 and 0.335; not the default because it costs one question of 40 on
#: the hugo-docs code answers (benchmarks/code_answers.py) and doubles a warm search's time.
FEEDBACK_FUSION = Fusion(
    "convex", weights={"dense": 0.4, "keyword": 0.6}, unit="document", feedback=Feedback()
)
#: Depth of each ranked list (a search with k up to 50; deeper for more).
MIN_CANDIDATES = 200

#: How one collection's keyword list was made: (collection, "state" | "mirror" | "none",
#: the SQL condition and its parameters). "none": the filters leave nothing to search.
KeywordPlan = tuple[tuple[str, str, str, tuple[Any, ...]], ...]


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
    min_score: float | None = None  # drop hits whose relevance is below (0-1)
    #: Only the chunks of the N newest documents passing the filters (by date field),
    #: whatever their rank: each one's best chunk first, newest first (see `present`).
    latest: int | None = None

    @property
    def depth(self) -> int:
        return self.candidates or max(4 * self.k, MIN_CANDIDATES)


@dataclass(frozen=True, slots=True)
class Gathered:
    """The ranked lists of one request, before fusion."""

    dense: Sequence[Hit]  # a `LeanList` when read without text and metadata
    keyword: Sequence[Hit]
    collections: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    keyword_plan: KeywordPlan = ()
    #: (collection, the keyword index's `version` just before its list was read), for a
    #: list read without text and metadata: filled in later only if the index is unchanged.
    keyword_versions: tuple[tuple[str, int], ...] = ()
    #: The lists asked again with pseudo-relevance feedback (`Fusion.feedback`), which a
    #: hybrid ranking with feedback fuses instead; None when no second round ran.
    fed: tuple[Sequence[Hit], Sequence[Hit]] | None = None
    #: The (collection, id) keys that pass a filter that does not rank (`--phrase`), when
    #: the lists also hold the candidates without it: ranked and scaled among all, then only
    #: these are hits. None: every key of the lists passes.
    allowed: frozenset[tuple[str, str]] | None = None


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
    #: "date" when the hits are in date order (`sort="date"`), "latest" when they are the N
    #: newest documents' (`latest`): each hit's date is printed beside it (`dated_text`),
    #: and an extractive answer speaks for each document; else "rank".
    order: str = "rank"
    #: Each hit's "open in editor" link (None where it has none) when `editor_uri` is set,
    #: made by the caller's settings (`retrieve.editor.linked`); in the JSON, `open_url`.
    links: tuple[str | None, ...] | None = None
    #: How each keyword list was made (not part of the JSON: for the fast path's snapshot).
    keyword_plan: KeywordPlan = field(default=(), compare=False)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "query": self.query,
            "mode": self.mode,
            "collections": list(self.collections),
            "filters": self.filters.as_json(),
            "reranked": self.reranked,
            "hits": [
                h.as_json() | ({} if self.links is None else {"open_url": self.links[i]})
                for i, h in enumerate(self.hits)
            ],
            # where the "weaker matches" line goes (the terminal, the pipe and the page)
            "weaker_from": weaker_from(self.hits),
        }
        if self.group_field:
            out["group_by"] = self.group_field
            out["groups"] = [{"value": v, "hits": list(i)} for v, i in self.groups]
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.order != "rank":
            out["order"] = self.order
        return out


def rank_hits(
    gathered: Gathered, mode: str, fusion: Fusion = DEFAULT_FUSION, limit: int | None = None
) -> list[Hit]:
    """The hits of one mode, best first, each with its rank and raw score in every list it
    is in, and its `relevance`; only the first `limit` when given (the ranking is of every
    candidate either way: making each hit is the part worth sparing)."""
    dense, keyword = gathered.dense, gathered.keyword
    if mode == "hybrid" and fusion.feedback is not None and gathered.fed is not None:
        dense, keyword = gathered.fed
    (dense_keys, dense_scores), (keyword_keys, keyword_scores) = _keyed(dense), _keyed(keyword)
    if mode == "dense":
        chosen = list(zip(dense_keys, dense_scores, strict=True))
    elif mode == "keyword":
        chosen = list(zip(keyword_keys, keyword_scores, strict=True))
    else:
        chosen = fuse(_lists(dense, keyword), fusion, document_of)
    scores = [s for _, s in chosen]
    if gathered.allowed is not None:  # scored among every candidate, shown if it passed
        values = relevance_scale(scores, mode, fusion.method, MIN_CANDIDATES)
        kept = [(c, v) for c, v in zip(chosen, values, strict=True) if c[0] in gathered.allowed]
        chosen, values = [c for c, _ in kept], [v for _, v in kept]
    else:  # only the hits shown are scaled (every candidate still sets the scale)
        values = relevance_scale(scores, mode, fusion.method, MIN_CANDIDATES, limit)
    shown = chosen if limit is None else chosen[:limit]
    firsts = (
        ("dense", _first_places(dense_keys), dense_scores),
        ("keyword", _first_places(keyword_keys), keyword_scores),
    )
    # each key's hit: at its last place in the dense list, else in the keyword list
    held = {k: (keyword, i) for i, k in enumerate(keyword_keys)}
    held |= {k: (dense, i) for i, k in enumerate(dense_keys)}
    out = []
    for (key, score), value in zip(shown, values[: len(shown)], strict=True):
        ranks = {}
        raw = {}
        for name, places, raw_scores in firsts:
            place = places.get(key)
            if place is not None:
                ranks[name] = place + 1
                raw[name] = round(raw_scores[place], 6)
        hits, place = held[key]
        if isinstance(hits, LeanList):
            hit = hits.hit(place, score=score, ranks=ranks, scores=raw, relevance=value)
        else:
            hit = replace(hits[place], score=score, ranks=ranks, scores=raw, relevance=value)
        out.append(hit)
    return out


def _keyed(hits: Sequence[Hit]) -> tuple[list[tuple[str, str]], list[float]]:
    """A list's (collection, id) keys and scores (a lean list's without making its hits)."""
    if isinstance(hits, LeanList):
        return hits.keys, hits.scores
    return [_key(h) for h in hits], [h.score for h in hits]


def _lists(dense: Sequence[Hit], keyword: Sequence[Hit]) -> list[Ranked[tuple[str, str]]]:
    """The two lists as fusion takes them: (hit key, raw score), best first."""
    return [
        Ranked(name, tuple(zip(*_keyed(hits), strict=True)))
        for name, hits in (("dense", dense), ("keyword", keyword))
    ]


def _first_places(keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Each key's first place in a list (0-based): written last to first, the first wins."""
    return dict(zip(reversed(keys), range(len(keys) - 1, -1, -1), strict=True))


def lead_documents(
    dense: Sequence[Hit], keyword: Sequence[Hit], fusion: Fusion, count: int
) -> list[tuple[float, Hit, list[Hit]]]:
    """The first `count` documents of the lists fused by `fusion` (without feedback), best
    first: (fused score, the lead chunk, every chunk of the document the lists hold)."""
    first = replace(fusion, feedback=None)
    chosen = fuse(_lists(dense, keyword), first, document_of)
    by_key = {_key(h): h for h in (*keyword, *dense)}
    leads: dict[tuple[str, str], tuple[float, Hit]] = {}
    for key, score in chosen:
        if len(leads) == count:
            break
        leads.setdefault(document_of(key), (score, by_key[key]))
    members: dict[tuple[str, str], list[Hit]] = {doc: [] for doc in leads}
    for key, hit in by_key.items():
        doc = document_of(key)
        if doc in members:
            members[doc].append(hit)
    return [(score, lead, members[doc]) for doc, (score, lead) in leads.items()]


def present(
    request: SearchRequest, gathered: Gathered, hits: Sequence[Hit], reranked: bool
) -> SearchResult:
    """The relevance floor, per-doc collapse, the top k, then date order and groups.

    `sort="date"` orders the relevant candidates, not only the top k: those at or above
    `min_score`, or without one those not "weaker matches" (`weaker_from`: relevance at
    least half the best's), newest first; then the first k of them. Groups (`group_by`)
    take the same relevant hits, in rank order: a weak tail never fills a group. `latest`: the hits
    come from the chunks of the N newest documents only (the engine restricts the lists);
    each document's best chunk comes first, newest document first, then the others' next
    best in rank order, up to max(k, N)."""

    def doc(h: Hit) -> tuple[str, str, str]:
        return (h.collection, h.source, h.path)

    if request.min_score is not None:
        floor = request.min_score
        hits = [h for h in hits if h.relevance is None or h.relevance >= floor]
    hits = collapse_copies(hits)
    if request.per_doc:
        hits = [replace(hit, collapsed=n) for hit, n in collapse_per_doc(hits, doc)]
    date_of = lambda h: _date_of(h, request.filters.date_fields)  # noqa: E731
    if request.latest is not None:
        best = [hit for hit, _ in collapse_per_doc(hits, doc)]
        firsts = sort_by_date(best, date_of)
        chosen = {id(h) for h in firsts}
        rest = [h for h in hits if id(h) not in chosen]
        top = [*firsts, *rest][: max(request.k, len(firsts))]
    elif request.sort == "date":
        top = sort_by_date(_relevant(hits, request), date_of)[: request.k]
    else:
        top = (_relevant(hits, request) if request.group_by else list(hits))[: request.k]
    if request.sort == "date" and request.latest is not None:
        top = sort_by_date(top, date_of)
    top = [_with_pages(h, request) for h in top]
    groups: tuple[tuple[str, tuple[int, ...]], ...] = ()
    if request.group_by:  # a field, `source`, `collection` or `path:N`, as `suggest` reads it
        from .suggest import group_key

        top, groups = grouped(top, group_key(request.group_by))
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
        order="latest" if request.latest is not None else request.sort,
        keyword_plan=gathered.keyword_plan,
    )


def _relevant(hits: Sequence[Hit], request: SearchRequest) -> list[Hit]:
    """The hits a date order or groups take from: those not "weaker matches" (relevance at
    least half the best's), or, with `min_score`, all of them (that floor applied already)."""
    weaker = None if request.min_score is not None else weaker_from(hits)
    return list(hits if weaker is None else hits[:weaker])


def collapse_copies(hits: Sequence[Hit]) -> list[Hit]:
    """One hit per chunk text: a later hit whose `chunk_hash` (the embedded text) equals an
    earlier hit's from another file is folded into it, its place named in the earlier
    hit's `also_at` (two files with identical text: one hit, "also at" the other). Chunks
    repeated within one file stay apart; hits without a `chunk_hash` pass through."""
    out: list[Hit] = []
    first: dict[str, int] = {}
    for hit in hits:
        key = bookkeeping(hit.metadata, CHUNK_HASH_KEY)
        if not isinstance(key, str) or not key:
            out.append(hit)
            continue
        index = first.get(key)
        if index is None:
            first[key] = len(out)
            out.append(hit)
            continue
        kept = out[index]
        if (kept.source, kept.path) == (hit.source, hit.path):
            out.append(hit)
            continue
        where = hit.path if hit.source == kept.source else f"{hit.source}:{hit.path}"
        if where not in kept.also_at:
            out[index] = replace(kept, also_at=(*kept.also_at, where))
    return out


WEAKER_LINE = "-- weaker matches (relevance under half the best's) --"


def score_text(hit: Hit) -> str:
    """`0.95 (score 3.141; dense #1, keyword #2)`: relevance, raw score and list ranks."""
    parts = [f"score {hit.score:.3f}"]
    if hit.ranks:
        parts.append(", ".join(f"{m} #{r}" for m, r in hit.ranks.items()))
    head = f"{hit.relevance:.2f} " if hit.relevance is not None else ""
    return head + "(" + "; ".join(parts) + ")"


def explain_text(hit: Hit, mode: str) -> str:
    """What `--explain` prints under a hit: each list's rank and raw score, the fused score."""
    lists = [
        f"{name} #{hit.ranks[name]} {hit.scores[name]:.4g}"
        for name in ("dense", "keyword")
        if name in hit.ranks and name in hit.scores
    ]
    missing = [n for n in ("dense", "keyword") if mode == "hybrid" and n not in hit.ranks]
    lists += [f"{name}: not in its top candidates" for name in missing]
    if "rerank" in hit.ranks:
        lists.append(f"reranked #{hit.ranks['rerank']}")
    rel = "" if hit.relevance is None else f" -> relevance {hit.relevance:.2f}"
    return f"{'; '.join(lists) or 'no list'}; {mode} score {hit.score:.4g}{rel}"


def dated_text(hit: Hit, fields: Sequence[str]) -> str:
    """The date a hit is ordered by, as date order reads it (the first of `fields` the hit
    has a date in): `published_at 2024-11-02`; `undated` when it has none."""
    for name in fields:
        stamp = hit.metadata.get(f"{name}_ts")
        if isinstance(stamp, int | float) and not isinstance(stamp, bool):
            given = hit.metadata.get(name)
            return f"{name} {given if isinstance(given, str) and given else int(stamp)}"
    return "undated"


def weaker_from(hits: Sequence[Hit]) -> int | None:
    """The index of the first hit far below the best (relevance under `WEAKER_SHARE` of the
    best's), where the terminal, the pipe and the page draw their "weaker matches" line;
    None if none is (`relevance.weaker_index`)."""
    return weaker_index([h.relevance for h in hits])


def plain_lines(result: SearchResult) -> str:
    """The hits as the CLI prints them where no terminal reads its output: one line per hit
    (`rank. path:start-end score (ranks)`), the heading and the snippet below it, unwrapped
    and without styles. Results grouped with `--group-by` are drawn by the terminal renderer.
    """
    from ..chunk.blocks import code_lines, reading_view
    from ..corpus.listing import printable
    from .highlight import match_spans, snippet

    if not result.hits:
        return "no hits\n"
    show_collection = len(result.collections) > 1
    lines: list[str] = []
    weaker = weaker_from(result.hits)
    for rank, hit in enumerate(result.hits, 1):
        if rank - 1 == weaker:
            lines.append(WEAKER_LINE)
        head = f"{rank}. "
        if show_collection:
            head += f"[{printable(hit.collection)}] "
        head += printable(f"{hit.path}:{hit.start_line}-{hit.end_line}")
        head += " " + score_text(hit)
        if result.order != "rank":
            head += " " + printable(dated_text(hit, result.filters.date_fields))
        if hit.collapsed:
            head += f" +{hit.collapsed} more in this file"
        lines.append(head)
        if hit.also_at:
            lines.append("   also at: " + printable(", ".join(hit.also_at)))
        if hit.heading:
            lines.append("   " + printable(hit.heading))
        if hit.context:
            lines.append("   context: " + printable(hit.context))
        prose, code = reading_view(hit.text)
        flat = printable(prose)
        window, _ = snippet(flat, match_spans(flat, result.query, result.filters.phrases))
        lines.append("   " + window)
        if code is not None:  # code kept apart from the prose
            lines.append("   ```" + printable(code.lang))
            lines.extend("   " + printable(line) for line in code_lines(code))
            lines.append("   ```")
    return "\n".join(lines) + "\n"


def _with_pages(hit: Hit, request: SearchRequest) -> Hit:
    """A document's hit spanning pages, with the pages of the lines the query matched."""
    starts = hit.metadata.get("page_starts")
    page = hit.metadata.get("page")
    if not (hit.metadata.get("doc_format") and isinstance(starts, list) and type(page) is int):
        return hit
    from .highlight import matched_pages

    found = matched_pages(
        hit.text, hit.start_line, page, starts, request.query, request.filters.phrases
    )
    return replace(hit, pages=found) if found else hit


def _key(hit: Hit) -> tuple[str, str]:
    return (hit.collection, hit.id)


#: A record id as `plan.packed.record_id` makes it: source and document hashes, chunk hash
#: and occurrence. The first two name the document.
_RECORD_ID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{16})-[0-9a-f]{16}-[0-9]+")


@lru_cache(maxsize=1 << 14)  # fusion asks for each candidate's: they recur from search to search
def document_of(key: tuple[str, str]) -> tuple[str, str]:
    """The document of a (collection, record id) key, read from the id alone (a lean list
    has no paths): its source and document hashes; an id of another form is its own
    document."""
    collection, rid = key
    found = _RECORD_ID.fullmatch(rid)
    return (collection, found.group(1) if found else rid)


def _date_of(hit: Hit, fields: Sequence[str]) -> float | None:
    for name in fields:
        value = hit.metadata.get(f"{name}_ts")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


__all__ = [
    "DEFAULT_FUSION",
    "FEEDBACK_FUSION",
    "MIN_CANDIDATES",
    "WEAKER_LINE",
    "WEAKER_SHARE",
    "Gathered",
    "KeywordPlan",
    "SearchRequest",
    "SearchResult",
    "collapse_copies",
    "dated_text",
    "document_of",
    "explain_text",
    "lead_documents",
    "plain_lines",
    "present",
    "rank_hits",
    "score_text",
    "weaker_from",
]
