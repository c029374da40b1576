"""Document bombs: memory follows the budgets, not what a file claims.

Each bomb is built in tmp at test time (`tests.bombs`: a repeated deflate block, so a
128 MiB PDF stream is a 130 KB file made in milliseconds) in two sizes, one twice the
other, and read by `read_document_file` in a fresh process that reports how much its peak
memory (`ru_maxrss`) grew during the read. Every bomb is a `too-large` (or, for the member
whose size lies, `corrupt`) skip; the peak of the bigger one is not twice the smaller's, and
both stay far below what the bomb inflates to (before the budgets were checked while
reading, PDFium, python-docx and zipfile held it all: docs/reliability.md,
"Document bombs"). An ingest of a source holding a PDF bomb indexes the note beside it.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import docx
import pptx
import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.corpus.documents import read_document
from chromasync.corpus.pages import Limits
from chromasync.embed.hashing import HashEmbedder
from tests import bombs

from ..conftest import REPO

MEASURE = """
import json, resource, sys
from pathlib import Path
import pypdfium2, xml.etree.ElementTree  # warm: their import is no part of the read
from chromasync.corpus import docx, documents, markup, pdf, slides
path, max_chars = Path(sys.argv[1]), int(sys.argv[2])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = documents.read_document_file(path, documents.Limits(max_chars=max_chars))
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"grown_kib": grown, "reason": getattr(result, "reason", None),
                  "detail": getattr(result, "detail", "")}))
