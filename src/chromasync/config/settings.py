"""Settings: one function resolves them, flag over environment over config file over default.

`resolve_settings(flags, environ, file)` is pure: it takes the environment and the parsed
config file (`ConfigFile`, loaded by `configfile.load_config_file`) as parameters and
records where each value came from, for `chromasync config show`. Secrets (the Chroma
token, API keys) come only from flags or the environment and are never printed.

The config file is found by `find_config_file`: the `--config` flag, else
`CHROMASYNC_CONFIG`, else `chromasync.yaml` in the current folder; nowhere else.

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
from ..errors import ConfigError

DEFAULT_DATA_DIR = ".chromasync"
DEFAULT_COLLECTION = "chromasync"
CONFIG_FILE_NAME = "chromasync.yaml"
CONFIG_ENV = "CHROMASYNC_CONFIG"
SECRET_FIELDS = frozenset(
    {
        "chroma_token",
        "api_key",
        "embedding_api_key",
        "api_token",
        "llm_api_key",
        "nats_token",
        "nats_password",
    }
)
FALLBACKS = ("none", "extractive")
COLLECTION_MODES = ("per-kind", "shared")
PLAN_AHEAD_MODES = ("auto", "on", "off")  # see sync/ahead.py
DEFAULT_PRIVACY_KEYS = ("private",)
DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
NATS_EVENT_SUBJECTS = ("corpus.added", "corpus.published_at_changed", "corpus.removed")
#: Chroma Cloud's own variable, used for the token only when the URL is chroma-cloud://.
CLOUD_KEY_ENV = "CHROMA_API_KEY"

#: field -> (environment variable(s), the first one set wins; default)
_FIELDS: dict[str, tuple[str | tuple[str, ...], Any]] = {
    "data_dir": ("CHROMASYNC_DATA_DIR", DEFAULT_DATA_DIR),
    "collection": ("CHROMASYNC_COLLECTION", DEFAULT_COLLECTION),
    "collections": ("CHROMASYNC_COLLECTIONS", "per-kind"),
    "provider": ("CHROMASYNC_EMBEDDING_PROVIDER", "local"),
    "model": ("CHROMASYNC_EMBEDDING_MODEL", None),
    "chroma_url": ("CHROMASYNC_CHROMA_URL", None),
    "chroma_token": ("CHROMASYNC_CHROMA_TOKEN", None),
    "tenant": ("CHROMASYNC_CHROMA_TENANT", None),
    "database": ("CHROMASYNC_CHROMA_DATABASE", None),
    "chroma_timeout": ("CHROMASYNC_CHROMA_TIMEOUT", 60.0),
    "chroma_retries": ("CHROMASYNC_CHROMA_RETRIES", 6),
    "embedding_url": ("CHROMASYNC_EMBEDDING_URL", None),
    "embedding_api_key": (
        ("CHROMASYNC_EMBEDDING_API_KEY", "CHROMASYNC_OPENAI_API_KEY", "OPENAI_API_KEY"),
        None,
    ),
    "embedding_dimension": ("CHROMASYNC_EMBEDDING_DIMENSION", None),
    "max_file_bytes": ("CHROMASYNC_MAX_FILE_BYTES", 8 * 1024 * 1024),
    "cache_max_entries": ("CHROMASYNC_CACHE_MAX_ENTRIES", 500_000),
    "cache_dir": ("CHROMASYNC_CACHE_DIR", None),
    "chunk_max_tokens": ("CHROMASYNC_CHUNK_MAX_TOKENS", None),
    "plan_ahead": ("CHROMASYNC_PLAN_AHEAD", "auto"),
    "date_fields": ("CHROMASYNC_DATE_FIELDS", "date,published_at"),
    "rerank_model": ("CHROMASYNC_RERANK_MODEL", None),
    "duplicate_threshold": ("CHROMASYNC_DUPLICATE_THRESHOLD", 0.95),
    "keyword_refresh_s": ("CHROMASYNC_KEYWORD_REFRESH_S", 300),
    "editor_uri": ("CHROMASYNC_EDITOR_URI", None),
    # The token clients of `serve`/`mcp`/an owner send (Bearer); environment or flag only.
    "api_token": ("CHROMASYNC_API_TOKEN", None),
    "llm_url": ("CHROMASYNC_LLM_URL", None),
    "llm_model": ("CHROMASYNC_LLM_MODEL", None),
    "llm_api_key": (("CHROMASYNC_LLM_API_KEY", "OPENAI_API_KEY"), None),
    "llm_timeout": ("CHROMASYNC_LLM_TIMEOUT", 120.0),
    "llm_retries": ("CHROMASYNC_LLM_RETRIES", 4),
    "answer_context_tokens": ("CHROMASYNC_ANSWER_CONTEXT_TOKENS", 3000),
    "answer_fallback": ("CHROMASYNC_ANSWER_FALLBACK", "none"),
    # `chromasync nats` (docs/nats.md): the server, its credentials (token and password:
    # environment only), the stream and durable consumer of change events, the subjects.
    "nats_url": ("CHROMASYNC_NATS_URL", DEFAULT_NATS_URL),
    "nats_user": ("CHROMASYNC_NATS_USER", None),
    "nats_password": ("CHROMASYNC_NATS_PASSWORD", None),
    "nats_token": ("CHROMASYNC_NATS_TOKEN", None),
    "nats_creds": ("CHROMASYNC_NATS_CREDS", None),
    "nats_stream": ("CHROMASYNC_NATS_STREAM", "CORPUS"),
    "nats_durable": ("CHROMASYNC_NATS_DURABLE", "chromasync"),
    "nats_event_subjects": ("CHROMASYNC_NATS_EVENT_SUBJECTS", ",".join(NATS_EVENT_SUBJECTS)),
    "nats_retrieve_subject": ("CHROMASYNC_NATS_RETRIEVE_SUBJECT", "corpus.retrieve.requested"),
    "nats_ask_subject": ("CHROMASYNC_NATS_ASK_SUBJECT", "corpus.ask.requested"),
    "nats_queue": ("CHROMASYNC_NATS_QUEUE", "chromasync"),
    "nats_corpus_root": ("CHROMASYNC_NATS_CORPUS_ROOT", None),
    "nats_batch_s": ("CHROMASYNC_NATS_BATCH_S", 0.5),
    "nats_batch_max": ("CHROMASYNC_NATS_BATCH_MAX", 256),
    "nats_ack_wait_s": ("CHROMASYNC_NATS_ACK_WAIT_S", 60.0),
    "nats_max_message_bytes": ("CHROMASYNC_NATS_MAX_MESSAGE_BYTES", 1024 * 1024),
}
_INTS = {
    "max_file_bytes",
    "cache_max_entries",
    "chunk_max_tokens",
    "embedding_dimension",
    "chroma_retries",
    "keyword_refresh_s",
    "llm_retries",
    "answer_context_tokens",
    "nats_batch_max",
    "nats_max_message_bytes",
}
_FLOATS = {
    "chroma_timeout",
    "duplicate_threshold",
    "llm_timeout",
    "nats_batch_s",
    "nats_ack_wait_s",
}
#: Settings that only the config file (or a flag, for Python callers) can set.
_FILE_ONLY = ("provider_options", "skip_paths", "privacy_keys", "nats_fields", "nats_clients")
#: Where a secret setting comes from instead of the config file.
SECRET_ENV = {
    "chroma_token": "CHROMASYNC_CHROMA_TOKEN",
    "api_key": "CHROMASYNC_EMBEDDING_API_KEY",
    "api_token": "CHROMASYNC_API_TOKEN",
    "llm_api_key": "CHROMASYNC_LLM_API_KEY",
    "nats_token": "CHROMASYNC_NATS_TOKEN",
    "nats_password": "CHROMASYNC_NATS_PASSWORD",
}


@dataclass(frozen=True, slots=True)
class FileValue:
    """One setting read from the config file, with the line it came from."""

    value: Any
    line: int


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """A parsed, validated config file (see `configfile.load_config_file`).

    `settings` maps Settings field names to values; `sources` are the declared sources,
    already validated (`configfile.SourceEntry`), with paths resolved against the file's
    folder.
    """

    path: Path
    settings: Mapping[str, FileValue] = field(default_factory=dict)
    sources: tuple[Any, ...] = ()
    sources_file: Path | None = None
    found_by: str = ""  # "--config", "CHROMASYNC_CONFIG" or "current folder"
    allow_roots: tuple[Path, ...] = ()  # `serve.allow_roots`: where clients may add sources
    inputs: tuple[tuple[str, bytes], ...] = ()  # (path, bytes) of each file read to make it
    #: (place, description): `place` is a source label or `label/path/prefix`; from each
    #: source's `context` field and the top-level `context:` mapping (see `context_for`).
    contexts: tuple[tuple[str, str], ...] = ()

    def context_for(self, source: str, path: str) -> str | None:
        """The description of the most specific place holding `source`'s `path`, or None."""
        full = f"{source}/{path}"
        best: tuple[int, str] | None = None
        for place, text in self.contexts:
            stem = place.rstrip("/")
            inside = full == stem or full.startswith(stem + "/")
            if inside and (best is None or len(stem) > best[0]):
                best = (len(stem), text)
        return best[1] if best else None

    def origin(self, line: int) -> str:
        return f"file {self.path}:{line}"


