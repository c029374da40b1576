"""Planning: pure decisions about what to read, embed, rewrite and delete.

Design notes: docs/internals.md, `plan/triage.py`.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
import time
from array import array
from collections.abc import Collection, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..corpus.documents import DocumentText, document_format, page_at_line
from ..corpus.frontmatter import RESERVED_KEYS
from ..corpus.links import MAX_FILE_LINKS, extract_links, front_matter_links, link_targets
from ..corpus.read import TRANSIENT_REASONS
from ..errors import SourceError
from ..metakeys import (
    BOOKKEEPING_KEYS,
    CHUNK_HASH_KEY,
    CHUNKING_VERSION_KEY,
    EMBEDDING_MODEL_KEY,
    FILE_HASH_KEY,
    FILE_VERSION_KEY,
    LEGACY_NAMES,
    OWNER_KEY,
    RECORD_HASH_KEY,
    bookkeeping,
    normalise_for_hash,
)
from ..records import (
    Chunk,
    Discovery,
    Document,
    FileChange,
    FileStat,
    FileState,
    MetaValue,
    Scalar,
    SourceSpec,
)
from ..versions import CHUNKING_VERSION, RECORD_SCHEMA_VERSION
from .packed import Columns, FileRecords, Packer, own_fields

#: A file modified within this window before its manifest row was written may have been
#: rewritten in the same timestamp tick ("racily clean", as git calls it): it is re-hashed.
#: Besides, the fast path compares ctime and inode as git does: a rewrite that restores
#: size and mtime still moves ctime, which no user call can set back.
RACY_WINDOW_NS = 1_000_000_000
#: Deleting more than this share of a source's files (and more than `MASS_DELETE_MIN`)
#: needs an explicit `allow_mass_delete`.
MASS_DELETE_SHARE = 0.5
MASS_DELETE_MIN = 20


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def page_starts_within(paged: DocumentText, start_line: int, end_line: int) -> list[str]:
    """`LINE:PAGE` for each page that starts inside lines (start_line, end_line] of a
    document's text: what a hit needs to cite the page of the lines it matched."""
    first = bisect.bisect_right(paged.page_starts, start_line)
    last = bisect.bisect_right(paged.page_starts, end_line)
    return [f"{paged.page_starts[i]}:{paged.pages[i]}" for i in range(first, last)]


def id_prefix(source: str, document_key: str) -> str:
    """The part of a record's ID that all the records of one document share: its source's
    and its document key's hashes (`plan.packed.record_id`)."""
    return f"{_sha(source)[:8]}-{_sha(document_key)[:16]}-"


def namespace_id(organization: str, repository: str, branch: str) -> str:
    """The repository indexer's namespace id of a checkout: the sha256 (hex) of the JSON
    list `[organization, repository, branch]`, no spaces, not ASCII-escaped (its
    `identity.namespace_id`)."""
    return _sha(
        json.dumps([organization, repository, branch], ensure_ascii=False, separators=(",", ":"))
    )


def source_path(root: str, rel_path: str) -> str:
    """The file's path as a record's `source` holds it: the root joined with the path."""
    return f"{root.rstrip('/')}/{rel_path}" if root else rel_path


_ID_SHAPE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{16}-[0-9a-f]{16}-[0-9]{1,9}")


def written_by(source: str, rid: str, metadata: Mapping[str, object]) -> bool:
    """Whether a record without the ownership marker (`OWNER_KEY`: an index written before
    it existed) was written by chromasync for `source`: its id is `record_id`'s for that
    source and it holds the hashes chromasync records. (Used once, to add the marker.)"""
    return (
        _ID_SHAPE.fullmatch(rid) is not None
        and rid.startswith(_sha(source)[:8] + "-")
        and metadata.get("source") == source
        and isinstance(bookkeeping(metadata, RECORD_HASH_KEY), str)
        and isinstance(bookkeeping(metadata, CHUNK_HASH_KEY), str)
    )


