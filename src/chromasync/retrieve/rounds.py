"""The second round of a hybrid search with pseudo-relevance feedback: its reads and its
queries (the choices are `retrieve.feedback`'s pure functions).

Design notes: docs/internals.md, `retrieve/rounds.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..records import Hit
from .bm25 import Condition
from .dense import dense_search, merge_by_score
from .feedback import Feedback, expansion_terms, feedback_weights, moved_vector, weighted_terms
from .results import DEFAULT_FUSION, SearchRequest, lead_documents

if TYPE_CHECKING:
    from .engine import Retriever


@dataclass(frozen=True, slots=True)
class Asked:
    """One list of the first round: the collection, "dense" or "keyword", its filters."""

    name: str
    kind: str
    where: Any
    ids: list[str] | None
    condition: Condition


def second_round(
    lists: Retriever,
    request: SearchRequest,
    feedback: Feedback,
    dense: Sequence[Hit],
    keyword: Sequence[Hit],
    asked: Sequence[Asked],
    fields: bool,
) -> tuple[Sequence[Hit], Sequence[Hit]]:
    """The dense and keyword lists asked again toward the first round's best documents,
    under the same filters and to the same depth (a list the round cannot move, such as
    dense with the `server` provider, stays as it was)."""
    leads = lead_documents(dense, keyword, DEFAULT_FUSION, feedback.documents)
    if not leads:
        return dense, keyword
    depth = request.depth
    width = depth * len({a.name for a in asked})
    fed_dense = dense
    dense_asked = [a for a in asked if a.kind == "dense"]
    query = lists.query_vector(request.query) if dense_asked else ""
    if dense_asked and not isinstance(query, str):
        vectors: list[list[float]] = []
        for name in dict.fromkeys(lead.collection for _, lead, _ in leads):
            ids = [lead.id for _, lead, _ in leads if lead.collection == name]
            got = lists.collection(name).embeddings(ids)
            vectors += [got[i] for i in ids if i in got]
        moved = moved_vector(query, vectors, feedback.dense_weight)
        found = [
            dense_search(lists.dense_collection(a.name), moved, depth, a.where, a.ids, fields)
            for a in dense_asked
        ]
        fed_dense = merge_by_score(found, width)
    fed_keyword = keyword
    keyword_asked = [a for a in asked if a.kind == "keyword"]
    if keyword_asked:
        weights = feedback_weights([score for score, _, _ in leads])
        documents = [
            (weight, _texts(lists, members))
            for weight, (_, _, members) in zip(weights, leads, strict=True)
        ]
        index = lists.keyword_index(keyword_asked[0].name)
        expansion = expansion_terms(
            request.query, documents, feedback.terms, index.document_counts, index.size()
        )
        terms = weighted_terms(request.query, expansion, feedback.query_repeat)
        found = [
            lists.keyword_index(a.name).search(
                a.name, request.query, depth, a.condition, fields=fields, terms=terms
            )
            for a in keyword_asked
        ]
        fed_keyword = merge_by_score(found, width)
    return fed_dense, fed_keyword


def _texts(lists: Retriever, hits: Sequence[Hit]) -> list[str]:
    """The text of each hit (read from its keyword index for a lean list's hits)."""
    if all(h.text for h in hits):
        return [h.text for h in hits]
    out: list[str] = []
    for name in dict.fromkeys(h.collection for h in hits):
        ids = [h.id for h in hits if h.collection == name]
        out += [found.text for found in lists.keyword_index(name).records(name, ids)]
    return out


__all__ = ["Asked", "second_round"]
