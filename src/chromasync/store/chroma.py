"""The vector store: the only module that imports chromadb.

`open_store` gives an embedded PersistentClient under the data dir by default, or a client
for a Chroma server. The server URL selects the client:

    http://HOST:PORT, https://HOST[:PORT]   a Chroma server (HttpClient); the token, if any,
                                            goes as `Authorization: Bearer`; HTTPS verifies
                                            certificates (a private CA: SSL_CERT_FILE)
    chroma-cloud://                         Chroma Cloud (CloudClient) at api.trychroma.com;
    chroma-cloud://HOST[:PORT]              another Cloud-compatible host (always HTTPS);
                                            the API key is the token (CHROMASYNC_CHROMA_TOKEN,
                                            else CHROMA_API_KEY)
    chroma-cloud+http://HOST:PORT           the same without TLS: for tests only

Against a server every request goes through `retry.RetryingTransport` (timeouts, bounded
exponential backoff with jitter on connection errors, 429 and 5xx, `Retry-After` honoured);
401/403 fail at once with a message about the credentials. Secrets never appear in a
message: they are sent in headers only, and any error text is scrubbed of them.

A `Collection` wraps one Chroma collection: batched writes no larger than the target
allows (see `preflight`), paged reads, and Chroma's columnar results turned into rows. The
collection's metadata records the provider and model that made its vectors, and their
dimension; opening it with another model is refused unless the caller re-embeds.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ..datadir import CHROMA_DIR
from ..errors import ChromasyncError, ConfigError, EmbeddingError, NotFound, StoreError
from ..plan.limits import CLOUD_LIMITS, DEFAULT_BATCH, combine_limits
from ..records import ChunkRecord, Hit, StoreLimits
from ..retry import GaveUp, Refused, RetryPolicy

log = logging.getLogger(__name__)

MODEL_KEY = "chromasync_embedding_model"
PROVIDER_KEY = "chromasync_embedding_provider"
DIMENSION_KEY = "chromasync_dimension"
SCHEMA_KEY = "chromasync_schema"
PAGE = 1000
CLOUD_HOST = "api.trychroma.com"
T = TypeVar("T")


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
    except ValueError as exc:
        raise ConfigError(f"chroma_url is not a valid URL: {exc}") from None
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


@dataclass(frozen=True, slots=True)
class StoredRecord:
    id: str
    metadata: Mapping[str, Any]
    document: str | None = None


class Store:
    def __init__(self, client: Any, config: StoreConfig, target: Target | None = None) -> None:
        self._client = client
        self.config = config
        self.target = target
        try:
            self.advertised_batch: int | None = int(client.get_max_batch_size())
        except Exception as exc:  # noqa: BLE001 - servers without the endpoint
            reason = self.config.redact(str(exc))
            log.info("%s advertises no batch size (%s)", self.describe(), reason)
            self.advertised_batch = None
        if target is not None and (self.advertised_batch or 0) <= 0:
            # chromadb's client checks every write against the advertised size, so -1 would
            # refuse them all: tell it the size we write in instead (see `preflight`).
            checks = getattr(getattr(client, "_server", None), "pre_flight_checks", None)
            if isinstance(checks, dict):
                checks["max_batch_size"] = self.config.limits_batch_default

    def describe(self) -> str:
        return self.config.describe()

    @property
    def limits(self) -> StoreLimits:
        """What this target accepts: Chroma Cloud's limits, or what the server advertises."""
        if self.config.limits is not None:
            base = self.config.limits
        elif self.target is not None and self.target.kind == "cloud":
            base = CLOUD_LIMITS
        else:
            base = StoreLimits(name=f"Chroma at {self.describe()}")
        return combine_limits(self.advertised_batch, base)

    @property
    def max_batch(self) -> int:
        limit = self.limits.max_batch
        return limit if limit is not None and limit > 0 else DEFAULT_BATCH

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except ChromasyncError:
            raise
        except Exception as exc:
            raise self._error(what, exc) from exc

    def _error(self, what: str, exc: BaseException) -> StoreError:
        return store_error(self.config, what, exc)

    def list_collections(self) -> list[str]:
        return sorted(
            self._call(
                "list collections", lambda: [c.name for c in self._client.list_collections()]
            )
        )

    def collection(
        self,
        name: str,
        model_id: str | None = None,
        dimension: int | None = None,
        create: bool = True,
        provider: str | None = None,
    ) -> Collection:
        """Open (or create) `name`; with `model_id`, refuse a collection of another model.

        With `provider="server"` the collection must exist and embed documents itself (its
        embedding function): it is opened with that function, never created.
        """
        if provider == "server":
            return self._server_collection(name)
        if not create:
            try:
                raw = self._client.get_collection(name)
            except Exception as exc:
                if _find(exc, (GaveUp, Refused)) is not None:
                    raise self._error(f"open collection {name!r}", exc) from exc
                raise NotFound(
                    f"collection {name!r} does not exist in {self.describe()}; "
                    "run `chromasync ingest` first"
                ) from exc
            return Collection(raw, self)
        metadata: dict[str, Any] = {"hnsw:space": "cosine", SCHEMA_KEY: 1}
        if model_id is not None:
            metadata[MODEL_KEY] = model_id
            metadata[DIMENSION_KEY] = dimension or 0
            if provider:
                metadata[PROVIDER_KEY] = provider
        raw = self._call(
            f"open collection {name!r}",
            lambda: self._client.get_or_create_collection(
                name, metadata=metadata, embedding_function=None
            ),
        )
        collection = Collection(raw, self)
        if model_id is not None:
            collection.check_model(model_id, dimension)
        return collection

    def _server_collection(self, name: str) -> Collection:
        try:
            raw = self._client.get_collection(name)
        except Exception as exc:
            if _find(exc, (GaveUp, Refused)) is not None:
                raise self._error(f"open collection {name!r}", exc) from exc
            raise NotFound(
                f"collection {name!r} does not exist in {self.describe()}; the `server` "
                "provider needs a collection created with its embedding function first"
            ) from exc
        try:
            function = (raw.configuration or {}).get("embedding_function")
        except Exception as exc:
            raise EmbeddingError(
                f"collection {name!r} in {self.describe()}: its embedding function cannot be "
                f"loaded here ({exc}); install the package that provides it"
            ) from exc
        ef_name = _ef_name(function)
        if function is None or ef_name in (None, "default"):
            raise EmbeddingError(
                f"collection {name!r} in {self.describe()} has "
                + ("no embedding function" if function is None else "Chroma's default one")
                + "; the `server` provider needs the collection to carry an explicit one "
                "(the default downloads a model at run time). Recreate the collection with "
                "an embedding function, or use another provider"
            )
        collection = Collection(raw, self, embeds=True)
        collection.check_model("server", None)
        if collection.model_id is None:
            wanted = {MODEL_KEY: "server", PROVIDER_KEY: "server", "chromasync_function": ef_name}
            merged = {**collection.metadata, **wanted}
            merged = {k: v for k, v in merged.items() if not k.startswith("hnsw:")}
            self._call(f"record the provider of {name!r}", lambda: raw.modify(metadata=merged))
        return collection

    def delete_collection(self, name: str) -> None:
        self._call(f"delete collection {name!r}", lambda: self._client.delete_collection(name))


