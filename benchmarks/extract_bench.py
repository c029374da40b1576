"""Document extraction throughput, per format, over ../shared/corpora/pdf-samples.

    python benchmarks/extract_bench.py [--rounds 3]

PDF: every sample (54 files: text, encrypted, broken, no-text) read with `read_document`
from bytes already in memory, so disk time is left out. DOCX, PPTX, HTML: the text of the
37 text PDFs rebuilt in a temporary folder as one DOCX (a Heading 1 per PDF page, a
paragraph per line), one PPTX (a slide per PDF page, its first line as the title) and one
HTML file (an h2 per page, a <p> per line) each, so the formats carry the same text.
Each format's time is the best of `--rounds` passes. "pages" are the reader's pages (a DOCX
or an HTML file is one page), so compare formats by characters per second as well.
"""

from __future__ import annotations

import argparse
import html
import io
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "src"))

from chromasync.corpus.documents import (  # noqa: E402
    PagedDocument,
    read_document,
)

PDFS = SHARED / "corpora" / "pdf-samples"


def _as_docx(doc: PagedDocument) -> bytes:
    import docx

    d = docx.Document()
    for page in doc.pages:
        d.add_heading(f"Part {page.number}", level=1)
        for line in page.body.split("\n"):
            if line.strip():
                d.add_paragraph(line)
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def _as_pptx(doc: PagedDocument) -> bytes:
    import pptx

    deck = pptx.Presentation()
    for page in doc.pages:
        lines = [x for x in page.body.split("\n") if x.strip()] or [" "]
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = lines[0]
        slide.placeholders[1].text_frame.text = "\n".join(lines[1:])
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _as_html(doc: PagedDocument) -> bytes:
    parts = ["<!doctype html><html><head><title>sample</title></head><body>"]
    for page in doc.pages:
        parts.append(f"<h2>Part {page.number}</h2>")
        parts.extend(f"<p>{html.escape(x)}</p>" for x in page.body.split("\n") if x.strip())
    parts.append("</body></html>")
    return "".join(parts).encode()


def _measure(files: list[bytes], fmt: str, rounds: int) -> tuple[int, int, int, float]:
    best = float("inf")
    pages = chars = skips = 0
    for _ in range(rounds):
        pages = chars = skips = 0
        start = time.perf_counter()
        for data in files:
            result = read_document(data, fmt)
            if isinstance(result, PagedDocument):
                pages += len(result.pages)
                chars += result.chars
            else:
                skips += 1
        best = min(best, time.perf_counter() - start)
    return pages, chars, skips, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    pdfs = [p.read_bytes() for p in sorted(PDFS.glob("*/*.pdf"))]
    texts = [read_document(p.read_bytes(), "pdf") for p in sorted(PDFS.glob("text/*.pdf"))]
    docs = [d for d in texts if isinstance(d, PagedDocument)]
    corpora = {
        "pdf": pdfs,
        "docx": [_as_docx(d) for d in docs],
        "pptx": [_as_pptx(d) for d in docs],
        "html": [_as_html(d) for d in docs],
    }
    header = (
        f"{'format':<6} {'files':>5} {'skips':>5} {'pages':>6} {'chars':>9} "
        f"{'seconds':>8} {'pages/s':>8} {'Mchars/s':>8}"
    )
    print(header)
    print("-" * len(header))
    for fmt, files in corpora.items():
        pages, chars, skips, seconds = _measure(files, fmt, args.rounds)
        print(
            f"{fmt:<6} {len(files):>5} {skips:>5} {pages:>6} {chars:>9} "
            f"{seconds:>8.3f} {pages / seconds:>8.0f} {chars / seconds / 1e6:>8.2f}"
        )


if __name__ == "__main__":
    main()
