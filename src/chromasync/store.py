"""The vector store: the only module that imports chromadb.

`open_store` gives an embedded PersistentClient under the data dir by default, or an
HttpClient for a Chroma server. A `Collection` wraps one Chroma collection: batched writes
no larger than the server allows, paged reads, and Chroma's columnar results turned into
rows. The collection's metadata records the embedding model and dimension that made its
vectors; opening it with another model is refused unless the caller re-embeds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .errors import EmbeddingError, NotFound, StoreError
from .records import ChunkRecord, Hit

log = logging.getLogger(__name__)

MODEL_KEY = "chromasync_embedding_model"
DIMENSION_KEY = "chromasync_dimension"
SCHEMA_KEY = "chromasync_schema"
PAGE = 1000
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """Where the vectors live: an embedded store under `data_dir`, or a server `url`."""

    data_dir: Path
    url: str | None = None
    tenant: str | None = None
    database: str | None = None
    token: str | None = None  # never logged, never persisted

    def describe(self) -> str:
        return self.url or str(self.data_dir / "chroma")


@dataclass(frozen=True, slots=True)
class StoredRecord:
    id: str
    metadata: Mapping[str, Any]
    document: str | None = None


class Store:
    def __init__(self, client: Any, config: StoreConfig) -> None:
        self._client = client
        self.config = config
        try:
            self.max_batch = int(client.get_max_batch_size())
        except Exception:  # noqa: BLE001 - servers without the endpoint
            self.max_batch = -1
        if self.max_batch <= 0:
            self.max_batch = 1000

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except (StoreError, NotFound, EmbeddingError):
            raise
        except Exception as exc:
            raise StoreError(f"Chroma at {self.config.describe()}: {what} failed: {exc}") from exc

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
    ) -> Collection:
        """Open (or create) `name`; with `model_id`, refuse a collection of another model."""
        if not create:
            try:
                raw = self._client.get_collection(name)
            except Exception as exc:
                raise NotFound(
                    f"collection {name!r} does not exist in {self.config.describe()}; "
                    "run `chromasync ingest` first"
                ) from exc
            return Collection(raw, self)
        metadata: dict[str, Any] = {"hnsw:space": "cosine", SCHEMA_KEY: 1}
        if model_id is not None:
            metadata[MODEL_KEY] = model_id
            metadata[DIMENSION_KEY] = dimension or 0
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

    def delete_collection(self, name: str) -> None:
        self._call(f"delete collection {name!r}", lambda: self._client.delete_collection(name))


class Collection:
    def __init__(self, raw: Any, store: Store) -> None:
        self._raw = raw
        self._store = store
        self.name: str = raw.name

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

    def count(self) -> int:
        return int(self._store._call(f"count {self.name!r}", self._raw.count))

    def upsert(self, records: Sequence[ChunkRecord], vectors: Sequence[Sequence[float]]) -> None:
        for start in range(0, len(records), self._store.max_batch):
            part = records[start : start + self._store.max_batch]
            vecs = vectors[start : start + self._store.max_batch]
            self._store._call(
                f"upsert into {self.name!r}",
                lambda part=part, vecs=vecs: self._raw.upsert(  # type: ignore[misc]
                    ids=[r.id for r in part],
                    embeddings=[list(v) for v in vecs],
                    documents=[r.document for r in part],
                    metadatas=[dict(r.metadata) for r in part],
                ),
            )

    def delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), self._store.max_batch):
            part = list(ids[start : start + self._store.max_batch])
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
        vector: Sequence[float],
        k: int,
        where: Mapping[str, Any] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[Hit]:
        """Nearest records to `vector` (cosine), among `ids` when given; score 1 - distance."""
        if ids is not None and not ids:
            return []
        got = self._store._call(
            f"query {self.name!r}",
            lambda: self._raw.query(
                query_embeddings=[list(vector)],
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
    return Hit(
        id=rid,
        path=str(meta.get("path", "")),
        source=str(meta.get("source", "")),
        heading=str(meta.get("heading", "")),
        start_line=int(meta.get("start_line", 0) or 0),
        end_line=int(meta.get("end_line", 0) or 0),
        score=score,
        text=document,
        collection=collection,
        metadata=dict(meta),
    )


def open_store(config: StoreConfig, existing: bool = False) -> Store:
    """Connect to the configured store (importing chromadb only now).

    With `existing`, an embedded store that was never created raises `NotFound` instead of
    being created (a dry run must write nothing).
    """
    if existing and not config.url and not (config.data_dir / "chroma").is_dir():
        raise NotFound(f"no embedded store at {config.describe()} yet")
    try:
        import chromadb
        from chromadb.config import Settings
    except ImportError as exc:  # pragma: no cover - a dependency
        raise StoreError("chromadb is not installed") from exc
    settings = Settings(anonymized_telemetry=False)
    try:
        if config.url:
            from urllib.parse import urlparse

            parsed = urlparse(config.url)
            headers = {"Authorization": f"Bearer {config.token}"} if config.token else None
            client = chromadb.HttpClient(
                host=parsed.hostname or "localhost",
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                headers=headers,
                settings=settings,
                tenant=config.tenant or "default_tenant",
                database=config.database or "default_database",
            )
        else:
            path = config.data_dir / "chroma"
            path.mkdir(parents=True, exist_ok=True)
            client = chromadb.PersistentClient(path=str(path), settings=settings)
    except Exception as exc:
        raise StoreError(f"cannot open Chroma at {config.describe()}: {exc}") from exc
    return Store(client, config)