def _record_digest(metadata: Mapping[str, MetaValue], document: str) -> bytes:
    """A record's `record_hash` (as bytes): its metadata (the bookkeeping keys under their
    older names, `LEGACY_NAMES`, so renaming them changed no hash) and its document."""
    named = {LEGACY_NAMES.get(k, k): v for k, v in metadata.items()}
    text = json.dumps(named, sort_keys=True, ensure_ascii=False, default=str) + "\x00" + document
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True, slots=True)
class RecordContext:
    """What every record of one source's run shares."""

    source: str
    source_kind: str
    embedding_model: str
    static_metadata: Mapping[str, Scalar] = field(default_factory=dict)
    extra_metadata: Mapping[str, Scalar] = field(default_factory=dict)  # e.g. commit sha
    source_root: str = ""  # the source's root: a record's `source` is the file's path in it
    ingested_at: str = ""  # when this run writes, ISO 8601 UTC (beside the record hash)
    identity: tuple[str, str, str] | None = None  # (organization, repository, branch)

    @classmethod
    def of(
        cls, spec: SourceSpec, model: str, extra: Mapping[str, Scalar], now_ns: int
    ) -> RecordContext:
        """The context of a run over `spec` that writes at `now_ns`."""
        return cls(
            source=spec.label,
            source_kind=spec.kind,
            embedding_model=model,
            static_metadata=spec.static_metadata,
            extra_metadata=extra,
            source_root=str(spec.root),
            ingested_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now_ns // 10**9)),
            identity=spec.identity,
        )


#: A document's kind as the repository indexer names its chunking strategy.
_STRATEGY = {"markdown": "markdown", "code": "code", "text": "generic", "document": "document"}


def _identity_fields(doc: Document, identity: tuple[str, str, str]) -> dict[str, MetaValue]:
    """The repository indexer's fields of one file of a checkout with an identity."""
    name = doc.rel_path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    kinds = {"markdown": "markdown", "code": doc.language or "code", "text": "text"}
    return {
        "organization": identity[0],
        "namespace_id": namespace_id(*identity),
        "file_name": name,
        "file_extension": name[dot:].lower() if dot > 0 else "",
        "file_type": kinds.get(doc.kind, doc.doc_format or doc.kind),
        "chunking_strategy": _STRATEGY[doc.kind],
        "schema_version": RECORD_SCHEMA_VERSION,
    }


def _placed(chunk: Chunk, doc: Document, paged: DocumentText | None) -> dict[str, MetaValue]:
    """A chunk's optional place fields: its language where it is not the document's, its
    symbol, and for a paged document the pages its lines came from (where each later page
    starts)."""
    placed: dict[str, MetaValue] = {}
    if chunk.language and chunk.language != doc.language:
        placed["language"] = chunk.language
    if chunk.symbol:
        placed["symbol"] = chunk.symbol
    if paged is not None:
        placed["page"] = page_at_line(paged, chunk.start_line)
        placed["page_end"] = page_at_line(paged, chunk.end_line)
        if placed["page_end"] != placed["page"]:
            placed["page_starts"] = page_starts_within(paged, chunk.start_line, chunk.end_line)
    return placed


def _hashed(doc: Document, ctx: RecordContext, version: int, count: int) -> dict[str, MetaValue]:
    """The fields of a document that each of its records' hash covers: its front matter
    and the source's, then ours, which win (and no one else's value stays under a
    bookkeeping key's older name)."""
    fields = {k: v for k, v in doc.metadata.items() if k not in BOOKKEEPING_KEYS}
    fields.update({k: v for k, v in ctx.static_metadata.items() if k not in RESERVED_KEYS})
    fields.update(ctx.extra_metadata)
    fields.update(
        {
            "source": ctx.source,
            "source_kind": ctx.source_kind,
            "path": doc.rel_path,
            FILE_HASH_KEY: doc.file_hash,
            "chunk_count": count,
            CHUNKING_VERSION_KEY: CHUNKING_VERSION,
            EMBEDDING_MODEL_KEY: ctx.embedding_model,
            FILE_VERSION_KEY: version,
        }
    )
    if doc.language:
        fields["language"] = doc.language
    if doc.identity:
        fields["document_id"] = doc.identity
    if doc.pages:
        fields["doc_format"] = doc.doc_format
    return fields


def _unhashed(
    doc: Document, ctx: RecordContext, mtime_ns: int, key: str, hashed: Mapping[str, MetaValue]
) -> dict[str, MetaValue]:
    """The fields of a document written after its records' hash (adding them to an older
    index rewrote no record): the owner, the file's path as LangChain looks for it (the
    hash has the label), the keys LlamaIndex deletes and groups by, the run's
    `ingested_at`, the file's `last_modified_mtime` (seconds), and with an identity the
    repository indexer's fields."""
    fields: dict[str, MetaValue] = {OWNER_KEY: ctx.source}
    if ctx.source_root:
        fields["source"] = source_path(ctx.source_root, doc.rel_path)
    if "document_id" not in hashed:
        fields["document_id"] = key
    fields["ref_doc_id"] = key
    if ctx.ingested_at:
        fields["ingested_at"] = ctx.ingested_at
    if mtime_ns:
        fields["last_modified_mtime"] = mtime_ns / 1e9
    if ctx.identity is not None:
        fields.update(_identity_fields(doc, ctx.identity))
    return fields


