"""What a NATS message may carry (the trust boundary), and what a reply holds.

Design notes: docs/internals.md, `nats/payloads.py`.
"""

from __future__ import annotations

import datetime as dt
import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import api
from ..errors import ConfigError
from ..records import Hit
from ..retrieve.filter_syntax import MAX_OPTION_VALUES, MAX_VALUE_CHARS, parse_value, parse_when
from ..retrieve.options import (  # the bounds of every surface
    MAX_K,
    MAX_QUERY_CHARS,
    MAX_QUESTION_CHARS,
)
from .errors import BadMessage

#: Hits per request: the bound of `k` on every other surface; the design's default is 8 (a
#: reply over the server's payload limit is refused by name, `runner`).
MAX_TOP_K = MAX_K
DEFAULT_TOP_K = 8
#: Characters of a path an event names, and paths per event.
MAX_PATH_CHARS = 4096
MAX_EVENT_PATHS = 1000

Value = Annotated[str, Field(min_length=1, max_length=MAX_VALUE_CHARS)]
When = Annotated[str, Field(min_length=1, max_length=64)]
Path_ = Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)]


@dataclass(frozen=True, slots=True)
class NatsFields:
    """Which metadata key each request and reply field means (`nats.fields`)."""

    funder_slug: str = "funder_slug"
    record_uuid: str = "record_uuid"
    published_at: str = "published_at"
    pack_id: str = "pack_id"
    title: str = "title"
    record_id: str = "record_id"

    @classmethod
    def of(cls, given: Mapping[str, Any]) -> NatsFields:
        """From the `nats.fields` setting; an unknown field or a key that is not text is a
        `ConfigError`."""
        known = cls.__slots__
        for name, key in given.items():
            if name not in known:
                raise ConfigError(
                    f"nats.fields: {name!r} is not a request field; the fields are "
                    f"{', '.join(known)}"
                )
            if not isinstance(key, str) or not key.strip() or key.startswith("$"):
                raise ConfigError(f"nats.fields.{name} must be a metadata key, got {key!r}")
        return cls(**dict(given))


