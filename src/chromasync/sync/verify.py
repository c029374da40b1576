"""Verify: compare the manifest, the keyword index, the collection and the disk.

Design notes: docs/internals.md, `sync/verify.py`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..metakeys import RECORD_HASH_KEY, bookkeeping
from ..records import FileStat, FileState

if TYPE_CHECKING:
    from ..store.chroma import StoredRecord


@dataclass(frozen=True, slots=True)
class SourceCheck:
    """The differences found for one source; `ok` when there are none."""

    collection: str
    source: str
    files: int
    records: int
    orphans: tuple[str, ...] = ()  # in the collection, unknown to the manifest
    missing: tuple[str, ...] = ()  # in the manifest, absent from the collection
    mismatched: tuple[str, ...] = ()  # present in both, with other content or metadata
    duplicates: tuple[str, ...] = ()  # several records at one (path, chunk_index)
    keyword_orphans: tuple[str, ...] = ()  # in the keyword index only
    keyword_missing: tuple[str, ...] = ()  # missing from the keyword index
    stale_files: tuple[str, ...] = ()  # changed on disk since the last ingest
    unindexed_files: tuple[str, ...] = ()  # on disk, never ingested
    gone_files: tuple[str, ...] = ()  # in the manifest, gone from disk
    repaired: bool = False
    counts: Mapping[str, int] = field(default_factory=dict)
    sidecar_findings: tuple[str, ...] = ()  # one line each; see `sidecar_finding`
    #: records another tool wrote (no ownership marker): reported, kept, never a problem;
    #: such a check has `source` "" and nothing else
    foreign: int = 0
    foreign_sample: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not any(self.problem_counts().values())

    def problem_counts(self) -> dict[str, int]:
        names = (
            "orphans",
            "missing",
            "mismatched",
            "duplicates",
            "keyword_orphans",
            "keyword_missing",
            "stale_files",
            "unindexed_files",
            "gone_files",
        )
        return {name: len(getattr(self, name)) for name in names}

    def as_json(self) -> dict[str, object]:
        return {
            "collection": self.collection,
            "source": self.source,
            "files": self.files,
            "records": self.records,
            "ok": self.ok,
            "repaired": self.repaired,
            **self.problem_counts(),
            "examples": {
                name: list(getattr(self, name)[:5])
                for name, count in self.problem_counts().items()
                if count
            },
            "sidecar_findings": list(self.sidecar_findings),
            "foreign_records": self.foreign,
            "foreign_examples": list(self.foreign_sample),
        }


def compare_source(
    collection: str,
    source: str,
    manifest: Mapping[str, FileState],
    stored: Iterable[StoredRecord],
    keyword_ids: set[str],
    on_disk: Mapping[str, FileStat] | None,
) -> SourceCheck:
    """Every difference between the four views of one source.

    `stored` is read once, as it comes, keeping three fields a record (not its metadata):
    a collection of 100,000 files reads back in bounded pages, not all at once."""
    expected = {r.id: r for state in manifest.values() for r in state.records}
    rows = [
        (
            r.id,
            (str(r.metadata.get("path")), int(r.metadata.get("chunk_index", -1))),
            str(bookkeeping(r.metadata, RECORD_HASH_KEY) or ""),
        )
        for r in stored
    ]
    stored_ids = {rid for rid, _, _ in rows}
    positions = Counter(position for _, position, _ in rows)
    duplicates = tuple(sorted(rid for rid, position, _ in rows if positions[position] > 1))
    mismatched = tuple(
        sorted(
            rid
            for rid, _, record_hash in rows
            if rid in expected and record_hash != expected[rid].record_hash
        )
    )
    stale: list[str] = []
    unindexed: list[str] = []
    gone: list[str] = []
    if on_disk is not None:
        for path, stat in on_disk.items():
            known = manifest.get(path)
            if known is None:
                unindexed.append(path)
            elif (known.size, known.mtime_ns) != (stat.size, stat.mtime_ns):
                stale.append(path)
        gone = [p for p, s in manifest.items() if p not in on_disk and s.records]
    return SourceCheck(
        collection=collection,
        source=source,
        files=sum(1 for s in manifest.values() if s.records),
        records=len(expected),
        orphans=tuple(sorted(stored_ids - set(expected))),
        missing=tuple(sorted(set(expected) - stored_ids)),
        mismatched=mismatched,
        duplicates=duplicates,
        keyword_orphans=tuple(sorted(keyword_ids - set(expected))),
        keyword_missing=tuple(sorted(set(expected) - keyword_ids)),
        stale_files=tuple(sorted(stale)),
        unindexed_files=tuple(sorted(unindexed)),
        gone_files=tuple(sorted(gone)),
        sidecar_findings=tuple(
            sidecar_finding(path, state, manifest)
            for path, state in sorted(manifest.items())
            if state.asset_issue
        ),
    )


def sidecar_finding(path: str, state: FileState, manifest: Mapping[str, FileState]) -> str:
    """One line on what is wrong with the sidecar `path` (see `plan.sidecars`)."""
    code, _, detail = state.asset_issue.partition(" ")
    target = state.asset
    if code == "sha256-mismatch":
        document = manifest.get(target)
        actual = document.file_hash if document is not None else "?"
        return (
            f"{path}: binary_asset.sha256 {detail} does not match {target} "
            f"(sha256 {actual}); its text is indexed under {path}'s metadata anyway"
        )
    if code == "no-filename":
        return f"{path}: binary_asset has no filename; no document takes its metadata"
    if code == "outside-source":
        return f"{path}: binary_asset.filename {detail!r} is outside the source; refused"
    if code == "symlink":
        return f"{path}: binary_asset.filename names {target}, a symlink; refused"
    if code == "not-found":
        return f"{path}: binary_asset.filename names {target}, which does not exist"
    if code == "duplicate":
        return f"{path}: names {target}, which {detail} already describes; ignored"
    return f"{path}: binary_asset: {state.asset_issue}"