def build_records(
    doc: Document,
    chunks: Sequence[Chunk],
    version: int,
    ctx: RecordContext,
    mtime_ns: int = 0,
    key: str | None = None,
) -> FileRecords:
    """The records to store for one document: IDs, texts and metadata (ours win); `key`:
    the document key when not its identity or path (a duplicate identity's path). Each
    chunk's `char_count` and `_unhashed` fields are written after the record hash; the
    records are packed over the document's chunks and fields (`plan.packed`)."""
    key = key or doc.identity or doc.rel_path
    hashed = _hashed(doc, ctx, version, len(chunks))
    paged = DocumentText(doc.text, doc.pages, doc.page_starts) if doc.pages else None
    seen: dict[bytes, int] = {}
    digests, occurrences = bytearray(), array("I")
    extras: dict[int, dict[str, MetaValue]] = {}
    header = "\n".join(doc.text.split("\n", doc.body_start_line)[: doc.body_start_line - 1])
    header_links = front_matter_links(doc.metadata, header)
    links_left = MAX_FILE_LINKS
    for index, chunk in enumerate(chunks):
        digest = hashlib.sha256(
            normalise_for_hash(chunk.embed_text).encode("utf-8", "surrogatepass")
        ).digest()
        occurrences.append(seen.get(digest, 0))
        seen[digest] = occurrences[-1] + 1
        extra = _placed(chunk, doc, paged)
        # outgoing links: metadata only (a changed link is a rewrite, never an embedding);
        # the overlap with the chunk before is left to that chunk
        found = extract_links(
            chunk.text[chunk.overlap :],
            doc.rel_path,
            chunk.start_line + chunk.text.count("\n", 0, chunk.overlap),
        )
        targets = link_targets([*found, *(header_links if index == 0 else ())])[:links_left]
        links_left -= len(targets)
        if targets:
            extra["links"] = targets
        if extra:
            extras[index] = extra
        own = own_fields(digest.hex(), index, chunk, extra)
        digests += digest + _record_digest({**hashed, **own}, chunk.text)
    pack = Packer({**hashed, **_unhashed(doc, ctx, mtime_ns, key, hashed)})
    prefix = id_prefix(ctx.source, key)
    return FileRecords(Columns(chunks, prefix, bytes(digests), occurrences, extras, pack))


@dataclass(frozen=True, slots=True)
class Triage:
    """Files sorted by what they need, from stat alone."""

    unchanged: tuple[str, ...]
    remembered_skips: Mapping[str, str]  # path -> reason, unchanged since it was skipped
    to_read: tuple[FileStat, ...]
    gone: tuple[str, ...]  # in the manifest, no longer in the source


def is_racy(state: FileState) -> bool:
    return state.mtime_ns + RACY_WINDOW_NS >= state.checked_ns


def _read_as_binary_before(known: FileState) -> bool:
    """A document remembered as a `binary` skip by a release that did not read documents:
    it is read again (once; then its records or its document skip are remembered)."""
    return known.skip_reason == "binary" and document_format(known.rel_path) is not None


def triage(
    discovery: Discovery,
    manifest: Mapping[str, FileState],
    checksum: bool = False,
    reread: frozenset[str] = frozenset(),
) -> Triage:
    """Compare stat with the manifest. `checksum` reads every file (like rsync -c);
    `reread`: skip reasons remembered by stat that are read again all the same (an
    `undecodable` file once its source names an `encoding`)."""
    unchanged: list[str] = []
    skips: dict[str, str] = {}
    to_read: list[FileStat] = []
    for file in discovery.files:
        known = manifest.get(file.rel_path)
        if (
            known is not None
            and not checksum
            and (known.size, known.mtime_ns, known.ctime_ns, known.inode)
            == (file.size, file.mtime_ns, file.ctime_ns, file.inode)
            and not is_racy(known)
            and not _read_as_binary_before(known)
            and known.skip_reason not in reread
        ):
            if known.skip_reason:
                skips[file.rel_path] = known.skip_reason
            else:
                unchanged.append(file.rel_path)
        else:
            to_read.append(file)
    present = {f.rel_path for f in discovery.files}
    kept = {s.rel_path for s in discovery.skipped if s.reason in TRANSIENT_REASONS}
    protected = tuple(d + "/" for d in discovery.unreadable_dirs)
    gone = [
        path
        for path in manifest
        if path not in present
        and path not in kept
        and not any(path.startswith(p) or p == "/" for p in protected)
    ]
    return Triage(tuple(unchanged), skips, tuple(to_read), tuple(sorted(gone)))