def clients_of(given: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The `nats.clients` setting: client_id -> collection names (a `ConfigError` else)."""
    out: dict[str, tuple[str, ...]] = {}
    for client, names in given.items():
        listed = [names] if isinstance(names, str) else names
        if (
            not isinstance(listed, list | tuple)
            or not listed
            or not all(isinstance(n, str) and n for n in listed)
        ):
            raise ConfigError(
                f"nats.clients.{client} must be a list of collection names, got {names!r}"
            )
        out[str(client)] = tuple(listed)
    return out


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Filtered(_Strict):
    client_id: str = Field(min_length=1, max_length=200)
    funder_slug: Value | None = None
    record_uuid: Value | None = None
    published_after: When | None = None
    published_before: When | None = None
    pack_id: Value | None = None
    tags: list[Value] = Field(default_factory=list, max_length=MAX_OPTION_VALUES)
    top_k: int = Field(default=DEFAULT_TOP_K, ge=1, le=MAX_TOP_K)


class RetrieveRequest(_Filtered):
    """`corpus.retrieve.requested`: the design's request."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    include_chunks: bool = True


class AskRequest(_Filtered):
    """The ask subject: a question, the same filters, and the answer's fallback."""

    query: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    fallback: Literal["none", "extractive"] | None = None


class ChangeEvent(BaseModel):
    """`corpus.added`, `corpus.published_at_changed`, `corpus.removed`: the file(s) that
    changed (`corpus_path`, or `corpus_paths`); other fields are the producer's own."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    corpus_path: Path_ | None = None
    corpus_paths: list[Path_] = Field(default_factory=list, max_length=MAX_EVENT_PATHS)

    @property
    def paths(self) -> tuple[str, ...]:
        both = ([self.corpus_path] if self.corpus_path else []) + self.corpus_paths
        return tuple(dict.fromkeys(both))


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], data: bytes, max_bytes: int) -> M:
    """One message as `model`, or `BadMessage` (`too_large`, `malformed_json`,
    `unknown_field`, `invalid_request`) naming the field and the fix."""
    if len(data) > max_bytes:
        raise BadMessage(
            "too_large",
            f"the message has {len(data):,} bytes; at most {max_bytes:,} are accepted "
            "(nats_max_message_bytes)",
        )
    try:
        found = model.model_validate_json(data)
    except ValidationError as exc:
        raise _refusal(exc) from None
    if isinstance(found, ChangeEvent) and not found.paths:
        raise BadMessage("invalid_request", "the event names no file: give corpus_path")
    return found


def _refusal(exc: ValidationError) -> BadMessage:
    errors = exc.errors(include_url=False, include_input=False)
    if any(e["type"].startswith("json_") for e in errors):
        problem = errors[0].get("msg", "invalid JSON")
        return BadMessage("malformed_json", f"the message is not a JSON object: {problem}")
    extra = [".".join(map(str, e["loc"])) for e in errors if e["type"] == "extra_forbidden"]
    if extra:
        return BadMessage(
            "unknown_field", f"unknown field(s): {', '.join(extra[:10])}; see docs/nats.md"
        )
    if any(e["type"] == "model_type" for e in errors):
        return BadMessage("invalid_request", "the message must be a JSON object")
    shown = "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'message'}: {e['msg']}" for e in errors[:5]
    )
    return BadMessage("invalid_request", shown)


def collections_for(client_id: str, clients: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """The collections `client_id` searches: its own entry, else `*`'s, else (with no
    `nats.clients` at all) the default collections, `()`."""
    if not clients:
        return ()
    found = clients.get(client_id, clients.get("*"))
    if found is None:
        raise BadMessage(
            "unknown_client",
            f"client_id {client_id!r} is not one of nats.clients; add it (or a '*' entry)",
        )
    return tuple(found)


def _equal(key: str, text: str) -> dict[str, Any]:
    """`key` equals `text`, as a string or as front matter would have typed it."""
    typed = parse_value(text)
    if isinstance(typed, int | float | bool):
        return {"$or": [{key: text}, {key: typed}]}
    return {key: text}


def search_args(
    request: RetrieveRequest | AskRequest,
    fields: NatsFields,
    clients: Mapping[str, Sequence[str]],
) -> api.SearchArgs:
    """The search every surface runs, from one request (hybrid, top_k hits)."""
    terms = [
        _equal(key, value)
        for key, value in (
            (fields.funder_slug, request.funder_slug),
            (fields.record_uuid, request.record_uuid),
            (fields.pack_id, request.pack_id),
        )
        if value is not None
    ]
    where = None if not terms else terms[0] if len(terms) == 1 else {"$and": terms}
    for name, when in (
        ("published_after", request.published_after),
        ("published_before", request.published_before),
    ):
        if when is not None:  # refused under the name the caller gave it (an edge: its clock)
            parse_when(when, name, dt.datetime.now(dt.UTC).date())
    return api.SearchArgs.of(
        request.query,
        mode="hybrid",
        k=request.top_k,
        where_json=where,
        tags=request.tags,
        after=request.published_after,
        before=request.published_before,
        date_fields=(fields.published_at,),
        collections=collections_for(request.client_id, clients),
    )


def corpus_path(hit: Hit, roots: Mapping[str, str], corpus_root: str | None) -> str:
    """The hit's file: relative to `corpus_root` when it lies there, else absolute (its
    source's root joined with its path); the bare path when the source is unknown."""
    root = roots.get(hit.source)
    if root is None:
        return hit.path
    full = posixpath.join(root, hit.path)
    if corpus_root:
        base = corpus_root.rstrip("/")
        if full.startswith(base + "/"):
            return full[len(base) + 1 :]
    return full


def _meta(hit: Hit, key: str) -> Any:
    value = hit.metadata.get(key)
    return value if value not in ("", None) else None


def hit_reply(
    hit: Hit,
    fields: NatsFields,
    include_chunks: bool,
    roots: Mapping[str, str],
    corpus_root: str | None,
) -> dict[str, Any]:
    """One hit in the design's reply shape (`chunk_text` left out without `include_chunks`)."""
    similarity = hit.relevance if hit.relevance is not None else hit.score
    out: dict[str, Any] = {
        "record_uuid": _meta(hit, fields.record_uuid),
        "corpus_path": corpus_path(hit, roots, corpus_root),
        "title": _meta(hit, fields.title),
        "published_at": _meta(hit, fields.published_at),
        "funder_slug": _meta(hit, fields.funder_slug),
        "chunk_index": int(str(hit.metadata.get("chunk_index", 0) or 0)),
        "chunk_text": hit.text,
        "similarity": round(float(similarity), 6),
        "record_id": _meta(hit, fields.record_id),
    }
    if not include_chunks:
        del out["chunk_text"]
    return out


def encode(reply: Mapping[str, Any]) -> bytes:
    return json.dumps(reply, ensure_ascii=False, separators=(",", ":"), default=str).encode()


__all__ = [
    "DEFAULT_TOP_K",
    "MAX_QUERY_CHARS",
    "MAX_TOP_K",
    "AskRequest",
    "ChangeEvent",
    "NatsFields",
    "RetrieveRequest",
    "clients_of",
    "collections_for",
    "corpus_path",
    "encode",
    "hit_reply",
    "parse",
    "search_args",
]
