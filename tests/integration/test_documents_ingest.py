"""Documents end to end: a few real PDFs and a built DOCX ingested into a real Chroma with
the hash provider, searched and cited by page, re-run, edited, moved; bad PDFs are counted
skips with their reason. The PDFs are copied from ../shared/corpora/pdf-samples."""

from __future__ import annotations

import shutil
from pathlib import Path

import docx
import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.records import IngestSummary

from ..conftest import SHARED, age_tree

PDFS = SHARED / "corpora" / "pdf-samples"
#: (folder in pdf-samples, file) copied into the test corpus.
SAMPLES = (
    ("text", "file_pdfjs_test.pdf"),  # 5 pages, bookmarks
    ("text", "issue840.pdf"),  # 2 pages
    ("encrypted", "issue6010_1.pdf"),
    ("broken", "bug1250079.pdf"),
    ("no-text", "PDFBOX-4352-0.pdf"),
)
#: A sentence of page 4 of file_pdfjs_test.pdf.
PAGE_4 = "SpeedTests is a framework for executing arbitrary tests"
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]


def _paragraph(section: int) -> str:
    """40 made-up words (some 160 word pieces): each section is a chunk of its own."""
    return " ".join(f"{WORDS[(section * 7 + i) % len(WORDS)]}{section}x{i}" for i in range(40))


def write_docx(path: Path, changed: bool = False) -> None:
    d = docx.Document()
    d.core_properties.title = "Field report"
    for section in range(4):
        d.add_heading(f"Section {section}", level=1)
        text = _paragraph(section)
        if changed and section == 2:
            text += " an added closing remark"
        d.add_paragraph(text)
    d.save(str(path))


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    if not PDFS.is_dir():
        pytest.skip("../shared/corpora/pdf-samples is not present")
    root = tmp_path / "corpus"
    for folder, name in SAMPLES:
        (root / folder).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PDFS / folder / name, root / folder / name)
    write_docx(root / "report.docx")
    (root / "notes.md").write_text("# Notes\n\nPlain notes beside the documents.\n")
    (root / "slides.pptx").write_bytes(b"not read: .pptx is opt-in")
    age_tree(root)
    return root


def _ingest(root: Path, settings: Settings, embedder: HashEmbedder) -> IngestSummary:
    [summary] = api.ingest([api.source_for(root, "docs")], settings, embedder=embedder)
    return summary


