"""The desired records of a source, as `ingest --dry-run --output-manifest FILE` writes them.

Design notes: docs/internals.md, `sync/export.py`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

from ..chunk import Budget, chunk_document
from ..config.settings import Settings
from ..config.sources import collection_of, with_skips
from ..corpus.read import read_file
from ..corpus.walk import discover_source
from ..embed import Embedder, embedder_for
from ..embed.tokens import TokenMeter, default_token_meter, load_token_meter
from ..metakeys import FILE_HASH_KEY
from ..plan.triage import RecordContext, build_records
from ..records import FileState, Scalar, SourceSpec
from ..state.manifest import STATE_FILE, State
from .ingest import IngestOptions

MANIFEST_EXPORT_SCHEMA = 1


def desired_records(
    spec: SourceSpec,
    collection: str,
    *,
    model_id: str,
    budget_tokens: int,
    meter: TokenMeter,
    manifest: Mapping[str, FileState] | None = None,
    max_file_bytes: int,
    privacy_keys: tuple[str, ...],
    limit: int | None = None,
    extra_metadata: Mapping[str, Scalar] | None = None,
    include_text: bool = False,
) -> Iterator[dict[str, Any]]:
    """One dict per record a clean run would store for `spec` (in path order)."""
    manifest = manifest or {}
    discovery = discover_source(spec, max_file_bytes)
    files = discovery.files[:limit] if limit else discovery.files
    ctx = RecordContext.of(spec, model_id, extra_metadata or {}, time.time_ns())
    budget = Budget(budget_tokens, meter)
    for file in files:
        outcome = read_file(
            file, spec.identity_key, privacy_keys, max_bytes=max_file_bytes, encoding=spec.encoding
        )
        doc = outcome.document
        if doc is None:
            continue
        previous = manifest.get(file.rel_path)
        if previous is None:
            version = 1
        elif previous.file_hash == doc.file_hash and previous.records:
            version = previous.version
        else:
            version = previous.version + 1
        for record in build_records(doc, chunk_document(doc, budget), version, ctx, file.mtime_ns):
            meta = dict(record.metadata)
            row: dict[str, Any] = {
                "schema": MANIFEST_EXPORT_SCHEMA,
                "collection": collection,
                "source": spec.label,
                "id": record.id,
                "path": meta.get("path"),
                "start_line": meta.get("start_line"),
                "end_line": meta.get("end_line"),
                "heading": meta.get("heading"),
                "file_hash": meta.get(FILE_HASH_KEY),
                "chunk_hash": record.chunk_hash,
                "record_hash": record.record_hash,
                "metadata": meta,
            }
            if include_text:
                row["text"] = record.document
            yield row


def write_jsonl(rows: Iterator[dict[str, Any]], handle: IO[str]) -> int:
    count = 0
    for row in rows:
        handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        count += 1
    return count


def export_manifest(
    settings: Settings,
    jobs: Sequence[tuple[SourceSpec, IngestOptions]],
    handle: IO[str],
    *,
    include_text: bool = False,
    embedder: Embedder | None = None,
) -> int:
    """Write the desired records of each job as JSON Lines (see the module); returns the
    number of records. Reads files and the state; embeds and stores nothing."""
    embedder = embedder or embedder_for(settings)
    path = embedder.tokenizer_path
    meter = load_token_meter(path) if path else default_token_meter()
    state_file = settings.data_dir / STATE_FILE
    state = State.open(settings.data_dir, readonly=True) if state_file.exists() else None
    total = 0
    try:
        for job_spec, options in jobs:
            spec = with_skips(job_spec, settings)
            name = collection_of(spec, settings)
            manifest = state.files(name, spec.label) if state is not None else {}
            total += write_jsonl(
                desired_records(
                    spec,
                    name,
                    model_id=embedder.model_id,
                    budget_tokens=min(
                        embedder.max_tokens, options.chunk_max_tokens or embedder.max_tokens
                    ),
                    meter=meter,
                    manifest=manifest,
                    max_file_bytes=options.max_file_bytes,
                    privacy_keys=options.privacy_keys,
                    limit=options.limit,
                    extra_metadata=options.extra_metadata,
                    include_text=include_text,
                ),
                handle,
            )
    finally:
        if state is not None:
            state.close()
    return total
