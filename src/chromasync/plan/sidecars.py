"""Sidecars and the documents they describe, planned as groups (pure).

Design notes: docs/internals.md, `plan/sidecars.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

from ..corpus.documents import document_format
from ..corpus.frontmatter import RESERVED_KEYS
from ..records import AssetRef, FileState, MetaValue

_SYMLINK_REASONS = frozenset(
    {"broken-symlink", "symlink-duplicate", "symlink-loop", "symlink-outside-root"}
)


@dataclass(frozen=True, slots=True)
class SidecarLinks:
    """Which document takes which sidecar's metadata, decided for one run's reads."""

    described: Mapping[str, str]  # document -> the sidecar whose metadata it takes
    mismatched: frozenset[str]  # documents whose sidecar declares another sha256
    private: frozenset[str]  # documents named by a private sidecar
    rows: Mapping[str, tuple[str, str]]  # sidecar -> (asset, asset_issue) to remember


def remembered_targets(manifest: Mapping[str, FileState]) -> dict[str, str]:
    """sidecar -> the file it named when it was last read."""
    return {path: state.asset for path, state in manifest.items() if state.asset}


def group_reads(
    read: Set[str],
    gone: Set[str],
    refs: Mapping[str, AssetRef],
    manifest: Mapping[str, FileState],
    listed: Set[str],
) -> set[str]:
    """Listed files not read yet that must be read so that every group which this run's
    reads (`read`, with the sidecars found in them: `refs`) and deletions (`gone`) touch
    is planned whole: the documents that read or gone sidecars name or named, and the
    sidecars that name a read or gone document."""
    before = remembered_targets(manifest)
    touched = set(read) | set(gone)
    for path in read | gone:
        if path in before:
            touched.add(before[path])
        ref = refs.get(path)
        if ref is not None and ref.target:
            touched.add(ref.target)
    need = {p for p in touched if p in listed and document_format(p) is not None}
    need |= {s for s, target in before.items() if target in touched and s in listed}
    return need - set(read)


def link_sidecars(
    refs: Mapping[str, AssetRef],
    private: Set[str],
    listed: Set[str],
    walk_skips: Mapping[str, str],
    hashes: Mapping[str, str],
) -> SidecarLinks:
    """Match the sidecars read (`refs`; `private`: those that are private skips) with the
    documents they name. `listed`: the walk's files; `walk_skips`: path -> its reason;
    `hashes`: path -> sha256 of the files read."""
    described: dict[str, str] = {}
    mismatched: set[str] = set()
    private_docs: set[str] = set()
    rows: dict[str, tuple[str, str]] = {}
    for sidecar in sorted(refs):
        ref = refs[sidecar]
        target = ref.target
        if ref.issue:
            rows[sidecar] = ("", ref.issue)
            continue
        if target not in listed:
            if walk_skips.get(target) in _SYMLINK_REASONS:
                rows[sidecar] = (target, "symlink")
            elif target in walk_skips:
                rows[sidecar] = (target, "")  # an ignored or skipped file: its own count
            else:
                rows[sidecar] = (target, "not-found")
            continue
        if document_format(target) is None:
            rows[sidecar] = (target, "")  # describes a text file: nothing to merge
            continue
        if sidecar in private:
            private_docs.add(target)
            rows[sidecar] = (target, "")
            continue
        if target in described:
            rows[sidecar] = (target, f"duplicate {described[target]}")
            continue
        described[target] = sidecar
        actual = hashes.get(target, "")
        if ref.sha256 and actual and ref.sha256 != actual:
            mismatched.add(target)
            rows[sidecar] = (target, f"sha256-mismatch {ref.sha256}")
        else:
            rows[sidecar] = (target, "")
    for target in private_docs:  # a private sidecar wins over a public one
        described.pop(target, None)
        mismatched.discard(target)
    return SidecarLinks(described, frozenset(mismatched), frozenset(private_docs), rows)


def sidecar_metadata(
    own: Mapping[str, MetaValue],
    sidecar: str,
    metadata: Mapping[str, MetaValue],
    mismatch: bool,
) -> dict[str, MetaValue]:
    """A document's metadata under its sidecar's: the sidecar's fields over the
    document's own (its PDF title...), never an indexer-owned key."""
    merged: dict[str, MetaValue] = dict(own)
    merged.update({k: v for k, v in metadata.items() if k not in RESERVED_KEYS})
    merged["sidecar"] = sidecar
    if mismatch:
        merged["sidecar_mismatch"] = True
    return merged