def store_error(config: StoreConfig, what: str, exc: BaseException) -> StoreError:
    """A plain `StoreError` for a failed call: credentials, give-up, TLS, or the cause."""
    where = f"Chroma at {config.describe()}"
    found = _find(exc, (GaveUp, Refused))
    if isinstance(found, Refused) or _status_of(exc) in (401, 403):
        status = found.status if isinstance(found, Refused) else _status_of(exc)
        return StoreError(
            f"{where} refused the credentials (HTTP {status}) for {what}; check the token "
            "(CHROMASYNC_CHROMA_TOKEN or --chroma-token; CHROMA_API_KEY for Chroma Cloud) "
            "and the tenant and database"
        )
    if isinstance(found, GaveUp):
        return StoreError(
            f"{where}: {what} failed: {config.redact(str(found))}; the server is "
            "unreachable or overloaded, re-run when it is back (writes are idempotent)"
        )
    text = config.redact(f"{type(exc).__name__}: {exc}")
    if _find(exc, (ssl.SSLError,)) is not None or "CERTIFICATE_VERIFY_FAILED" in text:
        return StoreError(
            f"{where}: {what} failed: TLS: {text}; certificates are verified (for a "
            "private CA set SSL_CERT_FILE)"
        )
    return StoreError(f"{where}: {what} failed: {text}")


def _ef_name(function: Any) -> str | None:
    if function is None:
        return None
    try:
        return str(function.name())
    except Exception:  # noqa: BLE001 - legacy functions without a name
        return type(function).__name__


