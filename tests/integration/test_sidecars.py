"""Sidecars end to end: a Markdown file whose front matter names a `binary_asset` gives its
metadata (title, tags, dates...) to the document's records, so filters find the document's
pages; the two are kept in step (an edit of either, either gone) without re-embedding; a
sha256 mismatch, a missing filename and names outside the source are reported by verify.
Real PDFs from ../shared/corpora/pdf-samples, the hash provider, a real Chroma."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.metakeys import FILE_HASH_KEY
from chromasync.records import Hit, IngestSummary

from ..conftest import REPO, SHARED, age_tree, invoke_cli, oracle, set_mtime, snapshot
from .test_no_work import PROBE

PDFS = SHARED / "corpora" / "pdf-samples" / "text"
REPORT = "reports/report.pdf"  # file_pdfjs_test.pdf: 5 pages
OTHER = "other.pdf"  # issue840.pdf: 2 pages, no sidecar
SIDECAR = "notes/report.md"
#: A sentence of page 4 of file_pdfjs_test.pdf; one of issue840.pdf.
PAGE_4 = "SpeedTests is a framework for executing arbitrary tests"
FESTIVAL = "Download Festival 2009 Timetable"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_sidecar(
    root: Path,
    tags: str = "[finance, annual]",
    sha256: str | None = None,
    extra: str = "",
    path: str = SIDECAR,
    filename: str = "../reports/report.pdf",
) -> None:
    declared = sha256 if sha256 is not None else _sha(root / REPORT)
    (root / path).write_text(
        "---\n"
        "title: Annual report 2025\n"
        f"tags: {tags}\n"
        "date: 2025-03-01\n"
        f"{extra}"
        "binary_asset:\n"
        f"  filename: {filename}\n"
        f"  sha256: {declared}\n"
        "  size_bytes: 1234\n"
        "  content_type: application/pdf\n"
        "---\n\nThe annual report, as published.\n"
    )


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    if not PDFS.is_dir():
        pytest.skip("../shared/corpora/pdf-samples is not present")
    root = tmp_path / "corpus"
    (root / "reports").mkdir(parents=True)
    (root / "notes").mkdir()
    shutil.copyfile(PDFS / "file_pdfjs_test.pdf", root / REPORT)
    shutil.copyfile(PDFS / "issue840.pdf", root / OTHER)
    write_sidecar(root)
    (root / "notes" / "plain.md").write_text(
        "---\ntags: [finance]\n---\n# Budget\n\nA plain note about the budget.\n"
    )
    age_tree(root)
    return root


def _ingest(root: Path, settings: Settings, embedder: HashEmbedder) -> IngestSummary:
    [summary] = api.ingest([api.source_for(root, "docs")], settings, embedder=embedder)
    return summary


def _search(settings: Settings, embedder: HashEmbedder, query: str, **filters: Any) -> list[Hit]:
    request = api.search_request(api.SearchArgs.of(query, k=30, **filters), settings)
    return api.retrieve(request, settings, embedder=embedder).hits


def _records(settings: Settings, path: str) -> list[Any]:
    collection = api.open_store(settings).collection(settings.collection, create=False)
    return list(collection.iter_records(where={"path": path}))


def test_sidecar_metadata_applies_to_the_document_pages(
    corpus: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    first = _ingest(corpus, settings, embedder)
    assert first.files_new == 4 and first.files_skipped == {}
    hits = _search(settings, embedder, PAGE_4, tags=("annual",))
    assert {h.path for h in hits} == {REPORT, SIDECAR}  # the plain note and other.pdf: no
    best = next(h for h in hits if h.path == REPORT)
    assert PAGE_4 in best.text and best.citation.startswith(f"{REPORT} p. ")
    assert best.metadata["title"] == "Annual report 2025"
    assert best.metadata["sidecar"] == SIDECAR
    assert "sidecar_mismatch" not in best.metadata
    # every page's record takes the sidecar's fields; ours (path, pages, hash) stay ours
    records = _records(settings, REPORT)
    assert {r.metadata["page"] for r in records} >= {1, 2, 3, 4, 5}
    for record in records:
        assert record.metadata["tags"] == ["finance", "annual"]
        assert record.metadata["date"] == "2025-03-01" and "date_ts" in record.metadata
        assert record.metadata["binary_asset.content_type"] == "application/pdf"
        assert record.metadata["path"] == REPORT and record.metadata["doc_format"] == "pdf"
        assert record.metadata[FILE_HASH_KEY] == _sha(corpus / REPORT)
    # the filters apply to the document: a date range, a tag of the plain note
    dated = _search(settings, embedder, PAGE_4, after="2025-02-01", before="2025-04-01")
    assert REPORT in {h.path for h in dated}
    finance = _search(settings, embedder, FESTIVAL, tags=("finance",))
    assert OTHER not in {h.path for h in finance}
    [check] = api.verify(settings)
    assert check.ok and check.sidecar_findings == ()

    again = _ingest(corpus, settings, embedder)
    assert again.files_unchanged == 4 and again.chunks_embedded == 0
    assert again.documents_read == {}


def test_sidecar_edit_rewrites_metadata_and_reembeds_nothing(
    corpus: Path, settings: Settings, embedder: HashEmbedder, tmp_path: Path
) -> None:
    _ingest(corpus, settings, embedder)
    ids_before = sorted(r.id for r in _records(settings, REPORT))
    write_sidecar(corpus, tags="[finance, archived]")
    set_mtime(corpus / SIDECAR, 1_600_000_100)  # only the sidecar changed
    edited = _ingest(corpus, settings, embedder)
    assert edited.chunks_embedded == 0
    assert edited.files_updated == 2  # the sidecar and the PDF's metadata
    assert edited.files_unchanged == 2  # other.pdf, plain.md: the PDF is not counted twice
    assert edited.documents_read == {"pdf": 1}
    assert sorted(r.id for r in _records(settings, REPORT)) == ids_before
    assert REPORT in {h.path for h in _search(settings, embedder, PAGE_4, tags=("archived",))}
    assert REPORT not in {h.path for h in _search(settings, embedder, PAGE_4, tags=("annual",))}
    assert snapshot(settings) == oracle(corpus, tmp_path / "clean1", "docs")

    settled = _ingest(corpus, settings, embedder)  # the PDF's stat was recorded again
    assert settled.files_unchanged == 4 and settled.documents_read == {}

    # the document changes while its sidecar does not: its new pages take the metadata,
    # and the sha256 the sidecar declares no longer matches
    shutil.copyfile(PDFS / "issue840.pdf", corpus / REPORT)
    set_mtime(corpus / REPORT, 1_600_000_200)
    replaced = _ingest(corpus, settings, embedder)
    assert replaced.documents_read == {"pdf": 1} and replaced.chunks_embedded == 0  # cached
    hits = _search(settings, embedder, FESTIVAL, tags=("archived",))
    assert REPORT in {h.path for h in hits}
    assert all(r.metadata["sidecar_mismatch"] is True for r in _records(settings, REPORT))
    [check] = api.verify(settings)
    assert check.ok
    assert check.sidecar_findings == (
        f"{SIDECAR}: binary_asset.sha256 {_sha(PDFS / 'file_pdfjs_test.pdf')} does not match "
        f"{REPORT} (sha256 {_sha(corpus / REPORT)}); its text is indexed under "
        f"{SIDECAR}'s metadata anyway",
    )
    assert snapshot(settings) == oracle(corpus, tmp_path / "clean2", "docs")


def test_sidecar_removed_private_or_retargeted_keeps_the_document_in_step(
    corpus: Path, settings: Settings, embedder: HashEmbedder, tmp_path: Path
) -> None:
    _ingest(corpus, settings, embedder)
    (corpus / SIDECAR).unlink()
    removed = _ingest(corpus, settings, embedder)
    assert removed.chunks_embedded == 0 and removed.files_deleted == 1
    assert all(
        "tags" not in r.metadata and "sidecar" not in r.metadata for r in _records(settings, REPORT)
    )
    assert snapshot(settings) == oracle(corpus, tmp_path / "clean1", "docs")

    # a private sidecar makes its document private: nothing of it stays in the store
    write_sidecar(corpus, extra="private: true\n")
    set_mtime(corpus / SIDECAR, 1_600_000_100)
    private = _ingest(corpus, settings, embedder)
    assert private.files_skipped == {"private": 2}
    assert _records(settings, REPORT) == []
    assert PAGE_4 not in {h.text for h in _search(settings, embedder, PAGE_4)}
    unchanged = _ingest(corpus, settings, embedder)
    assert unchanged.files_skipped == {"private": 2} and unchanged.documents_read == {}

    # public again, then pointed at the other PDF: both documents follow, nothing embedded
    write_sidecar(corpus, tags="[restored]")
    set_mtime(corpus / SIDECAR, 1_600_000_200)
    public = _ingest(corpus, settings, embedder)
    assert public.chunks_embedded == 0 and public.files_skipped == {}
    assert {r.metadata["tags"] == ["restored"] for r in _records(settings, REPORT)} == {True}
    write_sidecar(corpus, tags="[moved]", filename="../other.pdf", sha256="")
    set_mtime(corpus / SIDECAR, 1_600_000_300)
    retargeted = _ingest(corpus, settings, embedder)
    assert retargeted.chunks_embedded == 0
    assert retargeted.documents_read == {"pdf": 2}
    assert all("tags" not in r.metadata for r in _records(settings, REPORT))
    assert {r.metadata["sidecar"] for r in _records(settings, OTHER)} == {SIDECAR}
    assert snapshot(settings) == oracle(corpus, tmp_path / "clean2", "docs")


def test_bad_filenames_are_refused_and_reported(
    corpus: Path, settings: Settings, embedder: HashEmbedder, cli_env: dict[str, str]
) -> None:
    outside = corpus.parent / "outside.pdf"
    shutil.copyfile(PDFS / "issue840.pdf", outside)
    os.symlink(outside, corpus / "notes" / "link.pdf")  # a symlink out of the root
    os.symlink(corpus / REPORT, corpus / "notes" / "alias.pdf")  # and one inside it
    cases = {
        "notes/nofile.md": None,
        "notes/passwd.md": "../../etc/passwd",
        "notes/absolute.md": str(outside),
        "notes/link.md": "link.pdf",
        "notes/alias.md": "alias.pdf",
        "notes/missing.md": "missing.pdf",
    }
    for path, filename in cases.items():
        if filename is None:
            (corpus / path).write_text(
                "---\ntitle: No file\nbinary_asset: {sha256: abc}\n---\nBody.\n"
            )
        else:
            write_sidecar(corpus, path=path, filename=filename, tags="[refused]", sha256="")
    age_tree(corpus)
    summary = _ingest(corpus, settings, embedder)
    assert summary.files_new == 4 + len(cases)  # every sidecar is still indexed itself
    paths = {r.metadata["path"] for r in _records(settings, REPORT)} | {
        h.path for h in _search(settings, embedder, FESTIVAL) if h.path.endswith(".pdf")
    }
    assert paths <= {REPORT, OTHER}  # nothing outside the root, no symlink indexed
    assert all(r.metadata["sidecar"] == SIDECAR for r in _records(settings, REPORT))
    [check] = api.verify(settings)
    assert check.ok
    assert set(check.sidecar_findings) == {
        f"notes/absolute.md: binary_asset.filename {str(outside)!r} is outside the source; refused",
        "notes/alias.md: binary_asset.filename names notes/alias.pdf, a symlink; refused",
        "notes/link.md: binary_asset.filename names notes/link.pdf, a symlink; refused",
        "notes/missing.md: binary_asset.filename names notes/missing.pdf, which does not exist",
        "notes/nofile.md: binary_asset has no filename; no document takes its metadata",
        "notes/passwd.md: binary_asset.filename '../../etc/passwd' is outside the source; refused",
    }
    cli = invoke_cli(["verify"], env=cli_env)
    assert cli.returncode == 0, cli.stderr  # problems of the corpus, not of the index
    assert (
        "sidecar (docs): notes/passwd.md: binary_asset.filename '../../etc/passwd' is "
        "outside the source; refused"
    ) in cli.stdout
    as_json = json.loads(invoke_cli(["verify", "--json"], env=cli_env).stdout)
    assert len(as_json[0]["sidecar_findings"]) == len(cases)

    # the missing file appears: its sidecar is read again and no longer reported
    shutil.copyfile(PDFS / "issue840.pdf", corpus / "notes" / "missing.pdf")
    set_mtime(corpus / "notes" / "missing.pdf", 1_600_000_000)
    _ingest(corpus, settings, embedder)
    [check] = api.verify(settings)
    assert not any(f.startswith("notes/missing.md") for f in check.sidecar_findings)
    tagged = {
        r.metadata.get("tags") == ["refused"] for r in _records(settings, "notes/missing.pdf")
    }
    assert tagged == {True}


def test_unchanged_rerun_with_sidecars_reads_nothing(corpus: Path, cli_env: dict[str, str]) -> None:
    assert invoke_cli(["ingest", str(corpus), "--quiet"], env=cli_env).returncode == 0
    env = {**os.environ, **cli_env, "PYTHONPATH": str(REPO / "src"), "CHROMASYNC_NO_FASTPATH": "1"}
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(corpus)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr
    [summary] = json.loads(probe.stdout)  # a list, one row per source
    assert summary["files_unchanged"] == 4 and summary["chunks_embedded"] == 0
    report = json.loads(probe.stderr.strip().splitlines()[-1])
    assert report["opened"] == [] and report["heavy"] == []