"""


def _base_docx() -> bytes:
    out = io.BytesIO()
    document = docx.Document()
    document.add_paragraph("A small note about calibrating the grinder.")
    document.save(out)
    return out.getvalue()


def _base_pptx() -> bytes:
    out = io.BytesIO()
    deck = pptx.Presentation()
    deck.slides.add_slide(deck.slide_layouts[5]).shapes.title.text = "Results"
    deck.save(out)
    return out.getvalue()


def _measure(path: Path, max_chars: int) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path), str(max_chars)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data: dict[str, object] = json.loads(done.stdout)
    return data


#: The character budget of the reads: 1 M characters keeps the paragraph bombs quick (a
#: paragraph takes the same time whatever the budget); the default is 5 M.
MAX_CHARS = 1_000_000
KINDS: dict[str, tuple[str, Callable[[int], bytes], int, str | None]] = {
    # name: (suffix, build(MiB), MiB of the smaller bomb, skip reason)
    "pdf-flate": (".pdf", lambda mib: bombs.pdf_bomb(mib), 64, "too-large"),
    "pdf-text": (".pdf", lambda mib: bombs.pdf_bomb(mib, text=True), 64, "too-large"),
    # encrypted: its stream is ciphertext to `pdfscan`; a child process under a memory
    # budget reads it (`pdfchild`), so this process does not grow with it
    "pdf-encrypted": (".pdf", lambda mib: bombs.pdf_bomb(mib, encrypted=True), 1024, "too-large"),
    "pdf-encrypted-text": (
        ".pdf",
        lambda mib: bombs.pdf_bomb(mib, text=True, encrypted=True),
        64,
        "too-large",
    ),
    "docx-lying-member": (
        ".docx",
        lambda mib: bombs.member_bomb(_base_docx(), "word/document.xml", mib, declared=1024),
        128,
        "corrupt",
    ),
    "docx-member": (
        ".docx",
        lambda mib: bombs.member_bomb(_base_docx(), "word/document.xml", mib),
        256,
        "too-large",
    ),
    "docx-paragraphs": (
        ".docx",
        lambda mib: bombs.docx_paragraphs(_base_docx(), mib),
        16,
        "too-large",
    ),
    "pptx-shape": (".pptx", lambda mib: bombs.pptx_shape(_base_pptx(), mib), 64, "too-large"),
    "pptx-shapes": (".pptx", lambda mib: bombs.pptx_shapes(_base_pptx(), mib), 32, "too-large"),
    "html": (".html", bombs.html_text, 8, "too-large"),
    # parts that were parsed whole (within a 16 MiB cap: 109 MB at 8 MiB), now streamed
    "docx-styles": (".docx", lambda mib: bombs.docx_styles(_base_docx(), mib), 6, None),
    "pptx-core": (".pptx", lambda mib: bombs.core_properties(_base_pptx(), mib), 6, None),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_bomb_twice_as_big_does_not_take_twice_the_memory(tmp_path: Path, kind: str) -> None:
    _doubling(tmp_path, kind, *KINDS[kind])


#: Within every budget, yet one object a paragraph (or text box) would grow with their
#: count: a DOCX of one-letter paragraphs took 37 MB at 20 MiB and 75 MB at 40 MiB (a
#: `Block` each); now their text is joined as it comes (`pages.Lines`). Python's own
#: allocations are what grew, so the peak is traced (`tracemalloc`), in this process.
LETTERS: dict[str, tuple[str, Callable[[int], bytes]]] = {
    "docx": ("docx", lambda mib: bombs.docx_paragraphs(_base_docx(), mib, b"a")),
    "pptx": ("pptx", lambda mib: bombs.pptx_shapes(_base_pptx(), mib, b"a")),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(LETTERS))
def test_many_one_letter_paragraphs_do_not_take_an_object_each(kind: str) -> None:
    fmt, build = LETTERS[kind]
    peaks = []
    for mib in (2, 4):
        data = build(mib)
        tracemalloc.start()
        try:
            found = read_document(data, fmt, Limits(max_chars=MAX_CHARS))
            peaks.append(tracemalloc.get_traced_memory()[1] / (1 << 20))
        finally:
            tracemalloc.stop()
        assert getattr(found, "chars", 0) > 25_000, found  # read whole, within budget
    small, big = peaks
    assert big < small * 1.3 + 1, peaks
    assert big < 3, peaks  # the text (1-byte letters) and a few pieces, not an object each


def _doubling(
    tmp_path: Path,
    kind: str,
    suffix: str,
    build: Callable[[int], bytes],
    mib: int,
    reason: str | None,
) -> None:
    extra = []
    for size in (mib, 2 * mib):
        path = tmp_path / f"bomb-{size}{suffix}"
        path.write_bytes(build(size))
        found = _measure(path, MAX_CHARS)
        assert found["reason"] == reason, found
        grown_mib = int(found["grown_kib"]) / 1024  # type: ignore[call-overload]
        extra.append(grown_mib - path.stat().st_size / (1 << 20))  # beyond the file itself
    small, big = extra
    assert big < small * 1.3 + 16, (kind, extra)
    assert big < mib / 2, (kind, extra)  # far below what it inflates to (2 * mib)


ENTITIES = {
    "docx-document": (".docx", _base_docx, "word/document.xml"),
    "docx-styles": (".docx", _base_docx, "word/styles.xml"),
    "docx-core": (".docx", _base_docx, "docProps/core.xml"),
    "pptx-presentation": (".pptx", _base_pptx, "ppt/presentation.xml"),
    "pptx-slide": (".pptx", _base_pptx, "ppt/slides/slide1.xml"),
}


@pytest.mark.parametrize("kind", sorted(ENTITIES))
def test_billion_laughs_is_refused_before_it_expands(tmp_path: Path, kind: str) -> None:
    """A part declaring ten entities of ten of the one before (3 GB of "lol" expanded) is
    `corrupt` at its `<!DOCTYPE`: in a fresh process, quickly, and memory stays flat."""
    suffix, base, part = ENTITIES[kind]
    path = tmp_path / f"laughs{suffix}"
    path.write_bytes(bombs.entity_bomb(base(), part))
    start = time.perf_counter()
    found = _measure(path, MAX_CHARS)
    assert time.perf_counter() - start < 30  # the process's start included
    assert (found["reason"], found["detail"]) == (
        "corrupt",
        "a DTD (<!DOCTYPE>): Office XML has none",
    )
    assert int(found["grown_kib"]) < 16 * 1024, found  # type: ignore[call-overload]


def test_a_lying_member_is_read_in_pieces() -> None:
    bomb = bombs.member_bomb(_base_docx(), "word/document.xml", 64, declared=1024)
    found = read_document(bomb, "docx")
    assert getattr(found, "reason", None) == "corrupt"  # the CRC of 1 KB fails


def test_a_pdf_bomb_beside_a_note_leaves_the_note_indexed(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """A 130 KB PDF inflating to 1 GiB is a counted `too-large` skip; the ingest goes on
    and indexes the note beside it (a bomb used to abort its source's ingest)."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "bomb.pdf").write_bytes(bombs.pdf_bomb(1024))
    (root / "note.md").write_text("# Note\n\nThe espresso grinder needs calibrating.\n")
    summary = api.ingest([api.source_for(root)], settings, embedder=embedder)[0]
    assert summary.files_skipped.get("too-large") == 1
    hits = api.search("espresso grinder", settings, embedder=embedder)
    assert [h.path for h in hits] == ["note.md"]


def test_an_encrypted_pdf_bomb_beside_readable_files_leaves_them_indexed(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """An encrypted 1 MB PDF inflating to 1 GiB (its stream cannot be measured before
    PDFium decrypts it) is a counted `too-large` skip of its child reader; an encrypted PDF
    that opens with an empty password and a note beside it are indexed."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "bomb.pdf").write_bytes(bombs.pdf_bomb(1024, encrypted=True))
    content = zlib.compress(b"BT /F1 12 Tf 72 720 Td (The descaling schedule is monthly) Tj ET")
    (root / "locked.pdf").write_bytes(bombs.one_page_pdf(content, encrypted=True))
    (root / "note.md").write_text("# Note\n\nThe espresso grinder needs calibrating.\n")
    summary = api.ingest([api.source_for(root)], settings, embedder=embedder)[0]
    assert summary.files_skipped == {"too-large": 1}
    hits = api.search("espresso grinder", settings, embedder=embedder)
    assert hits[0].path == "note.md"
    hits = api.search("descaling schedule monthly", settings, embedder=embedder)
    assert hits[0].path == "locked.pdf"
    assert {h.path for h in api.search("schedule grinder", settings, embedder=embedder)} <= {
        "note.md",
        "locked.pdf",
    }