def plan_file(
    stat: FileStat,
    doc: Document,
    chunks: Sequence[Chunk],
    previous: FileState | None,
    ctx: RecordContext,
    key: str | None = None,
) -> FileChange:
    """The writes that bring one file's records from `previous` to `doc`'s chunks (`key`:
    see `build_records`)."""
    if previous is None or not previous.records:
        version = (previous.version + 1) if previous is not None else 1
    elif previous.file_hash == doc.file_hash:
        version = previous.version
    else:
        version = previous.version + 1
    records = build_records(doc, chunks, version, ctx, stat.mtime_ns, key)
    before = {r.id: r.record_hash for r in previous.records} if previous else {}
    to_embed, to_rewrite, to_delete = records, records.take(()), tuple[str, ...]()
    if before:
        embed: list[int] = []
        rewrite: list[int] = []
        for row, rid, record_hash in records.id_rows():
            held = before.pop(rid, None)
            if held is None:
                embed.append(row)
            elif held != record_hash:
                rewrite.append(row)
        to_embed, to_rewrite = records.take(embed), records.take(rewrite)
        to_delete = tuple(sorted(before))  # what no record of the file has any longer
    return FileChange(
        rel_path=stat.rel_path,
        stat=stat,
        file_hash=doc.file_hash,
        version=version,
        records=records,
        to_embed=to_embed,
        to_rewrite=to_rewrite,
        to_delete=to_delete,
        is_new=previous is None or bool(previous.skip_reason),
    )


def deletions(
    ids: Iterable[str],
    gone: Iterable[str],
    skipped: Iterable[str],
    manifest: Mapping[str, FileState],
    wanted: Container[str],
    changed: Collection[str] = (),
) -> list[str]:
    """The record IDs to delete once every write succeeded: `ids` (records the changed files
    no longer have), then the records of the files gone and of the files newly `skipped`.
    A document whose identity key moved with it (a rename) keeps its record IDs: what
    another path still wants (`wanted`) is rewritten, never deleted; nor is a record that
    the row of a file left as it is (not gone, skipped or `changed`) still lists."""
    gone, skipped = list(gone), list(skipped)
    found = list(ids)
    found += [r.id for p in gone for r in manifest[p].records]
    found += [r.id for p in skipped if p in manifest for r in manifest[p].records]
    found = [i for i in dict.fromkeys(found) if i not in wanted]
    if found:  # a record two rows share (`plan.identities`) goes with the last of them
        leaving, ids = {*gone, *skipped, *changed}, set(found)
        kept = {r.id for p, s in manifest.items() if p not in leaving for r in s.records}
        found = [i for i in found if i not in kept & ids]
    return found


def chunks_total(
    manifest: Mapping[str, FileState],
    changes: Sequence[FileChange],
    gone: Iterable[str],
    skipped: Mapping[str, FileState],
) -> int:
    """The source's records once `changes` are written and `gone` and `skipped` removed."""
    counts = {p: len(s.records) for p, s in manifest.items()}
    for change in changes:
        counts[change.rel_path] = len(change.records)
    for path in (*gone, *skipped):
        counts[path] = 0
    return sum(counts.values())


def restat(
    previous: FileState, stat: FileStat, now: int, asset: str, asset_issue: str
) -> FileState:
    """The row of a file whose content needs no write: its new stat, checked `now`."""
    return replace(
        previous,
        size=stat.size,
        mtime_ns=stat.mtime_ns,
        ctime_ns=stat.ctime_ns,
        inode=stat.inode,
        checked_ns=now,
        asset=asset,
        asset_issue=asset_issue,
    )


def check_deletions(
    known_files: int, gone_files: int, allow_mass_delete: bool, label: str, found_files: int = 0
) -> None:
    """Refuse to delete most of a source, or all of it, without an explicit flag.

    Every file of a source gone at once, with nothing found in its place (`found_files`,
    what the walk saw now), is what an empty mount point or a vanished root looks like:
    refused whatever the source's size. Above `MASS_DELETE_MIN` files, losing more than
    `MASS_DELETE_SHARE` of them is refused too, even with new files beside them.
    """
    if allow_mass_delete or gone_files <= 0:
        return
    if gone_files >= known_files and found_files == 0:
        raise SourceError(
            f"source {label!r}: all {known_files} indexed file(s) are gone from disk; "
            "refusing to delete the whole source (is its folder empty or a mount missing?). "
            "Pass --allow-mass-delete to delete them, or remove the source (`chromasync "
            f"sources remove {label}`)."
        )
    if gone_files <= MASS_DELETE_MIN:
        return
    if gone_files > known_files * MASS_DELETE_SHARE:
        raise SourceError(
            f"source {label!r}: {gone_files} of {known_files} indexed files are gone from "
            "disk; refusing to delete most of the source (is a mount missing?). Pass "
            "--allow-mass-delete to delete them."
        )
