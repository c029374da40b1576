"""Sidecars, the pure parts: what a `binary_asset` names (refusing names outside the
source), which document takes which sidecar's metadata, and which files a run must read
to plan a group whole."""

from __future__ import annotations

from typing import Any

import pytest

from chromasync.corpus.read import decode_document
from chromasync.corpus.sidecar import asset_ref
from chromasync.plan.sidecars import group_reads, link_sidecars, sidecar_metadata
from chromasync.records import AssetRef, FileStat, FileState

SHA = "ab" * 32


@pytest.mark.parametrize(
    ("asset", "expected"),
    [
        ({"filename": "report.pdf", "sha256": SHA.upper()}, AssetRef("notes/report.pdf", SHA)),
        ({"filename": "../files/r.pdf"}, AssetRef("files/r.pdf")),
        ({"filename": "./a/../r.pdf"}, AssetRef("notes/r.pdf")),
        ({"sha256": SHA}, AssetRef("", SHA, "no-filename")),
        ({"filename": ""}, AssetRef("", "", "no-filename")),
        ({"filename": 12}, AssetRef("", "", "no-filename")),
        ({"filename": "../../etc/passwd"}, AssetRef("", "", "outside-source ../../etc/passwd")),
        ({"filename": "../.."}, AssetRef("", "", "outside-source ../..")),
        ({"filename": ".."}, AssetRef("", "", "outside-source ..")),
        ({"filename": "/etc/passwd"}, AssetRef("", "", "outside-source /etc/passwd")),
        ({"filename": "C:\\x.pdf"}, AssetRef("", "", "outside-source C:\\x.pdf")),
        ({"filename": "~/x.pdf"}, AssetRef("", "", "outside-source ~/x.pdf")),
        ({"filename": "a\x00b"}, AssetRef("", "", "outside-source a\\0b")),
    ],
)
def test_asset_ref(asset: dict[str, Any], expected: AssetRef) -> None:
    assert asset_ref("notes/report.md", {"binary_asset": asset}) == expected


@pytest.mark.parametrize("data", [{}, {"binary_asset": "report.pdf"}, {"binary_asset": None}])
def test_not_a_sidecar(data: dict[str, Any]) -> None:
    assert asset_ref("notes/report.md", data) is None


def _decode(text: str) -> Any:
    stat = FileStat("notes/r.md", "/x/notes/r.md", len(text), 0)
    return decode_document(stat, text.encode(), "h")


def test_read_keeps_the_asset_of_private_and_empty_sidecars() -> None:
    private = _decode("---\nprivate: true\nbinary_asset: {filename: r.pdf}\n---\nx\n")
    assert private.skip.reason == "private" and private.asset == AssetRef("notes/r.pdf")
    empty = _decode("---\ntags: [a]\nbinary_asset: {filename: r.pdf}\n---\n")
    assert empty.skip.reason == "empty" and empty.asset.metadata["tags"] == ["a"]
    forged = _decode("---\nsidecar: x.md\nsidecar_mismatch: false\n---\nBody\n")
    assert "sidecar" not in forged.document.metadata
    assert "sidecar_mismatch" not in forged.document.metadata


def test_link_sidecars() -> None:
    refs = {
        "a.md": AssetRef("r.pdf", SHA),
        "b.md": AssetRef("r.pdf"),  # a second sidecar of r.pdf
        "c.md": AssetRef("s.pdf", "cd" * 32),  # declares another hash
        "d.md": AssetRef("gone.pdf"),
        "e.md": AssetRef("link.pdf"),
        "f.md": AssetRef("", "", "no-filename"),
        "g.md": AssetRef("notes.txt"),
        "h.md": AssetRef("p.pdf"),
        "i.md": AssetRef("ignored.pdf"),
    }
    links = link_sidecars(
        refs,
        private={"h.md"},
        listed={"r.pdf", "s.pdf", "notes.txt", "p.pdf"},
        walk_skips={"link.pdf": "symlink-outside-root", "ignored.pdf": "ignored"},
        hashes={"r.pdf": SHA, "s.pdf": "ef" * 32},
    )
    assert links.described == {"r.pdf": "a.md", "s.pdf": "c.md"}
    assert links.mismatched == {"s.pdf"} and links.private == {"p.pdf"}
    assert links.rows == {
        "a.md": ("r.pdf", ""),
        "b.md": ("r.pdf", "duplicate a.md"),
        "c.md": ("s.pdf", f"sha256-mismatch {'cd' * 32}"),
        "d.md": ("gone.pdf", "not-found"),
        "e.md": ("link.pdf", "symlink"),
        "f.md": ("", "no-filename"),
        "g.md": ("notes.txt", ""),
        "h.md": ("p.pdf", ""),
        "i.md": ("ignored.pdf", ""),
    }


def _row(path: str, asset: str = "") -> FileState:
    return FileState(path, 1, 1, "h", 1, 1, (), asset=asset)


@pytest.mark.parametrize(
    ("read", "gone", "refs", "expected"),
    [
        ({"a.md"}, set(), {"a.md": AssetRef("new.pdf")}, {"r.pdf", "new.pdf"}),  # retargeted
        (set(), {"a.md"}, {}, {"r.pdf"}),  # the sidecar is gone: its document loses it
        ({"r.pdf"}, set(), {}, {"a.md"}),  # the document changed: its sidecar's metadata
        (set(), {"r.pdf"}, {}, {"a.md"}),  # the document is gone: the sidecar's finding
        ({"z.md"}, set(), {"z.md": AssetRef("r.pdf")}, {"a.md", "r.pdf"}),  # a new sidecar
        ({"other.md", "s.pdf"}, set(), {}, set()),  # no group touched
        ({"a.md", "r.pdf"}, set(), {"a.md": AssetRef("r.pdf")}, set()),  # already read
    ],
)
def test_group_reads(
    read: set[str], gone: set[str], refs: dict[str, AssetRef], expected: set[str]
) -> None:
    manifest = {p: _row(p) for p in ("r.pdf", "s.pdf", "other.md")} | {
        "a.md": _row("a.md", "r.pdf")
    }
    listed = {"a.md", "r.pdf", "s.pdf", "new.pdf", "other.md", "z.md"} - gone
    assert group_reads(read, gone, refs, manifest, listed) == expected


def test_sidecar_metadata_never_overrides_indexer_keys() -> None:
    merged = sidecar_metadata(
        {"title": "PDF title"},
        "notes/r.md",
        {"title": "Sidecar title", "path": "forged", "file_hash": "forged", "tags": ["a"]},
        mismatch=True,
    )
    assert merged == {
        "title": "Sidecar title",
        "tags": ["a"],
        "sidecar": "notes/r.md",
        "sidecar_mismatch": True,
    }