@dataclass(frozen=True, slots=True)
class Settings:
    data_dir: Path = Path(DEFAULT_DATA_DIR)
    collection: str = DEFAULT_COLLECTION
    collections: str = "per-kind"
    provider: str = "local"
    model: str | None = None
    chroma_url: str | None = None
    chroma_token: str | None = field(default=None, repr=False)
    tenant: str | None = None
    database: str | None = None
    chroma_timeout: float = 60.0
    chroma_retries: int = 6  # attempts per request, first included
    embedding_url: str | None = None
    embedding_api_key: str | None = field(default=None, repr=False)
    api_token: str | None = field(default=None, repr=False)
    embedding_dimension: int | None = None
    max_file_bytes: int = 8 * 1024 * 1024
    cache_max_entries: int = 500_000
    cache_dir: str | None = None
    chunk_max_tokens: int | None = None
    plan_ahead: str = "auto"  # read and chunk many files in a second process (sync/ahead.py)
    date_fields: str = "date,published_at"  # front-matter dates for --after/--before/--sort
    rerank_model: str | None = None  # a local cross-encoder folder; None: no reranking
    duplicate_threshold: float = 0.95  # `similar` flags documents at or above this score
    keyword_refresh_s: int = 300  # max age of the keyword mirror of a shared collection
    editor_uri: str | None = None  # a hit's "open in editor" link, see `check_editor_uri`
    llm_url: str | None = None  # an OpenAI-compatible chat endpoint; None: extractive answers
    llm_model: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)  # environment only
    llm_timeout: float = 120.0
    llm_retries: int = 4  # attempts per chat request, first included
    answer_context_tokens: int = 3000  # the prompt's budget for sources
    answer_fallback: str = "none"  # "extractive": answer anyway when the model is unreachable
    provider_options: Mapping[str, Any] = field(default_factory=dict)
    skip_paths: tuple[str, ...] = ()
    privacy_keys: tuple[str, ...] = DEFAULT_PRIVACY_KEYS
    nats_url: str = DEFAULT_NATS_URL
    nats_user: str | None = None
    nats_password: str | None = field(default=None, repr=False)  # environment only
    nats_token: str | None = field(default=None, repr=False)  # environment only
    nats_creds: str | None = None  # a NATS credentials file (JWT and seed): its path
    nats_stream: str = "CORPUS"
    nats_durable: str = "chromasync"
    nats_event_subjects: str = ",".join(NATS_EVENT_SUBJECTS)
    nats_retrieve_subject: str = "corpus.retrieve.requested"
    nats_ask_subject: str = "corpus.ask.requested"
    nats_queue: str = "chromasync"
    nats_corpus_root: str | None = None  # events' relative paths and replies' corpus_path
    nats_batch_s: float = 0.5  # how long a burst of events gathers before one sync
    nats_batch_max: int = 256  # events fetched at once
    nats_ack_wait_s: float = 60.0
    nats_max_message_bytes: int = 1024 * 1024
    #: request field -> metadata key (`funder_slug`, `record_uuid`, `published_at`,
    #: `pack_id`, `title`); file only
    nats_fields: Mapping[str, str] = field(default_factory=dict)
    #: client_id -> the collections it searches (`*`: any other client); file only
    nats_clients: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
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
        """(name, value, origin) rows for `config show`, secrets masked."""
        rows = []
        for name in (*_FIELDS, *_FILE_ONLY):
            value = getattr(self, name)
            if isinstance(value, tuple):
                text = ", ".join(value)
            elif isinstance(value, Mapping):
                text = ", ".join(
                    f"{k}={'|'.join(v) if isinstance(v, tuple) else v}"
                    for k, v in sorted(value.items())
                )
            else:
                text = "" if value is None else str(value)
            if name in SECRET_FIELDS and value:
                text = "****** (set)"
            rows.append((name, text, self.origins.get(name, "default")))
        if self.config_file is not None:
            rows.append(("config", str(self.config_file.path), self.origins.get("config", "")))
        return rows


