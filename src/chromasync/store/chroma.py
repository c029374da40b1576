"""The vector store: a `Store` (a Chroma client) and its `Collection`s. Only this folder
imports chromadb (`connect` opens a store; `target` says where it is).

Design notes: docs/internals.md, `store/chroma.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from ..errors import ChromasyncError, EmbeddingError, NotFound
from ..metakeys import OWNER_KEY
from ..plan.limits import CLOUD_LIMITS, DEFAULT_BATCH, combine_limits
from ..records import ChunkRecord, Hit, StoreLimits
from ..retry import GaveUp, Refused
from ..versions import CHUNKING_VERSION
from .failures import _ef_name, _find, _refused_filter, store_error
from .target import StoreConfig, Target

log = logging.getLogger(__name__)

MODEL_KEY = "chromasync_embedding_model"
PROVIDER_KEY = "chromasync_embedding_provider"
DIMENSION_KEY = "chromasync_dimension"
SCHEMA_KEY = "chromasync_schema"
#: The chunker version (`versions.CHUNKING_VERSION`) of the chunks whose vectors it holds.
CHUNKING_KEY = "chromasync_chunking_version"
PAGE = 1000
CLOUD_HOST = "api.trychroma.com"
T = TypeVar("T")


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
            log.info("%s advertises no batch size (%s)", self.config.describe(), reason)
            self.advertised_batch = None
        if target is not None and (self.advertised_batch or 0) <= 0:
            # chromadb's client checks every write against the advertised size, so -1 would
            # refuse them all: tell it the size we write in instead (see `preflight`).
            checks = getattr(getattr(client, "_server", None), "pre_flight_checks", None)
            if isinstance(checks, dict):
                checks["max_batch_size"] = self.config.limits_batch_default

    @property
    def limits(self) -> StoreLimits:
        """What this target accepts: Chroma Cloud's limits, or what the server advertises."""
        if self.config.limits is not None:
            base = self.config.limits
        elif self.target is not None and self.target.kind == "cloud":
            base = CLOUD_LIMITS
        else:
            base = StoreLimits(name=f"Chroma at {self.config.describe()}")
        limits = combine_limits(self.advertised_batch, base)
        cap = self.config.batch_size
        if cap is not None and (limits.max_batch is None or cap < limits.max_batch):
            limits = replace(limits, max_batch=cap)  # the user's batch size, when smaller
        return limits

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
            raise store_error(self.config, what, exc) from exc

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
        adopt: bool = False,
    ) -> Collection:
        """Open (or create) `name`; with `model_id`, refuse a collection of another model.

        An existing collection that records no model is adopted (the model written into
        its metadata) when it is empty, when its own embedding function runs this model,
        or with `adopt` (`--reembed`: its other records are kept, untouched).

        With `provider="server"` the collection must exist and embed documents itself (its
        embedding function): it is opened with that function, never created.
        """
        if provider == "server":
            return self._server_collection(name)
        if not create:
            return Collection(self._existing(name, "run `chromasync ingest` first"), self)
        from .peers import peer_function

        metadata: dict[str, Any] = {"hnsw:space": "cosine", SCHEMA_KEY: 1}
        if model_id is not None:
            metadata |= _model_keys(model_id, dimension, provider)
        # a new collection records Chroma's function for this model, so that other
        # clients embed their text queries as chromasync does (store/peers.py)
        function = peer_function(model_id, provider)
        raw = self._call(
            f"open collection {name!r}",
            lambda: self._client.get_or_create_collection(
                name, metadata=metadata, embedding_function=function
            ),
        )
        collection = Collection(raw, self)
        if model_id is not None:
            collection.check_model(model_id, dimension, provider, adopt)
        return collection

    def _existing(self, name: str, hint: str) -> Any:
        """The raw collection `name`; NotFound (with `hint`) when it does not exist."""
        try:
            return self._client.get_collection(name)
        except Exception as exc:
            if _find(exc, (GaveUp, Refused)) is not None:
                raise store_error(self.config, f"open collection {name!r}", exc) from exc
            raise NotFound(
                f"collection {name!r} does not exist in {self.config.describe()}; {hint}"
            ) from exc

    def _server_collection(self, name: str) -> Collection:
        raw = self._existing(
            name,
            "the `server` provider needs a collection created with its embedding function first",
        )
        try:
            function = (raw.configuration or {}).get("embedding_function")
        except Exception as exc:
            raise EmbeddingError(
                f"collection {name!r} in {self.config.describe()}: its embedding function "
                f"cannot be loaded here ({exc}); install the package that provides it"
            ) from exc
        ef_name = _ef_name(function)
        if function is None or ef_name in (None, "default"):
            raise EmbeddingError(
                f"collection {name!r} in {self.config.describe()} has "
                + ("no embedding function" if function is None else "Chroma's default one")
                + "; the `server` provider needs the collection to carry an explicit one "
                "(the default downloads a model at run time). Recreate the collection with "
                "an embedding function, or use another provider"
            )
        collection = Collection(raw, self, embeds=True)
        collection.check_model("server", None)
        if collection.model_id is None:
            wanted = {MODEL_KEY: "server", PROVIDER_KEY: "server", "chromasync_function": ef_name}
            collection.set_metadata(wanted, "record the provider of")
        return collection

    def delete_collection(self, name: str) -> None:
        self._call(f"delete collection {name!r}", lambda: self._client.delete_collection(name))


