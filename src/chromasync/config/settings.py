"""Settings: each one declared once, as a field of `Settings` (`spec.setting`), all listed in
`SETTINGS`. Which value wins (flag over environment over config file over default) and where
the config file is found are `resolve`'s to decide; what a config file gave is a
`parsed.ConfigFile`. Secrets (the Chroma token, API keys) come only from flags or the
environment and are never printed.

Collections (`collections` setting):

* `per-kind` (the default): each source kind has its own collection, named
  `<collection>-<kind>` (`chromasync-notes`, `chromasync-docs`), so a kind's records can be
  dropped with one call. Search covers every collection named `<collection>` or
  `<collection>-*`.
* `shared`: every source writes into `<collection>`; `source_kind` in each record's metadata
  tells them apart.

A source may name its own `collection` in the config file; that always wins.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..datadir import CHROMA_DIR
from ..errors import is_secret_key, shown_url, url_problem
from .editor import EDITOR_URI_MAX, editor_uri_problem
from .parsed import ConfigFile
from .spec import declared, setting

DEFAULT_DATA_DIR = ".chromasync"
DEFAULT_COLLECTION = "chromasync"
_DATA_DIR = Path(DEFAULT_DATA_DIR)
FALLBACKS = ("none", "extractive")
COLLECTION_MODES = ("per-kind", "shared")
PLAN_AHEAD_MODES = ("auto", "on", "off")  # see sync/ahead.py
DEFAULT_PRIVACY_KEYS = ("private",)
DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
#: An API token's bounds: a short one is guessed, a long one cut off by HTTP header limits.
MIN_API_TOKEN = 16
MAX_API_TOKEN = 4096


def token_problem(text: str) -> str | None:
    """Why `text` cannot be an API token, or None: 16 to 4,096 visible ASCII characters
    (a space, a control character or a non-ASCII letter never survives a header intact)."""
    if MIN_API_TOKEN <= len(text) <= MAX_API_TOKEN and all(" " < c < "\x7f" for c in text):
        return None
    return (
        f"must be {MIN_API_TOKEN} to {MAX_API_TOKEN} visible ASCII characters (a short token "
        "is easy to guess; a space or control character never reaches the server intact); "
        "make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
    )


NATS_EVENT_SUBJECTS = ("corpus.added", "corpus.published_at_changed", "corpus.removed")
_NATS_SUBJECT = re.compile(r"[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*")
_NATS_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _subjects_problem(text: str) -> str | None:
    """Why `text` is not a comma-separated list of NATS subjects (no wildcards), or None."""
    for subject in (s.strip() for s in text.split(",")):
        if not _NATS_SUBJECT.fullmatch(subject):
            return f"holds {subject!r}, not a NATS subject (tokens joined by dots, no wildcards)"
    return None


def _name_problem(text: str) -> str | None:
    if not _NATS_NAME.fullmatch(text):
        return "must be 1-64 letters, digits, '_' or '-'"
    return None


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting; each field is its one declaration (`spec.setting`, `SETTINGS`)."""

    data_dir: Path = setting(
        _DATA_DIR,
        "State and embedded store folder",
        env="CHROMASYNC_DATA_DIR",
        file=("store.data_dir", "server.data_dir", "chromasync.data_dir"),
    )
    collection: str = setting(
        DEFAULT_COLLECTION,
        "Chroma collection (the prefix of per-kind collections)",
        env="CHROMASYNC_COLLECTION",
        file=("store.collection", "server.collection", "chromasync.collection"),
    )
    collections: str = setting(
        "per-kind",
        "One collection per source kind, or one shared collection",
        env="CHROMASYNC_COLLECTIONS",
        file=("store.collections", "server.collections"),
        choices=COLLECTION_MODES,
    )
    provider: str = setting(
        "local",
        "Embedding provider: local, openai, server, hash (or a plugin's)",
        env="CHROMASYNC_EMBEDDING_PROVIDER",
        file=("embedding.provider", "chromasync.embedding.provider"),
    )
    model: str | None = setting(
        None,
        "Embedding model (local: a sentence-transformers folder; not set: the provider's)",
        env="CHROMASYNC_EMBEDDING_MODEL",
        file=("embedding.model", "chromasync.embedding.model"),
    )
    chroma_url: str | None = setting(
        None,
        "A Chroma server (http(s)://, chroma-cloud://); not set: the embedded store",
        env="CHROMASYNC_CHROMA_URL",
        test=url_problem,
        file=("store.url", "server.url"),
    )
    chroma_token: str | None = setting(
        None,
        "The Chroma server's bearer token (Chroma Cloud: its API key, also read from "
        "CHROMA_API_KEY); prefer the environment",
        env="CHROMASYNC_CHROMA_TOKEN",
        secret=True,
    )
    tenant: str | None = setting(
        None,
        "Chroma tenant",
        env="CHROMASYNC_CHROMA_TENANT",
        file=("store.tenant", "server.tenant"),
    )
    database: str | None = setting(
        None,
        "Chroma database",
        env="CHROMASYNC_CHROMA_DATABASE",
        file=("store.database", "server.database"),
    )
    chroma_timeout: float = setting(
        60.0,
        "Seconds per Chroma request attempt, reading its answer included "
        "(a request with its retries: this times chroma_retries)",
        env="CHROMASYNC_CHROMA_TIMEOUT",
        low=0,
        above=True,
        high=3600,
    )
    chroma_retries: int = setting(
        6,
        "Attempts per Chroma request, the first included",
        env="CHROMASYNC_CHROMA_RETRIES",
        low=1,
        high=20,
    )
    batch_size: int | None = setting(
        None,
        "Records per write request to Chroma (never more than the store takes)",
        env="CHROMASYNC_BATCH_SIZE",
        file=("store.batch_size", "server.batch_size"),
        low=1,
        high=100_000,
    )
    embedding_url: str | None = setting(
        None,
        "An embedding server's URL (openai, server providers), e.g. http://localhost:11434/v1",
        env="CHROMASYNC_EMBEDDING_URL",
        test=url_problem,
    )
    embedding_api_key: str | None = setting(
        None,
        "The embedding endpoint's key",
        env=("CHROMASYNC_EMBEDDING_API_KEY", "CHROMASYNC_OPENAI_API_KEY", "OPENAI_API_KEY"),
        secret=True,
    )
    embedding_dimension: int | None = setting(
        None,
        "Ask the embedding endpoint for vectors of this size",
        env="CHROMASYNC_EMBEDDING_DIMENSION",
        low=1,
    )
    max_file_bytes: int = setting(
        8 * 1024 * 1024,
        "Files larger than this are skipped (counted)",
        env="CHROMASYNC_MAX_FILE_BYTES",
        low=1,
    )
    cache_max_entries: int = setting(
        500_000,
        "Vectors the embedding cache keeps",
        env="CHROMASYNC_CACHE_MAX_ENTRIES",
        low=0,
    )
    cache_dir: str | None = setting(
        None, "Where the local model's files are kept", env="CHROMASYNC_CACHE_DIR"
    )
    chunk_max_tokens: int | None = setting(
        None,
        "Tokens per chunk, at most the model's (not set: the provider's budget)",
        env="CHROMASYNC_CHUNK_MAX_TOKENS",
        file=("chunking.max_tokens", "chromasync.chunking.max_tokens"),
        low=9,
    )
    plan_ahead: str = setting(
        "auto",
        "Read and chunk many files in a second process (sync/ahead.py)",
        env="CHROMASYNC_PLAN_AHEAD",
        file=("chunking.plan_ahead", "chromasync.chunking.plan_ahead"),
        choices=PLAN_AHEAD_MODES,
    )
    date_fields: str = setting(
        "date,published_at",
        "Front-matter dates for --after, --before and --sort date",
        env="CHROMASYNC_DATE_FIELDS",
        file="search.date_fields",
        csv=True,
    )
    rerank_model: str | None = setting(
        None,
        "A local cross-encoder folder; not set: no reranking",
        env="CHROMASYNC_RERANK_MODEL",
        file="search.rerank_model",
        relative=True,
    )
    duplicate_threshold: float = setting(
        0.95,
        "Documents at or above this similarity are near-duplicates (similar, suggest)",
        env="CHROMASYNC_DUPLICATE_THRESHOLD",
        file="search.duplicate_threshold",
        low=0,
        high=1,
    )
    keyword_refresh_s: int = setting(
        300,
        "Max age in seconds of the keyword mirror of a shared collection",
        env="CHROMASYNC_KEYWORD_REFRESH_S",
        file="search.keyword_refresh_s",
        low=0,
    )
    editor_uri: str | None = setting(
        None,
        "A hit's open-in-editor link, e.g. vscode://file{path}:{line}",
        env="CHROMASYNC_EDITOR_URI",
        file="search.editor_uri",
        max_length=EDITOR_URI_MAX,
        test=lambda text: editor_uri_problem(text),
    )
    api_token: str | None = setting(
        None,
        "The token clients of serve, mcp and an owner send (Bearer)",
        env="CHROMASYNC_API_TOKEN",
        secret=True,
        test=token_problem,
    )
    llm_url: str | None = setting(
        None,
        "An OpenAI-compatible chat endpoint, e.g. http://localhost:11434/v1 (its key: "
        "CHROMASYNC_LLM_API_KEY or OPENAI_API_KEY); not set: extractive answers",
        env="CHROMASYNC_LLM_URL",
        test=url_problem,
        file="answer.llm_url",
        max_length=2048,
    )
    llm_model: str | None = setting(
        None, "Chat model name", env="CHROMASYNC_LLM_MODEL", file="answer.llm_model", max_length=512
    )
    llm_api_key: str | None = setting(
        None,
        "The chat endpoint's key (environment only)",
        env=("CHROMASYNC_LLM_API_KEY", "OPENAI_API_KEY"),
        secret=True,
    )
    llm_timeout: float = setting(
        120.0,
        "Seconds per chat request",
        env="CHROMASYNC_LLM_TIMEOUT",
        file="answer.timeout",
        low=0,
        above=True,
        high=3600,
    )
    llm_retries: int = setting(
        4,
        "Attempts per chat request, the first included",
        env="CHROMASYNC_LLM_RETRIES",
        file="answer.retries",
        low=1,
        high=20,
    )
    answer_context_tokens: int = setting(
        3000,
        "The prompt's budget for sources",
        env="CHROMASYNC_ANSWER_CONTEXT_TOKENS",
        file="answer.context_tokens",
        low=64,
        high=2_000_000,
    )
    answer_fallback: str = setting(
        "none",
        "When the chat model is unreachable: fail (none), or answer extractively",
        env="CHROMASYNC_ANSWER_FALLBACK",
        file="answer.fallback",
        choices=FALLBACKS,
    )
    provider_options: Mapping[str, Any] = setting(
        {},
        "Options for the embedding provider (--embed-option KEY=VALUE)",
        file=("embedding.options", "chromasync.embedding.options"),
    )
    skip_paths: tuple[str, ...] = setting(
        (), "Path substrings skipped in every source", file="skip_paths"
    )
    privacy_keys: tuple[str, ...] = setting(
        DEFAULT_PRIVACY_KEYS,
        "Front-matter keys that keep a file out of the index (plus publish: false)",
        file="privacy_keys",
    )
    # `chromasync nats` (docs/nats.md)
    nats_url: str = setting(
        DEFAULT_NATS_URL,
        "The NATS server(s), comma-separated",
        env="CHROMASYNC_NATS_URL",
        test=url_problem,
        file="nats.url",
        max_length=4096,
    )
    nats_user: str | None = setting(
        None, "The NATS user", env="CHROMASYNC_NATS_USER", file="nats.user", max_length=512
    )
    nats_password: str | None = setting(
        None,
        "The NATS user's password (environment only)",
        env="CHROMASYNC_NATS_PASSWORD",
        secret=True,
    )
    nats_token: str | None = setting(
        None, "The NATS server's token (environment only)", env="CHROMASYNC_NATS_TOKEN", secret=True
    )
    nats_creds: str | None = setting(
        None,
        "A NATS credentials file (JWT and seed)",
        env="CHROMASYNC_NATS_CREDS",
        file="nats.creds_file",
        relative=True,
    )
    nats_stream: str = setting(
        "CORPUS",
        "The JetStream stream of change events (made when missing)",
        env="CHROMASYNC_NATS_STREAM",
        file="nats.stream",
        test=_name_problem,
    )
    nats_durable: str = setting(
        "chromasync",
        "The durable consumer's name",
        env="CHROMASYNC_NATS_DURABLE",
        file="nats.durable",
        test=_name_problem,
    )
    nats_event_subjects: str = setting(
        ",".join(NATS_EVENT_SUBJECTS),
        "Subjects of change events",
        env="CHROMASYNC_NATS_EVENT_SUBJECTS",
        file="nats.subjects.events",
        csv=True,
        test=_subjects_problem,
    )
    nats_retrieve_subject: str = setting(
        "corpus.retrieve.requested",
        "Request/reply subject of retrieval",
        env="CHROMASYNC_NATS_RETRIEVE_SUBJECT",
        file="nats.subjects.retrieve",
        test=_subjects_problem,
    )
    nats_ask_subject: str = setting(
        "corpus.ask.requested",
        "Request/reply subject of cited answers",
        env="CHROMASYNC_NATS_ASK_SUBJECT",
        file="nats.subjects.ask",
        test=_subjects_problem,
    )
    nats_queue: str = setting(
        "chromasync",
        "The queue group of the request subjects",
        env="CHROMASYNC_NATS_QUEUE",
        file="nats.queue",
        test=_name_problem,
    )
    nats_corpus_root: str | None = setting(
        None,
        "Events' relative paths and replies' corpus_path are relative to this folder",
        env="CHROMASYNC_NATS_CORPUS_ROOT",
        file="nats.corpus_root",
        relative=True,
    )
    nats_batch_s: float = setting(
        0.5,
        "Seconds a burst of events gathers before its one sync",
        env="CHROMASYNC_NATS_BATCH_S",
        file="nats.batch_s",
        low=0,
        high=60,
    )
    nats_batch_max: int = setting(
        256,
        "Events fetched at once",
        env="CHROMASYNC_NATS_BATCH_MAX",
        file="nats.batch_max",
        low=1,
        high=10_000,
    )
    nats_ack_wait_s: float = setting(
        60.0,
        "Seconds the server waits for an event's ack before it delivers it again",
        env="CHROMASYNC_NATS_ACK_WAIT_S",
        file="nats.ack_wait_s",
        low=1,
        high=3600,
    )
    nats_max_message_bytes: int = setting(
        1024 * 1024,
        "Larger requests and events are refused (too_large)",
        env="CHROMASYNC_NATS_MAX_MESSAGE_BYTES",
        file="nats.max_message_bytes",
        low=1024,
        high=64 * 1024 * 1024,
    )
    nats_fields: Mapping[str, Any] = setting(
        {},
        "Request field -> metadata key (funder_slug, record_uuid, published_at, pack_id, title, "
        "record_id)",
        file="nats.fields",
    )
    nats_clients: Mapping[str, Any] = setting(
        {}, "client_id -> the collections it searches ('*': any other)", file="nats.clients"
    )
    config_file: ConfigFile | None = field(default=None, compare=False, repr=False)
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)

    def embedding_options(self) -> dict[str, Any]:
        options = dict(self.provider_options)
        if self.model:
            options.setdefault("model", self.model)
        if self.cache_dir:
            options.setdefault("cache_dir", self.cache_dir)
        if self.embedding_url:
            options.setdefault("url", self.embedding_url)
        if self.embedding_api_key:
            options.setdefault("api_key", self.embedding_api_key)
        if self.embedding_dimension:
            options.setdefault("dimension", self.embedding_dimension)
        return options

    @property
    def date_field_names(self) -> tuple[str, ...]:
        return tuple(f.strip() for f in str(self.date_fields).split(",") if f.strip())

    def collection_for(self, kind: str, explicit: str | None = None) -> str:
        """The collection a source of `kind` writes to (see the module docstring)."""
        if explicit:
            return explicit
        if self.collections == "shared":
            return self.collection
        return f"{self.collection}-{kind_slug(kind)}"

    def owns_collection(self, name: str) -> bool:
        """Whether `name` is one of this configuration's collections (for search)."""
        return name == self.collection or name.startswith(self.collection + "-")

    def store_location(self) -> str:
        return self.chroma_url or str(self.data_dir / CHROMA_DIR)

    def shown(self) -> list[tuple[str, str, str]]:
        """(name, value, origin) rows for `config show`, secrets masked, URLs without
        their user info."""
        rows = []
        for spec in SETTINGS:
            name = spec.name
            value = getattr(self, name)
            if isinstance(value, tuple):
                text = ", ".join(value)
            elif isinstance(value, Mapping):  # `--embed-option api_key=...`: masked as well
                shown = {k: "******" if is_secret_key(k) else v for k, v in value.items()}
                text = ", ".join(f"{k}={v}" for k, v in sorted(shown.items()))
            else:
                text = "" if value is None else str(value)
            if spec.secret and value:
                text = "****** (set)"
            rows.append((name, shown_url(text), self.origins.get(name, "default")))
        if self.config_file is not None:
            rows.append(("config", str(self.config_file.path), self.origins.get("config", "")))
        return rows


def kind_slug(kind: str) -> str:
    """A source kind as it appears in a collection name: lower case, [a-z0-9_-]."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", kind.strip().lower()).strip("-_")
    return slug or "default"


#: Every setting, as declared by `Settings`'s fields (`spec.py`), in `config show`'s order.
SETTINGS = declared(Settings, globals())
