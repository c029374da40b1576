"""Typed records passed between pipeline stages.

Every stage takes and returns these frozen, slotted dataclasses; nothing else crosses a
stage boundary. Records that are persisted (manifest rows, chunk metadata) carry a version
(`MANIFEST_SCHEMA`, `versions.CHUNKING_VERSION`) so that a later release can tell old state apart.
The keys chromasync itself writes in a record's metadata (its ownership marker, context and
bookkeeping) are declared beside these, in `metakeys`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias

from .metakeys import CONTEXT_KEY, RECORD_FIELDS, normalise_for_hash, source_label

#: Schema of the SQLite state (manifest, keyword index).
MANIFEST_SCHEMA = 3  # 2: ctime_ns and inode in `files`; 3: asset, asset_issue (sidecars)

Scalar: TypeAlias = str | int | float | bool
#: A value Chroma accepts in metadata: a scalar or a homogeneous list of strings.
MetaValue: TypeAlias = Scalar | list[str]
Metadata: TypeAlias = Mapping[str, MetaValue]
#: A long task's progress callback: (phase, done, total).
Progress: TypeAlias = Callable[[str, int, int], None]

#: `document`: a PDF, DOCX, PPTX or HTML file read into pages (`corpus.documents`); its
#: `text` is the rendered Markdown-ish text, chunked as Markdown.
DocKind = Literal["markdown", "text", "code", "document"]


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """One tree to index, and how. `label` is also the source's namespace."""

    label: str
    root: Path
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    use_gitignore: bool = True
    kind: str = "notes"
    static_metadata: Mapping[str, Scalar] = field(default_factory=dict)
    identity_key: str | None = None
    extensions: tuple[str, ...] | None = None
    subdirs: tuple[str, ...] = ()
    skip_substrings: tuple[str, ...] = ()
    collection: str | None = None  # None: the settings decide (see config.collection_for)
    #: How text that is not UTF-8 is read: "detect" (the default: Western text as cp1252,
    #: else a charset detected with high confidence), "utf-8" (an `undecodable` skip) or a
    #: codec name (`cp1252`).
    encoding: str = "detect"
    include_hidden: bool = False  # dotfiles and dot-folders are walked too (not `.git`)
    #: (organization, repository, branch) of a checkout indexed as a repository
    #: (`ingest --identity`, the Action): its records carry the repository indexer's fields.
    identity: tuple[str, str, str] | None = None

    @property
    def starts(self) -> tuple[str, ...]:
        """The folders a walk starts from, relative to the root ("" is the root); a folder
        inside another one listed (or the root listed too) is walked once, from the outer."""
        parts = list(dict.fromkeys(s.strip("/") for s in self.subdirs))
        if not parts or "" in parts:
            return ("",)
        return tuple(p for p in parts if not any(p.startswith(q + "/") for q in parts))


@dataclass(frozen=True, slots=True)
class FileStat:
    """A regular file found by discovery, with the stat fields change detection uses."""

    rel_path: str  # POSIX, relative to the source root
    abs_path: str
    size: int
    mtime_ns: int
    ctime_ns: int = 0  # changes on every write, and cannot be set back (unlike mtime)
    inode: int = 0


@dataclass(frozen=True, slots=True)
class Skip:
    """A path left out, with one of the documented reason codes (see `discover.REASONS`)."""

    rel_path: str
    reason: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Discovery:
    """Result of walking one source. `unreadable_dirs` protects their records from deletion."""

    files: tuple[FileStat, ...]
    skipped: tuple[Skip, ...]
    unreadable_dirs: tuple[str, ...] = ()
    #: What the walk saw, as `listing.tree_listing` encodes it, when asked for; None when
    #: not, or when it could not see everything (an unreadable folder, a missing
    #: sub-folder, a failed stat).
    listing: bytes | None = None
    pruned_dirs: tuple[str, ...] = ()  # folders left out by an ignore rule, not walked


