"""Chunk report: what ingest would cut a tree into, without a store or a model.

Design notes: docs/internals.md, `sync/chunkreport.py`.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..chunk import Budget, chunk_document
from ..config.settings import Settings
from ..config.sources import configured_entries, find_entry, source_for, spec_for, with_skips
from ..corpus.read import read_file
from ..corpus.walk import discover_source
from ..embed import Embedder, embedder_for
from ..embed.tokens import count_all, default_token_meter, load_token_meter
from ..records import SourceSpec
from .jobs import default_options

CHUNK_REPORT_SCHEMA = 2  # 2: "(none)" for no extension, token totals, largest first


#: How the report names the extension of files that have none (`README`, `LICENSE`).
NO_EXTENSION = "(none)"


@dataclass(frozen=True, slots=True)
class TokenStats:
    """Sizes of chunks' embedding inputs in word pieces."""

    count: int = 0
    min: int = 0
    median: float = 0.0
    max: int = 0
    total: int = 0

    @classmethod
    def of(cls, sizes: Sequence[int]) -> TokenStats:
        if not sizes:
            return cls()
        return cls(len(sizes), min(sizes), float(statistics.median(sizes)), max(sizes), sum(sizes))

    def as_json(self) -> dict[str, object]:
        return {"min": self.min, "median": self.median, "max": self.max, "total": self.total}


@dataclass(frozen=True, slots=True)
class FileChunks:
    """One file's chunks: how many, how large, and the headings or symbols they carry."""

    path: str
    extension: str
    kind: str
    language: str | None
    sizes: tuple[int, ...]  # each chunk's embedding input, in word pieces
    labels: tuple[str, ...]  # each chunk's heading path or symbol ("" for none)
    max_tokens: int

    @property
    def tokens(self) -> TokenStats:
        return TokenStats.of(self.sizes)

    @property
    def over_budget(self) -> int:
        return sum(s > self.max_tokens for s in self.sizes)

    def as_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "extension": self.extension,
            "kind": self.kind,
            "language": self.language,
            "chunks": self.tokens.count,
            "tokens": self.tokens.as_json(),
            "over_budget": self.over_budget,
            "sizes": list(self.sizes),
            "labels": list(self.labels),
        }


@dataclass(frozen=True, slots=True)
class ExtensionChunks:
    """Totals over the files of one extension (`NO_EXTENSION` for none)."""

    extension: str
    files: int
    tokens: TokenStats
    over_budget: int = 0

    def as_json(self) -> dict[str, object]:
        return {
            "extension": self.extension,
            "files": self.files,
            "chunks": self.tokens.count,
            "tokens": self.tokens.as_json(),
            "over_budget": self.over_budget,
        }


@dataclass(frozen=True, slots=True)
class ChunkReport:
    """The chunks a clean ingest of one source would store, summed up."""

    root: str
    source: str
    model: str
    max_tokens: int
    files: int
    tokens: TokenStats
    over_budget: int
    extensions: tuple[ExtensionChunks, ...]
    per_file: tuple[FileChunks, ...]
    skipped: dict[str, int] = field(default_factory=dict)
    chunk_ms: int = 0  # reading and chunking
    measure_ms: int = 0  # measuring every chunk again for the report
    #: Documents read (PDF, DOCX...), per format: files and pages.
    documents: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_json(self, verbose: bool = False) -> dict[str, object]:
        data: dict[str, object] = {
            "schema": CHUNK_REPORT_SCHEMA,
            "root": self.root,
            "source": self.source,
            "model": self.model,
            "max_tokens": self.max_tokens,
            "files": self.files,
            "chunks": self.tokens.count,
            "tokens": self.tokens.as_json(),
            "over_budget": self.over_budget,
            "skipped": dict(sorted(self.skipped.items())),
            "documents": {f: dict(v) for f, v in sorted(self.documents.items())},
            "extensions": [e.as_json() for e in self.extensions],
            "chunk_ms": self.chunk_ms,
            "measure_ms": self.measure_ms,
        }
        if verbose:
            data["per_file"] = [f.as_json() for f in self.per_file]
        return data