def test_documents_indexed_cited_by_page_and_skips_counted(
    corpus: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    first = _ingest(corpus, settings, embedder)
    assert first.files_new == 4  # two PDFs, the DOCX, the notes
    assert first.files_skipped == {
        "encrypted": 1,
        "corrupt": 1,
        "no-text": 1,
        "unsupported-extension": 1,
    }
    hits = api.search(PAGE_4, settings, k=5, embedder=embedder)
    best = hits[0]
    assert best.path == "text/file_pdfjs_test.pdf" and PAGE_4 in best.text
    assert best.page is not None and best.page <= 4 <= int(best.metadata["page_end"])
    assert best.citation.startswith("text/file_pdfjs_test.pdf p. ")
    assert best.metadata["doc_format"] == "pdf"
    # a chunk of one page only is cited by that page alone
    stored = api.open_store(settings).collection(settings.collection, create=False)
    pages = {
        (r.metadata["page"], r.metadata["page_end"])
        for r in stored.iter_records(where={"path": "text/file_pdfjs_test.pdf"})
    }
    assert {p for p, _ in pages} >= {1, 2, 3, 4, 5}
    # the DOCX is one page, its headings are heading paths; the Markdown note has no page
    [docx_hit] = [
        h
        for h in api.search("Section 2", settings, k=20, embedder=embedder)
        if h.path == "report.docx" and h.heading.endswith("Section 2")
    ]
    assert docx_hit.citation == "report.docx p. 1" and docx_hit.metadata["title"] == "Field report"
    [note] = [
        h
        for h in api.search("plain notes", settings, k=20, embedder=embedder)
        if h.path == "notes.md"
    ]
    assert note.page is None and note.citation == f"notes.md:{note.start_line}-{note.end_line}"

    again = _ingest(corpus, settings, embedder)
    assert again.chunks_embedded == 0 and again.files_unchanged == 4 and again.files_new == 0
    assert again.files_skipped == first.files_skipped


def test_docx_edit_reembeds_one_chunk_and_move_reembeds_nothing(
    corpus: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    first = _ingest(corpus, settings, embedder)
    write_docx(corpus / "report.docx", changed=True)
    edited = _ingest(corpus, settings, embedder)
    assert edited.files_updated == 1 and edited.chunks_embedded == 1
    assert edited.chunks_deleted == 1 and edited.chunks_total == first.chunks_total

    (corpus / "moved").mkdir()
    (corpus / "text" / "issue840.pdf").rename(corpus / "moved" / "issue840.pdf")
    moved = _ingest(corpus, settings, embedder)
    assert moved.chunks_embedded == 0 and moved.files_new == 1 and moved.files_deleted == 1
    hits = api.search("Download Festival 2009 Timetable", settings, k=3, embedder=embedder)
    assert hits[0].citation.startswith("moved/issue840.pdf p. ")


def test_opt_in_formats_need_include_extensions(
    corpus: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    (corpus / "page.html").write_text(
        "<html><head><title>T</title></head><body><h1>Kettle</h1><p>Descale monthly.</p>"
        "</body></html>"
    )
    spec = api.source_for(corpus, "docs", extensions=(".html", ".md"))
    [summary] = api.ingest([spec], settings, embedder=embedder)
    assert summary.files_new == 2  # page.html and notes.md; the PDFs and DOCX not listed
    [hit] = [
        h
        for h in api.search("descale monthly", settings, k=5, embedder=embedder)
        if h.path == "page.html"
    ]
    assert hit.heading == "Kettle" and hit.citation == "page.html p. 1"
    assert "<p>" not in hit.text


def test_rest_cites_pages_and_serves_the_extracted_text(
    corpus: Path, settings: Settings, embedder: HashEmbedder, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from chromasync.owner.service import Service
    from chromasync.rest import create_app

    _ingest(corpus, settings, embedder)
    with (
        Service(settings, "serve", embedder=embedder, allow_roots=[tmp_path]) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as client,
    ):
        body = client.get("/search", params={"q": PAGE_4, "k": 3}).json()
        hit = body["hits"][0]
        assert hit["path"] == "text/file_pdfjs_test.pdf"
        page, page_end = hit["metadata"]["page"], hit["metadata"]["page_end"]
        want = f"p. {page}" if page == page_end else f"p. {page}-{page_end}"
        assert hit["citation"] == f"text/file_pdfjs_test.pdf {want}"
        found = client.get("/file", params={"source": "docs", "path": hit["path"]})
        assert found.status_code == 200, found.text
        file = found.json()
        assert file["pages"] == [1, 2, 3, 4, 5] and len(file["page_starts"]) == 5
        lines = file["text"].split("\n")
        cited = "\n".join(lines[hit["start_line"] - 1 : hit["end_line"]])
        assert PAGE_4 in cited and "%PDF" not in file["text"]
        # the page the cited lines start on is the page the hit cites
        starts = file["page_starts"]
        assert (
            max(p for p, s in zip(file["pages"], starts, strict=True) if s <= hit["start_line"])
            == page
        )


def test_dry_run_and_chunk_report_count_documents_pages_and_skips(
    corpus: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    spec = api.source_for(corpus, "docs")
    [plan] = api.ingest(
        [spec], settings, api.default_options(settings, dry_run=True), embedder=embedder
    )
    assert plan.dry_run and plan.documents_read == {"pdf": 2, "docx": 1}
    assert plan.pages_read == 5 + 2 + 1
    assert plan.files_skipped["encrypted"] == plan.files_skipped["corrupt"] == 1
    report = api.chunk_report(corpus, settings, embedder=embedder).as_json()
    assert report["documents"] == {
        "docx": {"files": 1, "pages": 1},
        "pdf": {"files": 2, "pages": 7},
    }
    assert report["skipped"]["no-text"] == 1 and report["files"] == 4
    [real] = api.ingest([spec], settings, embedder=embedder)
    assert real.documents_read == plan.documents_read and real.pages_read == plan.pages_read
    [again] = api.ingest([spec], settings, embedder=embedder)
    assert again.documents_read == {} and again.pages_read == 0  # nothing read again


def test_a_chunk_over_two_pages_cites_the_page_of_the_matched_lines(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """file_pdfjs_test.pdf has a chunk over pages 4-5: a hit on its page-5 lines cites
    p. 5, one on its page-4 lines p. 4, on every surface's citation (issue 29)."""
    if not PDFS.is_dir():
        pytest.skip("../shared/corpora/pdf-samples is not present")
    root = tmp_path / "pdf"
    root.mkdir()
    shutil.copyfile(PDFS / "text" / "file_pdfjs_test.pdf", root / "guide.pdf")
    age_tree(root)
    api.ingest([api.source_for(root, "docs")], settings, embedder=embedder)

    def spanning(query: str) -> api.Hit:
        """The hit of the chunk over pages 4-5."""
        hits = api.search(query, settings, k=20, mode="keyword", embedder=embedder)
        spans = {h.id: (h.metadata["page"], h.metadata["page_end"]) for h in hits}
        return next(h for h in hits if spans[h.id] == (4, 5))

    hit = spanning("Peptest responsiveness Talos Reftest")
    assert hit.citation == "guide.pdf p. 5" and hit.page == 5
    assert spanning("crashtest isolate problem xpcshell").citation == "guide.pdf p. 4"
    assert hit.as_json()["pages"] == [5]
    assert api.Hit.from_json(hit.as_json()).citation == "guide.pdf p. 5"  # the owner's wire
