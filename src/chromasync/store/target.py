"""Where the vectors live: the store's configuration and a server URL parsed into a target.

    http://HOST:PORT, https://HOST[:PORT]   a Chroma server (HttpClient)
    chroma-cloud://[HOST[:PORT]]            Chroma Cloud (CloudClient), always HTTPS
    chroma-cloud+http://HOST:PORT           the same without TLS: for tests only

Pure: nothing here imports chromadb or opens a connection (see `connect`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..datadir import CHROMA_DIR
from ..errors import ConfigError
from ..plan.limits import DEFAULT_BATCH
from ..records import StoreLimits
from ..retry import RetryPolicy

CLOUD_HOST = "api.trychroma.com"


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """Where the vectors live: an embedded store under `data_dir`, or a server `url`."""

    data_dir: Path
    url: str | None = None
    tenant: str | None = None
    database: str | None = None
    token: str | None = field(default=None, repr=False)  # never logged, never persisted
    timeout_s: float = 60.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    limits: StoreLimits | None = None  # override what the target advertises
    limits_batch_default: int = DEFAULT_BATCH  # records per write when none is advertised
    batch_size: int | None = None  # records per write request at most (`batch_size` setting)

    def describe(self) -> str:
        if not self.url:
            return str(self.data_dir / CHROMA_DIR)
        target = parse_target(self.url)
        return target.public_url

    def redact(self, text: str) -> str:
        """`text` with every secret of this configuration replaced by `***`."""
        if self.token:
            text = text.replace(self.token, "***")
        return text


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed server URL (see the module docstring)."""

    kind: str  # "http" or "cloud"
    host: str
    port: int
    ssl: bool

    @property
    def public_url(self) -> str:
        if self.kind == "cloud":
            scheme = "chroma-cloud" if self.ssl else "chroma-cloud+http"
            return f"{scheme}://{self.host}:{self.port}"
        return f"{'https' if self.ssl else 'http'}://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{'https' if self.ssl else 'http'}://{self.host}:{self.port}"


def parse_target(url: str) -> Target:
    """The client a URL asks for; credentials in the URL are refused (use the token)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # (its text may show a password's head as the port)
        raise ConfigError("chroma_url is not a valid URL") from None
    if parts.username or parts.password:
        raise ConfigError(
            "chroma_url must not hold credentials; pass the token in CHROMASYNC_CHROMA_TOKEN"
        )
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        if not parts.hostname:
            raise ConfigError("chroma_url names no host; use http://HOST:PORT")
        ssl = scheme == "https"
        return Target("http", parts.hostname, port or (443 if ssl else 8000), ssl)
    if scheme in ("chroma-cloud", "chroma-cloud+http"):
        ssl = scheme == "chroma-cloud"
        return Target("cloud", parts.hostname or CLOUD_HOST, port or (443 if ssl else 8000), ssl)
    raise ConfigError(
        f"chroma_url scheme {parts.scheme!r} is not supported; use http://, https:// or "
        "chroma-cloud://"
    )
