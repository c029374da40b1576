"""The config file's `nats:` section (`chromasync nats`, docs/nats.md), at the trust boundary.

nats:
  url: nats://127.0.0.1:4222
  user: chromasync            # its password: CHROMASYNC_NATS_PASSWORD (environment only)
  creds_file: nats.creds      # or a credentials file; a token: CHROMASYNC_NATS_TOKEN
  stream: CORPUS
  durable: chromasync
  subjects: {events: [corpus.added, corpus.published_at_changed, corpus.removed],
             retrieve: corpus.retrieve.requested, ask: corpus.ask.requested}
  corpus_root: corpus
  fields: {funder_slug: funder_slug, published_at: published_at}
  clients: {lens: [chromasync-notes], "*": [chromasync-docs]}
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


#: A NATS subject: tokens of letters, digits, `_`, `-`, `$`, joined by dots (no wildcards).
NatsSubject = Annotated[
    str, Field(pattern=r"^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$", max_length=256)
]
#: A metadata key a request field means.
MetaKey = Annotated[str, Field(min_length=1, max_length=200)]


class NatsSubjectsModel(_Model):
    events: list[NatsSubject] | None = Field(default=None, min_length=1, max_length=64)
    retrieve: NatsSubject | None = None
    ask: NatsSubject | None = None


class NatsFieldsModel(_Model):
    """Which metadata key each request (and reply) field means."""

    funder_slug: MetaKey | None = None
    record_uuid: MetaKey | None = None
    published_at: MetaKey | None = None
    pack_id: MetaKey | None = None
    title: MetaKey | None = None


class NatsModel(_Model):
    """`nats:`: `chromasync nats` (docs/nats.md). The token and the password come from the
    environment only (`CHROMASYNC_NATS_TOKEN`, `CHROMASYNC_NATS_PASSWORD`)."""

    url: str | None = Field(default=None, max_length=2048)
    user: str | None = Field(default=None, max_length=512)
    creds_file: str | None = Field(default=None, max_length=4096)
    stream: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    durable: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    queue: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    corpus_root: str | None = Field(default=None, max_length=4096)
    subjects: NatsSubjectsModel | None = None
    batch_s: float | None = Field(default=None, ge=0, le=60)
    batch_max: int | None = Field(default=None, ge=1, le=10_000)
    ack_wait_s: float | None = Field(default=None, ge=1, le=3600)
    max_message_bytes: int | None = Field(default=None, ge=1024, le=64 * 1024 * 1024)
    fields: NatsFieldsModel | None = None
    #: client_id -> the collections its requests search (`"*"`: every other client)
    clients: dict[
        Annotated[str, Field(min_length=1, max_length=200)],
        Annotated[list[Annotated[str, Field(min_length=1, max_length=512)]], Field(min_length=1)],
    ] = Field(default_factory=dict, max_length=1000)


def nats_settings(nats: NatsModel, resolve: Callable[[str], Path], put: Any) -> None:
    """Put each NATS setting the `nats:` section gives (paths resolved by `resolve`)."""
    put("nats_url", nats.url, ("nats", "url"))
    put("nats_user", nats.user, ("nats", "user"))
    if nats.creds_file:
        put("nats_creds", str(resolve(nats.creds_file)), ("nats", "creds_file"))
    put("nats_stream", nats.stream, ("nats", "stream"))
    put("nats_durable", nats.durable, ("nats", "durable"))
    put("nats_queue", nats.queue, ("nats", "queue"))
    if nats.corpus_root:
        put("nats_corpus_root", str(resolve(nats.corpus_root)), ("nats", "corpus_root"))
    subjects = nats.subjects
    if subjects is not None:
        events = ",".join(subjects.events) if subjects.events else None
        put("nats_event_subjects", events, ("nats", "subjects", "events"))
        put("nats_retrieve_subject", subjects.retrieve, ("nats", "subjects", "retrieve"))
        put("nats_ask_subject", subjects.ask, ("nats", "subjects", "ask"))
    put("nats_batch_s", nats.batch_s, ("nats", "batch_s"))
    put("nats_batch_max", nats.batch_max, ("nats", "batch_max"))
    put("nats_ack_wait_s", nats.ack_wait_s, ("nats", "ack_wait_s"))
    put("nats_max_message_bytes", nats.max_message_bytes, ("nats", "max_message_bytes"))
    if nats.fields is not None:
        put("nats_fields", nats.fields.model_dump(exclude_none=True), ("nats", "fields"))
    put("nats_clients", {k: tuple(v) for k, v in nats.clients.items()}, ("nats", "clients"))