def _check_nats(values: dict[str, Any], origins: Mapping[str, str]) -> None:
    """The NATS settings' ranges (`chromasync nats`)."""
    for name, low, high in (
        ("nats_batch_s", 0.0, 60.0),
        ("nats_batch_max", 1, 10_000),
        ("nats_ack_wait_s", 1.0, 3600.0),
        ("nats_max_message_bytes", 1024, 64 * 1024 * 1024),
    ):
        if not low <= values[name] <= high:
            raise ConfigError(f"{name} must be between {low} and {high} ({origins[name]})")
    if not str(values["nats_url"]).strip():
        raise ConfigError(f"nats_url is empty ({origins['nats_url']})")


def kind_slug(kind: str) -> str:
    """A source kind as it appears in a collection name: lower case, [a-z0-9_-]."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", kind.strip().lower()).strip("-_")
    return slug or "default"


#: The placeholders of `editor_uri` (rendered by `retrieve.editor.open_url`): `{path}` the
#: file's absolute path, `{relpath}` its path in its source, both URL-quoted; `{line}` the
#: hit's first line (1 when unknown); `{source}` the source's label, URL-quoted.
EDITOR_PLACEHOLDERS = ("path", "line", "source", "relpath")
#: Schemes an editor link may not use: a link that runs code where it is clicked.
_REFUSED_SCHEMES = ("javascript", "data", "vbscript")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
EDITOR_URI_MAX = 2048


def check_editor_uri(template: object, origin: str = "") -> str:
    """`template` if it is a usable `editor_uri`, else a `ConfigError` saying why.

    It must start with a URI scheme (`vscode:`, `idea:`, `file:`...; not `javascript:`,
    `data:` or `vbscript:`), hold no whitespace or control characters, and use
    only the `EDITOR_PLACEHOLDERS`, without format specs (`{{` and `}}` are literal braces).
    """
    import string

    where = f" ({origin})" if origin else ""
    text = str(template)
    if len(text) > EDITOR_URI_MAX:
        raise ConfigError(f"editor_uri is longer than {EDITOR_URI_MAX} characters{where}")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise ConfigError(
            f"editor_uri {text!r} holds whitespace or a control character; URL-quote it{where}"
        )
    scheme = _SCHEME.match(text)
    if scheme is None or scheme.group(1).lower() in _REFUSED_SCHEMES:
        raise ConfigError(
            f"editor_uri {text!r} must start with an editor's URI scheme such as "
            f"vscode://file{{path}}:{{line}} (not javascript:, data: or vbscript:){where}"
        )
    known = ", ".join("{" + name + "}" for name in EDITOR_PLACEHOLDERS)
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise ConfigError(
            f"editor_uri {text!r} is not a valid template ({exc}); write a literal brace as "
            f"{{{{ or }}}}{where}"
        ) from None
    for _literal, name, spec, conversion in fields:
        if name is None:
            continue
        if name not in EDITOR_PLACEHOLDERS or spec or conversion:
            shown = "{" + name + ("!" + conversion if conversion else "")
            shown += (":" + spec if spec else "") + "}"
            raise ConfigError(
                f"editor_uri {text!r} uses the unknown placeholder {shown}; the placeholders "
                f"are {known}{where}"
            )
    return text


def find_config_file(flag: str | Path | None, environ: Mapping[str, str], cwd: Path) -> Path | None:
    """The config file to read: `--config`, else `CHROMASYNC_CONFIG`, else ./chromasync.yaml.

    A file named by the flag or the environment must exist; the default one is optional.
    """
    named = str(flag) if flag else environ.get(CONFIG_ENV) or None
    if named:
        path = Path(named).expanduser()
        path = path if path.is_absolute() else cwd / path
        if not path.is_file():
            how = "--config" if flag else CONFIG_ENV
            raise ConfigError(f"config file {str(path)!r} (from {how}) does not exist")
        return path
    default = cwd / CONFIG_FILE_NAME
    return default if default.is_file() else None


def resolve_settings(
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    file: ConfigFile | None = None,
) -> Settings:
    """Settings from flags (None means not given), then `CHROMASYNC_*`, then the config
    file, then defaults; each value's origin is recorded."""
    flags = flags or {}
    environ = environ or {}
    file_values = file.settings if file is not None else {}
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    unknown = set(flags) - set(_FIELDS) - set(_FILE_ONLY)
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    for name, (env_names, default) in _FIELDS.items():
        names = (env_names,) if isinstance(env_names, str) else env_names
        env_name = next((n for n in names if environ.get(n)), None)
        if flags.get(name) is not None:
            value, origin = flags[name], "flag"
        elif env_name is not None:
            value, origin = environ[env_name], f"env {env_name}"
        elif name in file_values:
            value, origin = file_values[name].value, file.origin(file_values[name].line)  # type: ignore[union-attr]
        else:
            value, origin = default, "default"
        if name in _INTS | _FLOATS and value is not None:
            kind = int if name in _INTS else float
            try:
                value = kind(value)
            except (TypeError, ValueError):
                shown = "****" if name in SECRET_FIELDS else repr(value)
                raise ConfigError(f"{name} must be a number, got {shown} ({origin})") from None
        values[name] = value
        origins[name] = origin
    url = str(values.get("chroma_url") or "")
    if url.startswith("chroma-cloud") and not values["chroma_token"] and environ.get(CLOUD_KEY_ENV):
        values["chroma_token"] = environ[CLOUD_KEY_ENV]
        origins["chroma_token"] = f"env {CLOUD_KEY_ENV}"
    for name in _FILE_ONLY:
        if flags.get(name) is not None:
            values[name], origins[name] = flags[name], "flag"
        elif name in file_values:
            values[name] = file_values[name].value
            origins[name] = file.origin(file_values[name].line)  # type: ignore[union-attr]
        else:
            origins[name] = "default"
    if values["answer_fallback"] not in FALLBACKS:
        raise ConfigError(
            f"answer_fallback must be one of {', '.join(FALLBACKS)}, got "
            f"{values['answer_fallback']!r} ({origins['answer_fallback']})"
        )
    if values["answer_context_tokens"] < 64 or values["llm_timeout"] <= 0:
        raise ConfigError(
            "answer_context_tokens must be at least 64 and llm_timeout positive "
            f"({origins['answer_context_tokens']}; {origins['llm_timeout']})"
        )
    if values["llm_retries"] < 1:
        raise ConfigError(f"llm_retries must be at least 1 ({origins['llm_retries']})")
    if values["plan_ahead"] not in PLAN_AHEAD_MODES:
        raise ConfigError(
            f"plan_ahead must be one of {', '.join(PLAN_AHEAD_MODES)}, got "
            f"{values['plan_ahead']!r} ({origins['plan_ahead']})"
        )
    if values["collections"] not in COLLECTION_MODES:
        raise ConfigError(
            f"collections must be one of {', '.join(COLLECTION_MODES)}, got "
            f"{values['collections']!r} ({origins['collections']})"
        )
    _check_nats(values, origins)
    if values["editor_uri"]:
        values["editor_uri"] = check_editor_uri(values["editor_uri"], origins["editor_uri"])
    else:
        values["editor_uri"] = None
    values["data_dir"] = Path(values["data_dir"]).expanduser()
    values["provider_options"] = dict(values.get("provider_options") or {})
    values["skip_paths"] = tuple(values.get("skip_paths") or ())
    keys = values.get("privacy_keys")
    values["privacy_keys"] = (
        tuple(k.strip().lower() for k in keys) if keys else DEFAULT_PRIVACY_KEYS
    )
    values["nats_fields"] = dict(values.get("nats_fields") or {})
    values["nats_clients"] = {
        str(k): tuple(v) for k, v in dict(values.get("nats_clients") or {}).items()
    }
    if file is not None:
        origins["config"] = file.found_by
    return Settings(**values, config_file=file, origins=origins)