def build_chunk_report(
    spec: SourceSpec,
    budget: Budget,
    *,
    model: str,
    max_file_bytes: int,
    privacy_keys: tuple[str, ...],
    limit: int | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> ChunkReport:
    """Discover, read and chunk `spec` as ingest would; measure and sum up the chunks."""
    discovery = discover_source(spec, max_file_bytes)
    files = discovery.files[:limit] if limit else discovery.files
    skipped = Counter(s.reason for s in discovery.skipped)
    per_file: list[FileChunks] = []
    documents: dict[str, dict[str, int]] = {}
    chunk_seconds = measure_seconds = 0.0
    for file in files:
        began = clock()
        outcome = read_file(
            file, spec.identity_key, privacy_keys, max_bytes=max_file_bytes, encoding=spec.encoding
        )
        doc = outcome.document
        if doc is None:
            skipped[outcome.skip.reason if outcome.skip else "unreadable"] += 1
            continue
        if doc.kind == "document":
            counts = documents.setdefault(doc.doc_format, {"files": 0, "pages": 0})
            counts["files"] += 1
            counts["pages"] += len(doc.pages)
        chunks = chunk_document(doc, budget)
        measured = clock()
        sizes = count_all(budget.meter, [c.embed_text for c in chunks])
        chunk_seconds += measured - began
        measure_seconds += clock() - measured
        per_file.append(
            FileChunks(
                path=doc.rel_path,
                extension=os.path.splitext(doc.rel_path)[1].lower() or NO_EXTENSION,
                kind=doc.kind,
                language=doc.language,
                sizes=tuple(sizes),
                labels=tuple(c.heading or c.symbol or "" for c in chunks),
                max_tokens=budget.max_tokens,
            )
        )
    return ChunkReport(
        root=str(spec.root),
        source=spec.label,
        model=model,
        max_tokens=budget.max_tokens,
        files=len(per_file),
        tokens=TokenStats.of(_all_sizes(per_file)),
        over_budget=sum(f.over_budget for f in per_file),
        extensions=tuple(_by_extension(per_file)),
        per_file=tuple(per_file),
        skipped=dict(skipped),
        chunk_ms=round(chunk_seconds * 1000),
        measure_ms=round(measure_seconds * 1000),
        documents=documents,
    )


def _report_spec(
    path: str | Path | None,
    settings: Settings,
    source: str | None,
    include: Sequence[str],
    exclude: Sequence[str],
    use_gitignore: bool,
    fields: Mapping[str, Any],
) -> SourceSpec:
    """The source a chunk report describes (see `chunk_report`)."""
    entries = configured_entries(settings)
    if source is not None:
        return spec_for(find_entry(entries, source), settings)
    folder = Path(path if path is not None else ".").expanduser().resolve()
    plain = not (include or exclude or fields) and use_gitignore
    matching = [e for e in entries if e.path is not None and e.path.resolve() == folder]
    if plain and len(matching) == 1:
        return spec_for(matching[0], settings)
    return source_for(
        folder,
        include=tuple(include),
        exclude=tuple(exclude),
        use_gitignore=use_gitignore,
        **fields,
    )


def _all_sizes(files: Iterable[FileChunks]) -> list[int]:
    return [s for f in files for s in f.sizes]


def _by_extension(files: list[FileChunks]) -> list[ExtensionChunks]:
    groups: dict[str, list[FileChunks]] = {}
    for entry in files:
        groups.setdefault(entry.extension, []).append(entry)
    rows = [
        ExtensionChunks(
            extension=extension,
            files=len(members),
            tokens=TokenStats.of(_all_sizes(members)),
            over_budget=sum(f.over_budget for f in members),
        )
        for extension, members in groups.items()
    ]
    return sorted(rows, key=lambda e: (-e.tokens.total, e.extension))  # largest first


def chunk_report(
    path: str | Path | None,
    settings: Settings,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    use_gitignore: bool = True,
    limit: int | None = None,
    embedder: Embedder | None = None,
    source: str | None = None,
    fields: Mapping[str, Any] | None = None,
) -> ChunkReport:
    """What ingest would cut the files under `path` (None: the current folder) into, summed up
    (`build_chunk_report`): nothing embedded, opened or written. `source`: a configured
    source's label; `fields`: more `SourceSpec` fields (docs/internals.md)."""
    spec = _report_spec(path, settings, source, include, exclude, use_gitignore, fields or {})
    spec = with_skips(spec, settings)
    options = default_options(settings, limit=limit)
    embedder = embedder or embedder_for(settings)
    tokenizer = embedder.tokenizer_path
    meter = load_token_meter(tokenizer) if tokenizer else default_token_meter()
    max_tokens = min(embedder.max_tokens, options.chunk_max_tokens or embedder.max_tokens)
    return build_chunk_report(
        spec,
        Budget(max_tokens, meter),
        model=embedder.model_id,
        max_file_bytes=options.max_file_bytes,
        privacy_keys=options.privacy_keys,
        limit=limit,
    )
