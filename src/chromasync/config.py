"""Settings: one function resolves them, flag over environment over default.

`resolve_settings(flags, environ)` is pure: it takes the environment as a parameter and
records where each value came from, for `chromasync config show`. Secrets (the Chroma
token, API keys) come only from flags or the environment and are never printed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError

DEFAULT_DATA_DIR = ".chromasync"
DEFAULT_COLLECTION = "chromasync"
SECRET_FIELDS = frozenset({"chroma_token", "api_key"})

#: field -> (environment variable, default, parser)
_FIELDS: dict[str, tuple[str, Any]] = {
    "data_dir": ("CHROMASYNC_DATA_DIR", DEFAULT_DATA_DIR),
    "collection": ("CHROMASYNC_COLLECTION", DEFAULT_COLLECTION),
    "provider": ("CHROMASYNC_EMBEDDING_PROVIDER", "local"),
    "model": ("CHROMASYNC_EMBEDDING_MODEL", None),
    "chroma_url": ("CHROMASYNC_CHROMA_URL", None),
    "chroma_token": ("CHROMASYNC_CHROMA_TOKEN", None),
    "tenant": ("CHROMASYNC_CHROMA_TENANT", None),
    "database": ("CHROMASYNC_CHROMA_DATABASE", None),
    "max_file_bytes": ("CHROMASYNC_MAX_FILE_BYTES", 8 * 1024 * 1024),
    "cache_max_entries": ("CHROMASYNC_CACHE_MAX_ENTRIES", 500_000),
    "cache_dir": ("CHROMASYNC_CACHE_DIR", None),
    "date_fields": ("CHROMASYNC_DATE_FIELDS", "date,published_at"),
    "rerank_model": ("CHROMASYNC_RERANK_MODEL", None),
    "duplicate_threshold": ("CHROMASYNC_DUPLICATE_THRESHOLD", 0.95),
    "keyword_refresh_s": ("CHROMASYNC_KEYWORD_REFRESH_S", 300),
}
_INTS = {"max_file_bytes", "cache_max_entries", "keyword_refresh_s"}
_FLOATS = {"duplicate_threshold"}


@dataclass(frozen=True, slots=True)
class Settings:
    data_dir: Path = Path(DEFAULT_DATA_DIR)
    collection: str = DEFAULT_COLLECTION
    provider: str = "local"
    model: str | None = None
    chroma_url: str | None = None
    chroma_token: str | None = field(default=None, repr=False)
    tenant: str | None = None
    database: str | None = None
    max_file_bytes: int = 8 * 1024 * 1024
    cache_max_entries: int = 500_000
    cache_dir: str | None = None
    date_fields: str = "date,published_at"  # front-matter dates for --after/--before/--sort
    rerank_model: str | None = None  # a local cross-encoder folder; None: no reranking
    duplicate_threshold: float = 0.95  # `similar` flags documents at or above this score
    keyword_refresh_s: int = 300  # max age of the keyword mirror of a shared collection
    provider_options: Mapping[str, Any] = field(default_factory=dict)
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)

    def embedding_options(self) -> dict[str, Any]:
        options = dict(self.provider_options)
        if self.model:
            options.setdefault("model", self.model)
        if self.cache_dir:
            options.setdefault("cache_dir", self.cache_dir)
        return options

    @property
    def date_field_names(self) -> tuple[str, ...]:
        return tuple(f.strip() for f in self.date_fields.split(",") if f.strip())

    def shown(self) -> list[tuple[str, str, str]]:
        """(name, value, origin) rows for `config show`, secrets masked."""
        rows = []
        for name in _FIELDS:
            value = getattr(self, name)
            text = "" if value is None else str(value)
            if name in SECRET_FIELDS and value:
                text = "****** (set)"
            rows.append((name, text, self.origins.get(name, "default")))
        return rows


def resolve_settings(
    flags: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Settings from flags (None means not given), then `CHROMASYNC_*`, then defaults."""
    flags = flags or {}
    environ = environ or {}
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    unknown = set(flags) - set(_FIELDS) - {"provider_options"}
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    for name, (env_name, default) in _FIELDS.items():
        if flags.get(name) is not None:
            value, origin = flags[name], "flag"
        elif environ.get(env_name):
            value, origin = environ[env_name], f"env {env_name}"
        else:
            value, origin = default, "default"
        if name in _INTS and value is not None:
            try:
                value = int(value)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"{name} must be an integer, got {value!r} ({origin})") from exc
        if name in _FLOATS and value is not None:
            try:
                value = float(value)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"{name} must be a number, got {value!r} ({origin})") from exc
        values[name] = value
        origins[name] = origin
    values["data_dir"] = Path(values["data_dir"]).expanduser()
    return Settings(
        **values, provider_options=dict(flags.get("provider_options") or {}), origins=origins
    )