def _find(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> BaseException | None:
    seen: BaseException | None = exc
    depth = 0
    while seen is not None and depth < 20:
        if isinstance(seen, kinds):
            return seen
        seen = seen.__cause__ or seen.__context__
        depth += 1
    return None


def _status_of(exc: BaseException) -> int | None:
    code = getattr(exc, "code", None)
    if callable(code):
        try:
            value = code()
        except Exception:  # noqa: BLE001
            return None
        return value if isinstance(value, int) else None
    return None


class Collection:
    def __init__(self, raw: Any, store: Store, embeds: bool = False) -> None:
        self._raw = raw
        self._store = store
        self.name: str = raw.name
        #: True when the collection's own embedding function makes the vectors (`server`).
        self.embeds = embeds

    @property
    def metadata(self) -> Mapping[str, Any]:
        return dict(self._raw.metadata or {})

    @property
    def model_id(self) -> str | None:
        value = self.metadata.get(MODEL_KEY)
        return str(value) if value else None

    def check_model(self, model_id: str, dimension: int | None) -> None:
        stored = self.model_id
        if stored is None:
            if self.count() == 0:
                return
            raise EmbeddingError(
                f"collection {self.name!r} has vectors of an unknown model; "
                "use another collection, or ingest with --reembed"
            )
        if stored != model_id:
            raise EmbeddingError(
                f"collection {self.name!r} holds vectors of {stored!r} "
                f"(dimension {self.metadata.get(DIMENSION_KEY)}), but the provider is "
                f"{model_id!r} (dimension {dimension}); re-run with --reembed to regenerate "
                "every vector, or choose another collection"
            )

    def other_source(self, sources: Sequence[str]) -> str | None:
        """The label of one record's source that is not in `sources`, or None."""
        where: dict[str, Any] = {"source": {"$nin": list(sources)}} if sources else {}
        got = self._store._call(
            f"read records of {self.name!r}",
            lambda: self._raw.get(where=where or None, include=["metadatas"], limit=1),
        )
        metas = got.get("metadatas") or []
        return str(metas[0].get("source", "")) if metas else None

    def count(self) -> int:
        return int(self._store._call(f"count {self.name!r}", self._raw.count))

    def upsert(
        self,
        records: Sequence[ChunkRecord],
        vectors: Sequence[Sequence[float]] | None,
        batch_size: int | None = None,
        unset: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Write `records` in requests of at most `batch_size` (default: the target's limit).

        `vectors` None: the collection embeds the documents itself (`server` provider).
        `unset`: id -> metadata keys a record held and must lose (Chroma's upsert merges a
        record's metadata with what it held: a key is removed only by setting it to None).
        """
        gone = unset or {}
        if vectors is None and not self.embeds:
            raise EmbeddingError(f"collection {self.name!r} cannot embed; pass vectors")
        step = min(batch_size or self._store.max_batch, self._store.max_batch)
        for start in range(0, len(records), step):
            part = records[start : start + step]
            vecs = None if vectors is None else [list(v) for v in vectors[start : start + step]]
            self._store._call(
                f"upsert into {self.name!r}",
                lambda part=part, vecs=vecs: self._raw.upsert(  # type: ignore[misc]
                    ids=[r.id for r in part],
                    embeddings=vecs,
                    documents=[r.document for r in part],
                    metadatas=[{**r.metadata, **dict.fromkeys(gone.get(r.id, ()))} for r in part],
                ),
            )

    def delete(self, ids: Sequence[str]) -> None:
        step = self._store.max_batch
        for start in range(0, len(ids), step):
            part = list(ids[start : start + step])
            self._store._call(
                f"delete from {self.name!r}",
                lambda part=part: self._raw.delete(ids=part),  # type: ignore[misc]
            )

    def embeddings(self, ids: Sequence[str]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for start in range(0, len(ids), PAGE):
            part = list(ids[start : start + PAGE])
            got = self._store._call(
                f"read vectors from {self.name!r}",
                lambda part=part: self._raw.get(ids=part, include=["embeddings"]),  # type: ignore[misc]
            )
            for rid, vector in zip(got["ids"], got["embeddings"], strict=True):
                out[rid] = [float(x) for x in vector]
        return out

    def iter_records(
        self, where: Mapping[str, Any] | None = None, documents: bool = False
    ) -> Iterator[StoredRecord]:
        """Every record matching `where`, page by page (metadata, optionally documents)."""
        include = ["metadatas", "documents"] if documents else ["metadatas"]
        offset = 0
        while True:
            got = self._store._call(
                f"read records of {self.name!r}",
                lambda offset=offset: self._raw.get(  # type: ignore[misc]
                    where=dict(where) if where else None,
                    include=include,
                    limit=PAGE,
                    offset=offset,
                ),
            )
            ids = got["ids"]
            docs = got.get("documents") or [None] * len(ids)
            for rid, meta, doc in zip(ids, got["metadatas"], docs, strict=True):
                yield StoredRecord(rid, meta or {}, doc)
            if len(ids) < PAGE:
                return
            offset += PAGE

    def get(self, ids: Sequence[str]) -> list[StoredRecord]:
        got = self._store._call(
            f"read records of {self.name!r}",
            lambda: self._raw.get(ids=list(ids), include=["metadatas", "documents"]),
        )
        return [
            StoredRecord(i, m or {}, d)
            for i, m, d in zip(got["ids"], got["metadatas"], got["documents"], strict=True)
        ]

    def query(
        self,
        vector: Sequence[float] | str,
        k: int,
        where: Mapping[str, Any] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[Hit]:
        """Nearest records to `vector` (cosine), among `ids` when given; score 1 - distance.

        A string is embedded by the collection's own function (`server` provider).
        """
        if ids is not None and not ids:
            return []
        query: dict[str, Any] = (
            {"query_texts": [vector]}
            if isinstance(vector, str)
            else {"query_embeddings": [list(vector)]}
        )
        got = self._store._call(
            f"query {self.name!r}",
            lambda: self._raw.query(
                **query,
                n_results=k,
                where=dict(where) if where else None,
                ids=list(ids) if ids is not None else None,
                include=["metadatas", "documents", "distances"],
            ),
        )
        return [
            hit_from_row(rid, meta or {}, doc or "", 1.0 - float(dist), self.name)
            for rid, meta, doc, dist in zip(
                got["ids"][0],
                got["metadatas"][0],
                got["documents"][0],
                got["distances"][0],
                strict=True,
            )
        ]


def hit_from_row(
    rid: str, meta: Mapping[str, Any], document: str, score: float, collection: str
) -> Hit:
    return Hit.from_metadata(rid, meta, document, score, collection)


def open_store(config: StoreConfig, existing: bool = False) -> Store:
    """Connect to the configured store (importing chromadb only now).

    With `existing`, an embedded store that was never created raises `NotFound` instead of
    being created (a dry run must write nothing).
    """
    target = parse_target(config.url) if config.url else None
    if existing and target is None and not (config.data_dir / CHROMA_DIR).is_dir():
        raise NotFound(f"no embedded store at {config.describe()} yet")
    try:
        import chromadb
        from chromadb.config import Settings
    except ImportError as exc:  # pragma: no cover - a dependency
        raise StoreError("chromadb is not installed") from exc
    settings = Settings(anonymized_telemetry=False)
    if target is None:
        path = config.data_dir / CHROMA_DIR
        try:
            path.mkdir(parents=True, exist_ok=True)
            client = chromadb.PersistentClient(path=str(path), settings=settings)
        except Exception as exc:
            raise StoreError(f"cannot open Chroma at {config.describe()}: {exc}") from exc
        return Store(client, config)
    _probe(target, config)
    try:
        if target.kind == "cloud":
            if not config.token:
                raise ConfigError(
                    f"Chroma Cloud at {config.describe()} needs an API key: set CHROMA_API_KEY "
                    "or CHROMASYNC_CHROMA_TOKEN"
                )
            client = chromadb.CloudClient(
                tenant=config.tenant,
                database=config.database,
                api_key=config.token,
                settings=settings,
                cloud_host=target.host,
                cloud_port=target.port,
                enable_ssl=target.ssl,
            )
        else:
            headers = {"Authorization": f"Bearer {config.token}"} if config.token else None
            client = chromadb.HttpClient(
                host=target.host,
                port=target.port,
                ssl=target.ssl,
                headers=headers,
                settings=settings,
                tenant=config.tenant or "default_tenant",
                database=config.database or "default_database",
            )
    except ChromasyncError:
        raise
    except Exception as exc:
        raise store_error(config, "connect", exc) from exc
    _install_transport(client, config)
    return Store(client, config, target)


def _transport(config: StoreConfig) -> Any:
    import httpx

    from ..retry import RetryingTransport

    return RetryingTransport(httpx.HTTPTransport(verify=True), config.retry)


def _timeout(config: StoreConfig) -> Any:
    import httpx

    return httpx.Timeout(config.timeout_s, connect=min(config.timeout_s, 10.0))


def _probe(target: Target, config: StoreConfig) -> None:
    """One heartbeat, with retries and timeouts, before chromadb's own client connects."""
    import httpx

    url = f"{target.base_url}/api/v2/heartbeat"
    headers = {}
    if config.token:
        if target.kind == "cloud":
            headers["X-Chroma-Token"] = config.token
        else:
            headers["Authorization"] = f"Bearer {config.token}"
    try:
        with httpx.Client(
            transport=_transport(config), timeout=_timeout(config), headers=headers
        ) as http:
            http.get(url)
    except Exception as exc:
        raise store_error(config, "heartbeat", exc) from exc


def _install_transport(client: Any, config: StoreConfig) -> None:
    """Replace chromadb's HTTP session (no timeout, no retries) with ours, same headers."""
    import httpx

    server = getattr(client, "_server", None)
    session = getattr(server, "_session", None)
    if not isinstance(session, httpx.Client):  # pragma: no cover - a chromadb upgrade
        raise StoreError(
            f"cannot configure retries for Chroma at {config.describe()}: this chromadb "
            "version keeps its HTTP session elsewhere; install the pinned chromadb"
        )
    replacement = httpx.Client(
        transport=_transport(config), timeout=_timeout(config), headers=session.headers
    )
    server._session = replacement  # type: ignore[union-attr]
    session.close()
