"""pdf-samples indexed whole with the real default model (`local`), plus a DOCX and an
opted-in HTML file: every text PDF is indexed with its pages, every encrypted, broken and
text-less one is a counted skip with its reason, and a sentence is found on its page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import docx
import pytest

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.embed.local import LocalEmbedder

from ..conftest import SHARED

PDFS = SHARED / "corpora" / "pdf-samples"
REASON = {"encrypted": "encrypted", "broken": "corrupt", "no-text": "no-text"}

pytestmark = [pytest.mark.slow, pytest.mark.model]


def test_pdf_samples_with_the_default_model(tmp_path: Path) -> None:
    if not (PDFS / "expected.json").is_file():
        pytest.skip("../shared/corpora/pdf-samples is not present")
    expected = json.loads((PDFS / "expected.json").read_text())
    root = tmp_path / "corpus"
    shutil.copytree(PDFS, root, ignore=shutil.ignore_patterns("*.json", "*.md"))
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    d = docx.Document()
    d.add_heading("Kettle care", level=1)
    d.add_paragraph("Descale the kettle every month with citric acid.")
    d.save(str(root / "kettle.docx"))
    (root / "page.html").write_text("<h1>Grinder</h1><p>Clean the burrs weekly.</p>")
    settings = resolve_settings(
        {"data_dir": str(tmp_path / "data"), "provider": "local"},
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    embedder = LocalEmbedder()
    extensions = (".pdf", ".docx", ".html")
    spec = api.source_for(root, "pdfs", extensions=extensions)
    [summary] = api.ingest([spec], settings, embedder=embedder)
    bad = {f: len(files) for f, files in expected.items() if f in REASON}
    assert summary.files_skipped == {REASON[f]: n for f, n in bad.items()}
    assert summary.files_new == len(expected["text"]) + 2
    assert summary.documents_read == {"pdf": len(expected["text"]), "docx": 1, "html": 1}
    assert summary.pages_read == sum(e["pages"] for e in expected["text"].values()) + 2

    stored = api.open_store(settings).collection(settings.collection, create=False)
    pages: dict[str, set[int]] = {}
    for record in stored.iter_records():
        meta = record.metadata
        assert 1 <= int(meta["page"]) <= int(meta["page_end"])
        pages.setdefault(str(meta["path"]), set()).add(int(meta["page_end"]))
    for name, want in expected["text"].items():
        got = pages[f"text/{name}"]
        assert max(got) <= want["pages"], name

    hits = api.search("how often should the kettle be descaled", settings, k=3, embedder=embedder)
    assert hits[0].citation == "kettle.docx p. 1"
    query = "SpeedTests is a framework for executing arbitrary tests"
    [best] = api.search(query, settings, k=1, embedder=embedder)
    assert best.path == "text/file_pdfjs_test.pdf" and best.page is not None
    assert best.page <= 4 <= int(best.metadata["page_end"])
    [again] = api.ingest([spec], settings, embedder=embedder)
    assert again.chunks_embedded == 0 and again.files_skipped == summary.files_skipped
