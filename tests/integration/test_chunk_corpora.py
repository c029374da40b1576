"""Chunking real corpora: hugo-docs (front matter, fences, tables) and a real code base.

Every chunk keeps the invariants (within budget, exact excerpt, nothing lost, front matter
not in text), heading paths name real headings of the document, and Python chunks with a
symbol start on a declaration (or a comment or decorator above one).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chromasync.chunk import chunk_document
from chromasync.chunk.markdown import parse_blocks
from chromasync.corpus.read import read_file
from chromasync.corpus.walk import discover_source
from chromasync.records import Chunk, Document, SourceSpec

from ..conftest import HUGO
from ..unit.chunking import assert_chunks_valid, minilm

_DECLARATION = re.compile(r"^\s*(async\s+def |def |class |@|#)")


def _documents(root: Path, every: int = 1) -> list[Document]:
    files = discover_source(SourceSpec(label=root.name, root=root)).files[::every]
    return [d for f in files if (d := read_file(f).document) is not None]


def _check_headings(doc: Document, chunks: list[Chunk]) -> None:
    lines = doc.text.split("\n")
    titles = {b.title for b in parse_blocks(lines, doc.body_start_line, len(lines)) if b.title}
    title = doc.metadata.get("title")
    if isinstance(title, str):
        titles.add(" ".join(title.split()))
    for chunk in chunks:
        if chunk.heading and not chunk.heading.endswith("…"):
            for part in chunk.heading.split(" > "):
                assert part in titles, (doc.rel_path, chunk.heading)


def _check_markdown(docs: list[Document]) -> int:
    budget = minilm()
    total = 0
    for doc in docs:
        chunks = chunk_document(doc, budget)
        assert_chunks_valid(doc, chunks, budget)
        _check_headings(doc, chunks)
        if "\n".join(doc.text.split("\n")[doc.body_start_line - 1 :]).strip():
            assert all(c.start_line >= doc.body_start_line for c in chunks), doc.rel_path
        total += len(chunks)
    return total


def test_hugo_sample() -> None:
    if not HUGO.is_dir():
        pytest.skip("../shared/corpora/hugo-docs is not present")
    assert _check_markdown(_documents(HUGO, every=12)) > 100


@pytest.mark.slow
def test_hugo_whole_corpus() -> None:
    if not HUGO.is_dir():
        pytest.skip("../shared/corpora/hugo-docs is not present")
    docs = _documents(HUGO)
    assert len(docs) > 900
    assert _check_markdown(docs) > 2500


@pytest.mark.slow
def test_chromadb_package_source(tmp_path: Path) -> None:
    import shutil

    import chromadb

    root = tmp_path / "chromadb"
    shutil.copytree(Path(chromadb.__file__).parent, root)
    budget = minilm()
    declared = 0
    for doc in _documents(root):
        chunks = chunk_document(doc, budget)
        assert_chunks_valid(doc, chunks, budget)
        if doc.language != "python":
            continue
        lines = doc.text.split("\n")
        seen: set[str] = set()
        for chunk in chunks:
            if chunk.symbol and chunk.symbol not in seen:
                seen.add(chunk.symbol)
                first = lines[chunk.start_line - 1]
                assert _DECLARATION.match(first), (doc.rel_path, chunk.start_line, first)
                declared += 1
    assert declared > 1000