class Collection:
    def __init__(self, raw: Any, store: Store, embeds: bool = False) -> None:
        self.raw = raw  # the chromadb collection (`store/peers.py` reads its configuration)
        self._store = store
        self.name: str = raw.name
        #: True when the collection's own embedding function makes the vectors (`server`).
        self.embeds = embeds

    @property
    def metadata(self) -> Mapping[str, Any]:
        return dict(self.raw.metadata or {})

    @property
    def write_batch(self) -> int:
        return self._store.max_batch

    def modify_configuration(self, configuration: Mapping[str, Any]) -> None:
        self._store._call(
            f"configure {self.name!r}",
            lambda: self.raw.modify(configuration=dict(configuration)),
        )

    def add_metadata(self, added: Mapping[str, Mapping[str, Any]]) -> int:
        """Merge `added` (id -> keys) into those records' metadata; vectors untouched."""
        ids = list(added)
        self._store._call(
            f"rewrite metadata of {self.name!r}",
            lambda: self.raw.update(ids=ids, metadatas=[dict(added[i]) for i in ids]),
        )
        return len(ids)

    def set_metadata(self, wanted: Mapping[str, Any], what: str = "record metadata of") -> None:
        """Merge `wanted` into the collection's own metadata (Chroma's `hnsw:` keys stay)."""
        merged = {**self.metadata, **wanted}
        merged = {k: v for k, v in merged.items() if not k.startswith("hnsw:")}
        self._store._call(f"{what} {self.name!r}", lambda: self.raw.modify(metadata=merged))

    def record_model(self, model_id: str, dimension: int | None, provider: str | None) -> None:
        """Write the model that makes this collection's vectors into its metadata."""
        wanted = _model_keys(model_id, dimension, provider)
        wanted[SCHEMA_KEY] = self.metadata.get(SCHEMA_KEY, 1)
        self.set_metadata(wanted, "record the model of")
        from .peers import attach_function

        attach_function(self)

    @property
    def model_id(self) -> str | None:
        value = self.metadata.get(MODEL_KEY)
        return str(value) if value else None

    def check_model(
        self,
        model_id: str,
        dimension: int | None,
        provider: str | None = None,
        adopt: bool = False,
    ) -> None:
        stored = self.model_id
        if stored is None:
            from .peers import DEFAULT_MODEL_FUNCTIONS, function_name, runs_default_model

            same = runs_default_model(model_id, provider) and (
                function_name(self) in DEFAULT_MODEL_FUNCTIONS
            )
            if adopt or same or self.count() == 0:
                if model_id != "server":
                    self.record_model(model_id, dimension, provider)
                return
            raise EmbeddingError(
                f"collection {self.name!r} holds {self.count()} record(s) of another tool, "
                "made with a model chromasync does not know; choose another collection "
                "(--collection NAME), or, if you know its vectors are of this model, ingest "
                "with --reembed to adopt it (its records are kept, untouched)"
            )
        if stored != model_id:
            raise EmbeddingError(
                f"collection {self.name!r} holds vectors of {stored!r} "
                f"(dimension {self.metadata.get(DIMENSION_KEY)}), but the provider is "
                f"{model_id!r} (dimension {dimension}); re-run with --reembed to regenerate "
                "every vector, or choose another collection"
            )

    def other_source(self, sources: Sequence[str]) -> str | None:
        """The label of one record's source that is not in `sources` (another ingester's),
        or "" for a record another tool wrote, or None when there is neither."""
        from .peers import owner_of

        where: dict[str, Any] = {OWNER_KEY: {"$nin": list(sources)}} if sources else {}
        for record in self.iter_records(where=where or None):
            owner = owner_of(record)
            if owner is None or owner not in sources:
                return owner or ""
        return None

    def count(self) -> int:
        return int(self._store._call(f"count {self.name!r}", self.raw.count))

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
                lambda part=part, vecs=vecs: self.raw.upsert(  # type: ignore[misc]
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
                lambda part=part: self.raw.delete(ids=part),  # type: ignore[misc]
            )

    def embeddings(self, ids: Sequence[str]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for start in range(0, len(ids), PAGE):
            part = list(ids[start : start + PAGE])
            got = self._store._call(
                f"read vectors from {self.name!r}",
                lambda part=part: self.raw.get(ids=part, include=["embeddings"]),  # type: ignore[misc]
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
                lambda offset=offset: self.raw.get(  # type: ignore[misc]
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
            lambda: self.raw.get(ids=list(ids), include=["metadatas", "documents"]),
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
        A string is embedded by the collection's own function (`server` provider)."""
        columns = ["metadatas", "documents", "distances"]
        got = self._query(vector, k, where, ids, columns)
        return [
            Hit.from_metadata(rid, meta or {}, doc or "", 1.0 - float(dist), self.name)
            for rid, meta, doc, dist in zip(*(got[c][0] for c in ("ids", *columns)), strict=True)
        ]

    def nearest(
        self,
        vector: Sequence[float] | str,
        k: int,
        where: Mapping[str, Any] | None = None,
        ids: Sequence[str] | None = None,
    ) -> tuple[list[str], list[float]]:
        """What `query` finds, as ids and scores only (`get` reads the fields of those kept)."""
        got = self._query(vector, k, where, ids, ["distances"])
        return list(got["ids"][0]), [1.0 - float(dist) for dist in got["distances"][0]]

    def _query(
        self,
        vector: Sequence[float] | str,
        k: int,
        where: Mapping[str, Any] | None,
        ids: Sequence[str] | None,
        include: list[str],
    ) -> Any:
        if ids is not None and not ids:
            return {column: [[]] for column in ("ids", *include)}
        query: dict[str, Any] = (
            {"query_texts": [vector]}
            if isinstance(vector, str)
            else {"query_embeddings": [list(vector)]}
        )

        def run() -> Any:
            try:
                return self.raw.query(
                    **query,
                    n_results=k,
                    where=dict(where) if where else None,
                    ids=list(ids) if ids is not None else None,
                    include=include,
                )
            except Exception as exc:
                refused = _refused_filter(exc) if where else None
                if refused is not None:
                    raise refused from exc
                raise

        return self._store._call(f"query {self.name!r}", run)


def _model_keys(model_id: str, dimension: int | None, provider: str | None) -> dict[str, Any]:
    """The metadata keys that record the model of a collection's vectors."""
    keys = {MODEL_KEY: model_id, DIMENSION_KEY: dimension or 0, CHUNKING_KEY: CHUNKING_VERSION}
    return keys | ({PROVIDER_KEY: provider} if provider else {})
