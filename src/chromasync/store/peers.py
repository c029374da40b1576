"""What chromasync's collections hold for other Chroma clients, and what theirs hold for it.

Design notes: docs/internals.md, `store/peers.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..embed.shared import MODEL_ID
from ..metakeys import CHUNK_HASH_KEY, CONTEXT_KEY, OWNER_KEY
from ..plan.triage import written_by
from ..plan.upgrade import RECORDS_VERSION, embedded_context, may_have_context, missing_keys

if TYPE_CHECKING:
    from .chroma import Collection, StoredRecord

log = logging.getLogger(__name__)

#: The name Chroma records for the function `peer_function` gives.
PEER_FUNCTION = "default"
#: Chroma's names of functions that run the default model (`ONNXMiniLM_L6_V2`).
DEFAULT_MODEL_FUNCTIONS = frozenset({"default", "onnx_mini_lm_l6_v2"})
SAMPLE = 5
#: Records whose documents the upgrade reads at once (chroma.py's page).
READ_PAGE = 1000
#: Collection metadata key (+ the source label): that label's records carry every key of
#: `RECORDS_VERSION` (an index upgraded by an earlier release recorded `chromasync_marked.`).
UPGRADED_PREFIX = "chromasync_upgraded."


def runs_default_model(model_id: str | None, provider: str | None) -> bool:
    """The local provider's default model, any numeric variant (`...@int8`, `...@bf16`:
    vectors within a cosine of 0.995 of fp32 ones, which is what a peer's query gets)."""
    return provider == "local" and model_id is not None and model_id.split("@")[0] == MODEL_ID


def peer_function(model_id: str | None, provider: str | None) -> Any:
    """Chroma's default embedding function for a collection of the default model; None
    for any other model (a peer cannot embed its queries: it must pass vectors)."""
    if not runs_default_model(model_id, provider):
        return None
    from chromadb.utils.embedding_functions import DefaultEmbeddingFunction

    return DefaultEmbeddingFunction()


def function_name(collection: Collection) -> str | None:
    """The name of the embedding function the collection's configuration records."""
    try:
        config = collection.raw.configuration_json or {}
    except Exception:  # noqa: BLE001 - an older server without configurations
        return None
    function = config.get("embedding_function") if isinstance(config, dict) else None
    if not isinstance(function, dict):
        return None
    name = function.get("name")
    return str(name) if name else None


def attach_function(collection: Collection) -> bool:
    """Record Chroma's default function on `collection` when it holds the default model's
    vectors and records no function; True when it was added. No vector is touched."""
    meta = collection.metadata
    model = meta.get("chromasync_embedding_model")
    model_id = str(model) if model else None
    provider = str(meta.get("chromasync_embedding_provider", "local"))
    if not runs_default_model(model_id, provider) or function_name(collection) is not None:
        return False
    collection.modify_configuration({"embedding_function": peer_function(model_id, provider)})
    return True


def owner_of(record: StoredRecord) -> str | None:
    """The label of the source that wrote `record`; None: another tool wrote it."""
    marker = record.metadata.get(OWNER_KEY)
    if isinstance(marker, str) and marker:
        return marker
    label = record.metadata.get("source")
    if isinstance(label, str) and written_by(label, record.id, record.metadata):
        return label
    return None


@dataclass(frozen=True, slots=True)
class _Row:
    """What the upgrade keeps of one record while it reads the label's records."""

    path: str
    index: int
    symbol: str
    added: dict[str, Any]
    context: dict[str, Any]  # the keys `embedded_context` reads; empty: none to look for


