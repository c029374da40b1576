"""All 54 PDFs of ../shared/corpora/pdf-samples against its expected.json (made with PDFium).

Each folder names what a reader must do: `text/` is read (same page count, at least 90% of
PDFium's words over the first 50 pages, as SOURCE.md asks), `encrypted/` is an `encrypted`
skip, `broken/` a `corrupt` skip, `no-text/` a `no-text` skip. The corpus is read in place.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chromasync.corpus.documents import (
    DocumentSkip,
    PagedDocument,
    page_at_line,
    read_document_file,
    render_markdown,
)

from ..conftest import SHARED

PDFS = SHARED / "corpora" / "pdf-samples"
REASON = {"encrypted": "encrypted", "broken": "corrupt", "no-text": "no-text"}
#: Files whose PDFium text is mostly glyph codes, not text: a font without a ToUnicode map
#: gives control characters, which `clean_text` drops, so fewer "words" remain.
GLYPH_CODES = {"TAMReview.pdf"}

pytestmark = pytest.mark.slow


def _expected() -> dict[str, dict[str, dict[str, object]]]:
    if not (PDFS / "expected.json").is_file():
        pytest.skip("../shared/corpora/pdf-samples is not present")
    data: dict[str, dict[str, dict[str, object]]] = json.loads((PDFS / "expected.json").read_text())
    return data


def _cases() -> list[tuple[str, str]]:
    if not (PDFS / "expected.json").is_file():
        return []
    return [(folder, name) for folder, files in _expected().items() for name in sorted(files)]


def test_expected_json_covers_every_file() -> None:
    expected = _expected()
    on_disk = {(p.parent.name, p.name) for p in PDFS.glob("*/*.pdf")}
    assert on_disk == {(f, n) for f, files in expected.items() for n in files}
    assert len(on_disk) == 54


@pytest.mark.parametrize(("folder", "name"), _cases())
def test_sample(folder: str, name: str) -> None:
    want = _expected()[folder][name]
    result = read_document_file(PDFS / folder / name)
    if folder in REASON:
        assert isinstance(result, DocumentSkip), result
        assert result.reason == REASON[folder], result
        return
    assert isinstance(result, PagedDocument), result
    assert len(result.pages) == want["pages"]
    first = result.pages[:50]
    words = sum(len(p.body.split()) for p in first)
    assert isinstance(want["words"], int)
    assert words <= want["words"]  # cleaning only ever drops characters
    if name in GLYPH_CODES:
        assert words < 0.5 * want["words"]  # still garbage in expected.json: update the set
    else:
        assert words >= 0.9 * want["words"], (words, want["words"])
    assert all(ch in "\t\n" or ord(ch) >= 32 for p in result.pages for ch in p.body)
    rendered = render_markdown(result)
    lines = rendered.text.split("\n")
    for page in result.pages:  # the first non-blank line of each page maps back to it
        first_line = next((x for x in page.body.split("\n") if x.strip()), None)
        if first_line is None:
            continue
        start = rendered.page_starts[page.number - 1]
        n = next(i for i in range(start, len(lines) + 1) if lines[i - 1].endswith(first_line))
        assert page_at_line(rendered, n) == page.number


def test_corpus_words_match_pdfium() -> None:
    expected = _expected()["text"]
    ours = theirs = 0
    for name, want in expected.items():
        if name in GLYPH_CODES:
            continue
        doc = read_document_file(PDFS / "text" / name)
        assert isinstance(doc, PagedDocument)
        ours += sum(len(p.body.split()) for p in doc.pages[:50])
        assert isinstance(want["words"], int)
        theirs += want["words"]
    assert ours >= 0.99 * theirs, (ours, theirs)


def test_corpus_is_read_only_here() -> None:
    # The readers take bytes or a path to read; nothing is written next to the samples.
    before = sorted(p.name for p in Path(PDFS).rglob("*"))
    for path in sorted(PDFS.glob("*/*.pdf"))[:5]:
        read_document_file(path)
    assert sorted(p.name for p in Path(PDFS).rglob("*")) == before
