"""What chromasync's collections hold for other Chroma clients, and what theirs hold for it.

* The embedding function configuration (`peer_function`): a collection of the default model
  carries Chroma's `default` function, which every Chroma client resolves to this very
  model (all-MiniLM-L6-v2, ONNX, mean pooling, normalised; `embed/shared.py` puts its files
  where chromadb looks), so `query(query_texts=...)` from a plain client, `chroma-mcp`,
  LangChain or LlamaIndex embeds the query as chromasync would, offline. `attach_function`
  adds it to a collection made before, without touching a vector.
* Ownership (`owner_of`): every record chromasync writes carries `OWNER_KEY` (its source's
  label). A record without it was written by another tool: chromasync reports it and never
  deletes, adopts or rewrites it. Records of an index written before the marker existed
  are recognised by `plan.triage.written_by` and marked once (`mark_legacy`: a metadata
  rewrite, nothing re-embedded).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..embed.shared import MODEL_ID
from ..plan.triage import source_path, written_by
from ..records import OWNER_KEY

if TYPE_CHECKING:
    from .chroma import Collection, StoredRecord

log = logging.getLogger(__name__)

#: The name Chroma records for the function `peer_function` gives.
PEER_FUNCTION = "default"
#: Chroma's names of functions that run the default model (`ONNXMiniLM_L6_V2`).
DEFAULT_MODEL_FUNCTIONS = frozenset({"default", "onnx_mini_lm_l6_v2"})
SAMPLE = 5
#: Collection metadata key (+ the source label): that label's legacy records are marked.
MARKED_PREFIX = "chromasync_marked."


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
    provider = meta.get("chromasync_embedding_provider", "local")
    if not runs_default_model(str(model) if model else None, str(provider)):
        return False
    if function_name(collection) is not None:
        return False
    from chromadb.utils.embedding_functions import DefaultEmbeddingFunction

    function = DefaultEmbeddingFunction()
    collection.modify_configuration({"embedding_function": function})
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


def mark_legacy(collection: Collection, label: str, root: str = "") -> int:
    """Upgrade `label`'s records written before the ownership marker existed, by a metadata
    update (no vector is read or written): the marker, and the document keys LlamaIndex
    reads (`document_id`, `ref_doc_id`), and with the source's `root` the file's path in
    `source`; how many were upgraded. Once per label: the collection's metadata then records
    `MARKED_PREFIX + label`, and later runs read nothing (a pass over 11,247 SciFact records
    took 7 s of every writing run before)."""
    done = MARKED_PREFIX + label
    if collection.metadata.get(done):  # marked before: no record is read again
        return 0
    marked = 0
    pending: dict[str, dict[str, Any]] = {}
    for record in collection.iter_records(where={"source": label}):
        meta = record.metadata
        if OWNER_KEY in meta or not written_by(label, record.id, meta):
            continue
        document = str(meta.get("document_id") or meta.get("path", ""))
        added = {OWNER_KEY: label, "document_id": document, "ref_doc_id": document}
        if root:
            added["source"] = source_path(root, str(meta.get("path", "")))
        pending[record.id] = added
        if len(pending) >= collection.write_batch:
            marked += collection.add_metadata(pending)
            pending = {}
    if pending:
        marked += collection.add_metadata(pending)
    collection.set_metadata({done: 1})
    if marked:
        log.info(
            "collection %r: marked %d record(s) of %r as chromasync's",
            collection.name,
            marked,
            label,
        )
    return marked


def owned_records(
    collection: Collection, label: str, documents: bool = False, root: str = ""
) -> Iterator[StoredRecord]:
    """The records chromasync wrote for `label` (after upgrading legacy ones)."""
    mark_legacy(collection, label, root)
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
    "mark_legacy",
    "owned_records",
    "owner_of",
    "peer_function",
    "runs_default_model",
]