def upgrade_records(
    collection: Collection, label: str, root: str = "", contexts: bool = True
) -> int:
    """Give `label`'s records written by an older chromasync the keys records carry now, by a
    metadata rewrite (nothing embedded, no file read); how many records were upgraded. Once
    per label; `contexts=False` gives only the marker and the document keys (docs/internals.md)."""
    done = UPGRADED_PREFIX + label
    if collection.metadata.get(done) == RECORDS_VERSION:  # upgraded before: nothing is read
        return 0
    rows: dict[str, _Row] = {}
    for record in collection.iter_records(where={OWNER_KEY: label}):
        rows[record.id] = _row(label, record.metadata, root, contexts)
    for record in collection.iter_records(where={"source": label}):
        meta = record.metadata
        if OWNER_KEY in meta or not written_by(label, record.id, meta):
            continue
        rows[record.id] = _row(label, meta, root, contexts)
    unknown = _find_contexts(collection, rows) if contexts else 0
    pending = {rid: row.added for rid, row in rows.items() if row.added}
    ids = list(pending)
    upgraded = 0
    for at in range(0, len(ids), collection.write_batch):  # after every read: the `where`
        batch = ids[at : at + collection.write_batch]  # of a page never shifts under it
        upgraded += collection.add_metadata({rid: pending[rid] for rid in batch})
    if contexts:
        collection.set_metadata({done: RECORDS_VERSION})
    if upgraded:
        log.info(
            "collection %r: upgraded %d record(s) of %r by a metadata rewrite",
            collection.name,
            upgraded,
            label,
        )
    if unknown:
        log.warning(
            "collection %r: %d record(s) of %r were embedded with a context prefix that "
            "their metadata does not give; they get `%s` when their file next changes",
            collection.name,
            unknown,
            label,
            CONTEXT_KEY,
        )
    return upgraded


def _row(label: str, meta: Mapping[str, Any], root: str, contexts: bool) -> _Row:
    keys = (
        CHUNK_HASH_KEY,
        "chunk_hash",
        "chunk_index",
        "heading",
        "symbol",
        "description",
        CONTEXT_KEY,
    )
    index = meta.get("chunk_index")
    return _Row(
        str(meta.get("path", "")),
        index if isinstance(index, int) else -1,
        str(meta.get("symbol") or ""),
        missing_keys(label, meta, root),
        {k: meta[k] for k in keys if k in meta} if contexts else {},
    )


def _find_contexts(collection: Collection, rows: dict[str, _Row]) -> int:
    """Add `chromasync_context` to the rows whose document was embedded with one; how
    many rows' context no candidate reproduced. Only the documents of rows that could
    have one are read, a page at a time."""
    symbols = {(row.path, row.index): row.symbol for row in rows.values()}
    wanted: dict[str, str] = {}  # id -> the next chunk's symbol
    for rid, row in rows.items():
        after = symbols.get((row.path, row.index + 1), "")
        if row.context and may_have_context(row.context, after):
            wanted[rid] = after
    unknown = 0
    ids = list(wanted)
    for at in range(0, len(ids), READ_PAGE):
        for record in collection.get(ids[at : at + READ_PAGE]):
            row = rows[record.id]
            context = embedded_context(record.document or "", row.context, wanted[record.id])
            if context is None:
                unknown += 1
            elif context:
                row.added[CONTEXT_KEY] = context
    return unknown


def owned_records(
    collection: Collection, label: str, documents: bool = False, root: str = ""
) -> Iterator[StoredRecord]:
    """The records chromasync wrote for `label` (after upgrading older ones)."""
    upgrade_records(collection, label, root)
    yield from collection.iter_records(where={OWNER_KEY: label}, documents=documents)


@dataclass(frozen=True, slots=True)
class Foreign:
    """The records of a collection that another tool wrote."""

    collection: str
    count: int
    sample: tuple[str, ...]  # up to SAMPLE ids

    def describe(self) -> str:
        shown = ", ".join(self.sample) + (", ..." if self.count > len(self.sample) else "")
        return f"{self.count} record(s) another tool wrote ({shown})"


def foreign_records(collection: Collection) -> Foreign:
    """Count (and name a few of) the records in `collection` chromasync did not write: one
    paged read of the metadata."""
    count = 0
    sample: list[str] = []
    for record in collection.iter_records():
        if owner_of(record) is None:
            count += 1
            if len(sample) < SAMPLE:
                sample.append(record.id)
    return Foreign(collection.name, count, tuple(sample))


__all__ = [
    "DEFAULT_MODEL_FUNCTIONS",
    "PEER_FUNCTION",
    "Foreign",
    "attach_function",
    "foreign_records",
    "function_name",
    "owned_records",
    "owner_of",
    "peer_function",
    "runs_default_model",
    "upgrade_records",
]
