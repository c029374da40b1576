"""What a request may carry (the trust boundary): the JSON bodies of the POST routes, strict
pydantic models with a bound on every field, and the query parameters of `GET /search`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Query
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from .. import api
from ..config.labels import LABEL_MAX, label_problem


def _valid_label(value: str) -> str:
    problem = label_problem(value)
    if problem is not None:
        raise ValueError(f"source label {problem}")
    return value


#: A source label, by the config file's rule (`config.labels.label_problem`).
Label = Annotated[str, AfterValidator(_valid_label)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReindexBody(_Body):
    source: Label | None = Field(default=None, max_length=LABEL_MAX)
    sources: list[Annotated[Label, Field(max_length=LABEL_MAX)]] = Field(
        default_factory=list, max_length=1000
    )
    checksum: bool = False
    allow_mass_delete: bool = False


class SourceBody(_Body):
    path: str = Field(max_length=8192)
    label: Label | None = Field(default=None, max_length=LABEL_MAX)
    kind: str = Field(default="notes", pattern=r"^[a-z][a-z0-9_-]{0,31}$")


Item = Annotated[str, Field(max_length=2000)]


class AskBody(_Body):
    """`POST /ask`: the question and the parameters of `GET /search` (lists as lists).

    The question's own limit (`answer.ask.MAX_QUESTION_CHARS`) is checked by the answer
    layer, so that an over-long question is a 400 that says so."""

    question: str = Field(max_length=1_000_000)
    k: int = Field(default=10, ge=1, le=1000)
    mode: Literal["hybrid", "dense", "keyword"] = "hybrid"
    sources: list[Item] = Field(default_factory=list, max_length=100)
    where: list[Item] = Field(default_factory=list, max_length=100)
    where_json: str | dict[str, Any] | None = None
    tags: list[Item] = Field(default_factory=list, max_length=100)
    tags_all: bool = False
    after: str | None = Field(default=None, max_length=64)
    before: str | None = Field(default=None, max_length=64)
    date_fields: list[Item] = Field(default_factory=list, max_length=20)
    paths: list[Item] = Field(default_factory=list, max_length=100)
    phrases: list[Item] = Field(default_factory=list, max_length=100)
    matches: list[Item] = Field(default_factory=list, max_length=100)
    collections: list[Item] = Field(default_factory=list, max_length=100)
    all_collections: bool = False
    per_doc: bool = False
    sort: Literal["rank", "date"] = "rank"
    group_by: str | None = Field(default=None, max_length=200)
    rerank: bool = True
    min_score: float | None = Field(default=None, ge=0, le=1)
    fallback: Literal["none", "extractive"] | None = None

    def search_args(self) -> api.SearchArgs:
        fields = self.model_dump(exclude={"question", "fallback"})
        return api.SearchArgs.of(self.question, **fields)


def search_query(
    q: Annotated[str, Query(min_length=1, max_length=2000, description="The query.")],
    k: Annotated[int, Query(ge=1, le=1000, description="Number of hits.")] = 10,
    mode: Annotated[
        Literal["hybrid", "dense", "keyword"], Query(description="Meaning, words, or both.")
    ] = "hybrid",
    source: Annotated[list[str], Query(description="Only these sources (any).")] = [],  # noqa: B006
    where: Annotated[list[str], Query(description="KEY=VALUE metadata equality (all).")] = [],  # noqa: B006
    where_json: Annotated[
        str | None, Query(max_length=8192, description="A Chroma where filter (JSON).")
    ] = None,
    tag: Annotated[list[str], Query(description="Front-matter tags.")] = [],  # noqa: B006
    tags_all: Annotated[bool, Query(description="Require every tag (default any).")] = False,
    after: Annotated[str | None, Query(description="Date on or after (ISO).")] = None,
    before: Annotated[str | None, Query(description="Date before (ISO).")] = None,
    date_field: Annotated[list[str], Query(description="Front-matter date keys.")] = [],  # noqa: B006
    path: Annotated[list[str], Query(description="git-wildmatch path patterns (any).")] = [],  # noqa: B006
    phrase: Annotated[list[str], Query(description="Words in this order (all).")] = [],  # noqa: B006
    match: Annotated[list[str], Query(description="FIELD=SUBSTRING in metadata.")] = [],  # noqa: B006
    links_to: Annotated[
        list[str], Query(description="Linking to this URL, path or note title (all).")
    ] = [],  # noqa: B006
    collection: Annotated[list[str], Query(description="Only these collections.")] = [],  # noqa: B006
    all_collections: Annotated[bool, Query(description="Every collection.")] = False,
    per_doc: Annotated[bool, Query(description="Best chunk per document.")] = False,
    sort: Annotated[Literal["rank", "date"], Query(description="Order of the top k.")] = "rank",
    group_by: Annotated[str | None, Query(max_length=200)] = None,
    rerank: Annotated[bool, Query(description="Rerank when a model is set.")] = True,
    min_score: Annotated[
        float | None, Query(ge=0, le=1, description="Only hits of at least this relevance.")
    ] = None,
) -> api.SearchArgs:
    """The search parameters of `/search` (the CLI's), as one request's arguments."""
    return api.SearchArgs.of(
        q,
        mode=mode,
        k=k,
        sources=source,
        where=where,
        where_json=where_json,
        tags=tag,
        tags_all=tags_all,
        after=after,
        before=before,
        date_fields=date_field,
        paths=path,
        phrases=phrase,
        matches=match,
        links_to=links_to,
        collections=collection,
        all_collections=all_collections,
        per_doc=per_doc,
        sort=sort,
        group_by=group_by,
        rerank=rerank,
        min_score=min_score,
    )