@dataclass(frozen=True, slots=True)
class SettledSource:
    """A source whose re-run over the tree its walk saw would change nothing.

    Reported by the ingest after it finished writing; the CLI records it so that the next
    identical invocation can be answered without the full pipeline (see `fastpath`).
    `summary` is what that re-run would report (`IngestSummary.as_json()`).
    """

    collection: str
    source: str
    root: str
    starts: tuple[str, ...]
    pruned_dirs: tuple[str, ...]
    use_gitignore: bool
    listing: bytes
    summary: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class Document:
    """A decoded, normalised text file (LF line endings, no BOM) ready to chunk."""

    rel_path: str
    text: str  # the whole normalised file, front matter included
    body_start_line: int  # 1-based line where the body starts (after front matter)
    file_hash: str  # sha256 of the raw bytes
    kind: DocKind
    language: str | None
    metadata: Mapping[str, MetaValue]  # flattened front matter
    identity: str | None = None  # front-matter identity key value, when configured
    #: Documents only: the format (`pdf`, `docx`...), the page numbers and the line of
    #: `text` where each page starts (see `corpus.documents.DocumentText`).
    doc_format: str = ""
    pages: tuple[int, ...] = ()
    page_starts: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class AssetRef:
    """What a sidecar's front matter `binary_asset` names (see `corpus.sidecar`).

    `target` is the named file's path relative to the source root, or "" when the name is
    refused (`issue`: `no-filename`, `outside-source <filename>`); `sha256` is the declared
    hash, lower case, or ""; `metadata` the sidecar's flattened front matter, which the
    named document's records take (also when the sidecar itself is an `empty` skip).
    """

    target: str
    sha256: str = ""
    issue: str = ""
    metadata: Mapping[str, MetaValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReadOutcome:
    """A file after reading: a `Document`, or a `Skip`; `stat` is what was actually read.
    `asset`: a Markdown sidecar's `binary_asset`, also when the file is a `private` skip."""

    stat: FileStat
    file_hash: str | None
    document: Document | None = None
    skip: Skip | None = None
    asset: AssetRef | None = None
    dropped: int = 0  # front matter values left out (`corpus.frontmatter.flatten_metadata`)


@dataclass(frozen=True, slots=True)
class Chunk:
    """An exact excerpt of a document, with the context prefix embedded along with it."""

    text: str
    start_line: int  # 1-based, inclusive, in the normalised file
    end_line: int
    heading: str = ""  # heading path, "Guide > Install > Linux"
    context: str = ""  # prefix embedded with the text; derived from content only
    symbol: str | None = None
    language: str | None = None
    overlap: int = 0  # leading characters of `text` that repeat the end of the chunk before

    @property
    def embed_text(self) -> str:
        return f"{self.context}{self.text}" if self.context else self.text


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """One row as it is written to the collection (and to the keyword index)."""

    id: str
    chunk_hash: str  # sha256 of the embedding input (model-independent)
    record_hash: str  # sha256 of document + metadata: equal means nothing to rewrite
    document: str
    metadata: Metadata

    @property
    def embed_text(self) -> str:
        """The embedding input, made when asked (never held beside the document):
        `normalise_for_hash(context + document)`, as `CONTEXT_KEY` says."""
        context = self.metadata.get(CONTEXT_KEY) or ""
        return normalise_for_hash(f"{context}{self.document}")


@dataclass(frozen=True, slots=True)
class RecordRef:
    """What the manifest remembers of a record it wrote."""

    id: str
    chunk_hash: str
    record_hash: str


@dataclass(frozen=True, slots=True)
class FileState:
    """A manifest row: what was last written for one path of one source."""

    rel_path: str
    size: int
    mtime_ns: int
    file_hash: str
    version: int
    checked_ns: int  # when size/mtime were last confirmed against the content
    records: tuple[RecordRef, ...]
    skip_reason: str = ""  # a content skip (private, binary...) remembered by stat
    ctime_ns: int = 0
    inode: int = 0
    #: A sidecar (Markdown whose front matter has `binary_asset`): the path of the file it
    #: names, and what is wrong with it ("" when nothing; see `plan.sidecars`).
    asset: str = ""
    asset_issue: str = ""


@dataclass(frozen=True, slots=True)
class FileChange:
    """The planned writes for one file whose content (or metadata) changed."""

    rel_path: str
    stat: FileStat
    file_hash: str
    version: int
    records: Sequence[ChunkRecord]  # the full desired set, in order (`plan.packed`)
    to_embed: Sequence[ChunkRecord]  # ids not yet in the collection
    to_rewrite: Sequence[ChunkRecord]  # ids present, metadata or document changed
    to_delete: tuple[str, ...]  # ids of this file that are no longer wanted
    is_new: bool
    asset: str = ""  # a sidecar: see `FileState.asset`
    asset_issue: str = ""


@dataclass(frozen=True, slots=True)
class StoreLimits:
    """What the target store accepts (None: no limit known). See `preflight`."""

    max_batch: int | None = None  # records per write, as advertised (None: none advertised)
    max_id_bytes: int | None = None
    max_document_bytes: int | None = None
    max_metadata_keys: int | None = None  # per record
    name: str = "Chroma"  # how messages name the target


#: The additive figures of an `IngestSummary` (summed over sources, exported by the Action).
SUMMARY_COUNTS = (
    "files_seen",
    "files_new",
    "files_updated",
    "files_unchanged",
    "files_deleted",
    "chunks_total",
    "chunks_embedded",
    "chunks_reused",
    "chunks_deleted",
    "duration_ms",
    "embed_ms",
)


@dataclass(frozen=True, slots=True)
class IngestSummary:
    """The figures of one source's run; `as_json` gives the documented `--json` shape."""

    collection: str
    source: str
    files_seen: int = 0
    files_new: int = 0
    files_updated: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    files_skipped: Mapping[str, int] = field(default_factory=dict)
    chunks_total: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks_deleted: int = 0
    duration_ms: int = 0
    embed_ms: int = 0
    dry_run: bool = False
    metadata_keys_dropped: int = 0  # user keys over the store's per-record limit
    documents_read: Mapping[str, int] = field(default_factory=dict)  # format -> files read
    pages_read: int = 0  # pages (slides) of the documents read
    #: Counted warnings about files that were indexed all the same (`date-unreadable`).
    warnings: Mapping[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        return plain_fields(self, sort=True)


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result with its citation."""

    id: str
    path: str
    source: str
    heading: str
    start_line: int
    end_line: int
    score: float
    text: str
    collection: str = ""
    metadata: Metadata = field(default_factory=dict)
    ranks: Mapping[str, int] = field(default_factory=dict)  # rank in each list, e.g. dense
    collapsed: int = 0  # other chunks of the same document folded into this hit (--per-doc)
    #: How good a match, in [0, 1] (docs/how-it-works.md#relevance); None before ranking.
    relevance: float | None = None
    #: Each list's raw score, e.g. {"dense": 0.61, "keyword": 7.2} (what `--explain` shows).
    scores: Mapping[str, float] = field(default_factory=dict)
    #: The config's description of the place this hit comes from (`context:`), if any.
    context: str | None = None
    #: Other files holding the same chunk text ("also at"), folded into this hit: each
    #: `path`, or `source:path` when another source holds it.
    also_at: tuple[str, ...] = ()
    #: A document's chunk: the pages of the lines the query matched (`retrieve.highlight.
    #: matched_pages`); () when unknown: the chunk's own pages are cited.
    pages: tuple[int, ...] = ()

    @classmethod
    def from_metadata(
        cls, rid: str, meta: Mapping[str, Any], text: str, score: float, collection: str
    ) -> Hit:
        """A hit from a record's stored metadata (the citation fields are read from it).

        The metadata's keys are sorted: Chroma returns them in a different order at each
        query, and `--json` must print the same bytes for the same hits. The fields
        written beside the record's hash (`metakeys.RECORD_FIELDS`: `char_count`,
        `ingested_at`, `namespace_id`...) are left out: what an agent sees stays lean."""
        return cls(
            id=rid,
            path=str(meta.get("path", "")),
            source=source_label(meta),
            heading=str(meta.get("heading", "")),
            start_line=int(meta.get("start_line", 0) or 0),
            end_line=int(meta.get("end_line", 0) or 0),
            score=score,
            text=text,
            collection=collection,
            metadata=dict(sorted(i for i in meta.items() if i[0] not in RECORD_FIELDS)),
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Hit:
        """A hit from its `as_json` form (what REST and the owner's socket send)."""
        return cls(
            id=str(data["id"]),
            path=str(data["path"]),
            source=str(data["source"]),
            heading=str(data.get("heading", "")),
            start_line=int(data.get("start_line", 0)),
            end_line=int(data.get("end_line", 0)),
            score=float(data.get("score", 0.0)),
            text=str(data.get("text", "")),
            collection=str(data.get("collection", "")),
            metadata=dict(data.get("metadata") or {}),
            ranks={str(k): int(v) for k, v in (data.get("ranks") or {}).items()},
            collapsed=int(data.get("collapsed", 0)),
            relevance=None if data.get("relevance") is None else float(data["relevance"]),
            scores={str(k): float(v) for k, v in (data.get("scores") or {}).items()},
            context=None if data.get("context") is None else str(data["context"]),
            also_at=tuple(str(p) for p in (data.get("also_at") or ())),
            pages=tuple(int(p) for p in (data.get("pages") or ())),
        )

    @property
    def page(self) -> int | None:
        """The first page of a document's chunk that the hit cites (None for a text file):
        of the lines the query matched (`pages`) when known, else the chunk's first."""
        value = self.metadata.get("page")
        if not (self.metadata.get("doc_format") and type(value) is int):
            return None
        return min(self.pages) if self.pages else value

    @property
    def citation(self) -> str:
        """The one citation format: `path:start-end`, or `path p. N` (`p. N-M`) for a
        chunk of a document (PDF, DOCX...), whose lines are not lines of the file: the
        pages of the lines the query matched, when known (`pages`), else the chunk's."""
        first = self.page
        if first is None:
            return f"{self.path}:{self.start_line}-{self.end_line}"
        last = max(self.pages) if self.pages else self.metadata.get("page_end")
        if type(last) is int and last > first:
            return f"{self.path} p. {first}-{last}"
        return f"{self.path} p. {first}"

    def as_json(self) -> dict[str, object]:
        return plain_fields(self)


def plain_fields(record: Any, sort: bool = False) -> dict[str, object]:
    """A dataclass record's fields by name, in order, for its JSON form: tuples as lists,
    mappings as dicts (`sort`: by key)."""
    out: dict[str, object] = {}
    for f in fields(record):
        value = getattr(record, f.name)
        if isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Mapping):
            value = dict(sorted(value.items()) if sort else value)
        out[f.name] = value
    return out


def total_summary(summaries: Sequence[IngestSummary]) -> IngestSummary:
    """The figures of several sources added up (source "total")."""
    skipped: Counter[str] = Counter()
    documents: Counter[str] = Counter()
    warnings: Counter[str] = Counter()
    for summary in summaries:
        skipped.update(summary.files_skipped)
        warnings.update(summary.warnings)
        documents.update(summary.documents_read)
    sums = {name: sum(getattr(s, name) for s in summaries) for name in SUMMARY_COUNTS}
    dry = bool(summaries) and summaries[0].dry_run
    return IngestSummary(
        collection="",
        source="total",
        files_skipped=dict(skipped),
        dry_run=dry,
        documents_read=dict(documents),
        pages_read=sum(s.pages_read for s in summaries),
        warnings=dict(warnings),
        **sums,
    )
