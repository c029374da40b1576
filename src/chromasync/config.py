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
SECRET_FIELDS = frozenset({"chroma_token", "api_key", "embedding_api_key"})
#: Chroma Cloud's own variable, used for the token only when the URL is chroma-cloud://.
CLOUD_KEY_ENV = "CHROMA_API_KEY"

#: field -> (environment variable(s), first set wins; default)
_FIELDS: dict[str, tuple[str | tuple[str, ...], Any]] = {
    "data_dir": ("CHROMASYNC_DATA_DIR", DEFAULT_DATA_DIR),
    "collection": ("CHROMASYNC_COLLECTION", DEFAULT_COLLECTION),
    "provider": ("CHROMASYNC_EMBEDDING_PROVIDER", "local"),
    "model": ("CHROMASYNC_EMBEDDING_MODEL", None),
    "chroma_url": ("CHROMASYNC_CHROMA_URL", None),
    "chroma_token": ("CHROMASYNC_CHROMA_TOKEN", None),
    "tenant": ("CHROMASYNC_CHROMA_TENANT", None),
    "database": ("CHROMASYNC_CHROMA_DATABASE", None),
    "chroma_timeout": ("CHROMASYNC_CHROMA_TIMEOUT", 60.0),
    "chroma_retries": ("CHROMASYNC_CHROMA_RETRIES", 6),
    "embedding_url": ("CHROMASYNC_EMBEDDING_URL", None),
    "embedding_api_key": (("CHROMASYNC_OPENAI_API_KEY", "OPENAI_API_KEY"), None),
    "embedding_dimension": ("CHROMASYNC_EMBEDDING_DIMENSION", None),
    "max_file_bytes": ("CHROMASYNC_MAX_FILE_BYTES", 8 * 1024 * 1024),
    "cache_max_entries": ("CHROMASYNC_CACHE_MAX_ENTRIES", 500_000),
    "cache_dir": ("CHROMASYNC_CACHE_DIR", None),
}
_INTS = {"max_file_bytes", "cache_max_entries", "embedding_dimension", "chroma_retries"}
_FLOATS = {"chroma_timeout"}


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
    chroma_timeout: float = 60.0
    chroma_retries: int = 6  # attempts per request, first included
    embedding_url: str | None = None
    embedding_api_key: str | None = field(default=None, repr=False)
    embedding_dimension: int | None = None
    max_file_bytes: int = 8 * 1024 * 1024
    cache_max_entries: int = 500_000
    cache_dir: str | None = None
    provider_options: Mapping[str, Any] = field(default_factory=dict)
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
    for name, (env_names, default) in _FIELDS.items():
        names = (env_names,) if isinstance(env_names, str) else env_names
        env_name = next((n for n in names if environ.get(n)), None)
        if flags.get(name) is not None:
            value, origin = flags[name], "flag"
        elif env_name is not None:
            value, origin = environ[env_name], f"env {env_name}"
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
    values["data_dir"] = Path(values["data_dir"]).expanduser()
    return Settings(
        **values, provider_options=dict(flags.get("provider_options") or {}), origins=origins
    )
