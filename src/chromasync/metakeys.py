"""The keys chromasync writes in each stored record's metadata, and how to read them back.

Design notes: docs/internals.md, `metakeys.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The ownership marker: every record chromasync writes carries the label of the source
#: that wrote it under this key. A record without it belongs to another tool, and nothing
#: chromasync does (heal, verify --repair, sources remove, --reset) deletes or adopts it.
OWNER_KEY = "chromasync_source"
#: What was embedded besides the stored document: the chunk's context prefix (its heading
#: path, a file's title), when it has one. The embedding input is `normalise(context +
#: document)` (trailing spaces stripped), so a peer that re-embeds a record can rebuild it.
CONTEXT_KEY = "chromasync_context"


def normalise_for_hash(text: str) -> str:
    """The form of an embedding input that is hashed and embedded: no trailing spaces
    (`text` itself when it has none, so that a record holds its chunk's text once)."""
    normal = "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")
    return text if normal == text else normal


#: chromasync's bookkeeping in each record's metadata, named as its own (`chromasync_` like
#: the marker): what change detection, `heal`, `verify` and dedupe read, which a reader of
#: the record does not want. The one declaration of these keys: the name records version 2
#: and before wrote (`plan.upgrade` renames those, values unchanged) -> today's name. A
#: record's `record_hash` is taken over the older names, so the rename changed no hash.
FILE_HASH_KEY = "chromasync_file_hash"  # sha256 of the file's raw bytes
CHUNK_HASH_KEY = "chromasync_chunk_hash"  # sha256 of the normalised embedding input
RECORD_HASH_KEY = "chromasync_record_hash"  # sha256 of metadata + document
CHUNKING_VERSION_KEY = "chromasync_chunking_version"  # the chunker that cut it
EMBEDDING_MODEL_KEY = "chromasync_embedding_model"  # the model of its vector
FILE_VERSION_KEY = "chromasync_version"  # the file's revision: 1, then +1 per change
BOOKKEEPING_KEYS: Mapping[str, str] = {
    "file_hash": FILE_HASH_KEY,
    "chunk_hash": CHUNK_HASH_KEY,
    "record_hash": RECORD_HASH_KEY,
    "chunking_version": CHUNKING_VERSION_KEY,
    "embedding_model": EMBEDDING_MODEL_KEY,
    "version": FILE_VERSION_KEY,
}
#: Today's name -> the older one (what `record_hash` is taken over).
LEGACY_NAMES: Mapping[str, str] = {new: old for old, new in BOOKKEEPING_KEYS.items()}

#: Fields the designs list, written beside a record's hash and never in it (`record_hash`
#: is taken before they are added, so adding them rewrote no record, and `ingested_at`
#: never makes an unchanged chunk "changed"): the ingest design's, on every record, and the
#: repository indexer's, on the records of a source with an identity (`ingest --identity`,
#: the Action). Stored for filters (`--where file_type=python`) and for peers reading the
#: collection; left out of every hit a surface shows (`records.Hit.from_metadata`), so an
#: agent's hits stay lean.
INGEST_FIELDS = ("char_count", "ingested_at", "last_modified_mtime")
IDENTITY_FIELDS = (
    "organization",
    "namespace_id",
    "file_name",
    "file_extension",
    "file_type",
    "chunking_strategy",
    "schema_version",
)
RECORD_FIELDS = frozenset({*INGEST_FIELDS, *IDENTITY_FIELDS})


def stored_key(key: str) -> str:
    """The name a record's metadata holds `key` under: an older bookkeeping name (a
    `--where file_hash=...` written before the rename) maps to today's; others are kept."""
    return BOOKKEEPING_KEYS.get(key, key)


def bookkeeping(metadata: Mapping[str, Any], key: str) -> Any:
    """A bookkeeping value (`key`: today's name) of a stored record, read under today's
    name or, on a record not upgraded yet, the older one; None when it has neither."""
    if key in metadata:
        return metadata[key]
    return metadata.get(LEGACY_NAMES.get(key, key))


def keyword_heading(metadata: Mapping[str, Any]) -> str:
    """What a record's keyword-index `heading` column holds: its heading path, and the
    page's front-matter `description` when its context prefix embeds it (a Markdown page's
    first chunk, `chunk.markdown.page_summary`), so that keyword search weighs what the
    embedding holds. A description cut to fit the context is indexed as cut."""
    heading = str(metadata.get("heading", ""))
    description = metadata.get("description")
    context = str(metadata.get(CONTEXT_KEY, "")).strip()
    if not isinstance(description, str) or not context:
        return heading
    summary = " ".join(description.split())
    last = context.rsplit("\n", 1)[-1]
    held = last == summary or (last.endswith(" …") and summary.startswith(last[:-2]))
    if not summary or not held:
        return heading
    return f"{heading}\n{last}" if heading else last


def source_label(metadata: Mapping[str, Any]) -> str:
    """The label of the source a stored record belongs to: its ownership marker, else (an
    index written before the marker, or another tool's record) its `source` value. A
    record's `source` holds the file's path, where LangChain's loaders put it."""
    return str(metadata.get(OWNER_KEY) or metadata.get("source", ""))
