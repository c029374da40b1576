"""A page found by its description, and its code example in the answer: real Chroma, the
real keyword index, the hash embedder (hugo-docs' reference pages are the model)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.metakeys import CONTEXT_KEY
from chromasync.state.manifest import STATE_FILE

from ..conftest import age_tree

PAGES = {
    # a reference page: front matter says what it does, the body is only its example
    "math/Sqrt.md": (
        "---\ntitle: math.Sqrt\ndescription: Returns the square root of the given number.\n"
        "---\n\n```go-html-template\n{{ math.Sqrt 81 }} → 9\n```\n"
    ),
    # prose first; the example lives in a later section, another chunk
    "urls/AbsURL.md": (
        "---\ntitle: urls.AbsURL\ndescription: Returns an absolute URL.\n---\n\n"
        + " ".join(
            f"Sentence {i} says the address returned by this function depends on the base."
            for i in range(40)
        )
        + "\n\n## Input without a slash\n\nWith a base of example.org:\n\n"
        '```go-html-template\n{{ absURL "articles" }} → https://example.org/articles\n```\n'
    ),
    "math/Pow.md": (
        "---\ntitle: math.Pow\ndescription: Returns the first number raised to the power of "
        "the second number.\n---\n\n```go-html-template\n{{ math.Pow 2 3 }} → 8\n```\n"
    ),
}


@pytest.fixture
def docs(tmp_path: Path, settings: Settings, embedder: HashEmbedder) -> Path:
    root = tmp_path / "docs"
    for rel, text in PAGES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    age_tree(root)
    api.ingest([api.source_for(root, "docs")], settings, embedder=embedder)
    return root


def _ask(settings: Settings, embedder: HashEmbedder, question: str, k: int) -> api.Answer:
    request = api.SearchRequest(question, mode="keyword", k=k)
    result = api.retrieve(request, settings, embedder=embedder)
    return api.answer(question, result, settings)


def test_keyword_search_finds_a_page_by_its_description(
    docs: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    hits = api.search("square root", settings, k=3, mode="keyword", embedder=embedder)
    assert [h.path for h in hits] == ["math/Sqrt.md"]
    assert hits[0].heading == "math.Sqrt"  # the hit's heading is still its heading path
    assert hits[0].metadata[CONTEXT_KEY] == (
        "math.Sqrt\nReturns the square root of the given number.\n\n"
    )
    # the keyword index holds the description in its heading column, the document as is
    with sqlite3.connect(settings.data_dir / STATE_FILE) as db:
        heading, text = db.execute(
            "SELECT heading, text FROM chunks WHERE path = 'math/Sqrt.md'"
        ).fetchone()
    assert heading == "math.Sqrt\nReturns the square root of the given number."
    assert "square" not in text
    # reading the document gives the heading path, not the keyword column
    [chunk] = api.get_document(settings, "math/Sqrt.md", "docs")
    assert chunk.heading == "math.Sqrt"


def test_the_answer_shows_the_example_of_a_code_only_page(
    docs: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    answer = _ask(settings, embedder, "How do I get the square root of a number?", 3)
    code = [p for p in answer.parts if p.kind == "code"]
    assert code and code[0].text == "{{ math.Sqrt 81 }} → 9"
    assert answer.parts[0] == code[0]  # the page has no sentence: its example leads
    [cited] = [c for c in answer.citations if c.n == code[0].n]
    assert (cited.path, cited.start_line, cited.end_line) == ("math/Sqrt.md", 6, 8)


def test_the_example_is_read_from_the_pages_other_chunks(
    docs: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    question = "How does the address returned depend on the base?"
    result = api.retrieve(
        api.SearchRequest(question, mode="keyword", k=1), settings, embedder=embedder
    )
    [hit] = result.hits
    assert hit.path == "urls/AbsURL.md" and "absURL" not in hit.text  # the prose chunk only
    answer = api.answer(question, result, settings)
    code = [p for p in answer.parts if p.kind == "code"]
    assert [p.text for p in code] == ['{{ absURL "articles" }} → https://example.org/articles']
    # cited as the chunk it was read from: the example's own lines
    cited = {c.n: c for c in answer.citations}[code[0].n]
    assert cited.path == "urls/AbsURL.md" and cited.id != hit.id
    lines = PAGES["urls/AbsURL.md"].split("\n")
    assert lines[cited.start_line - 1].startswith("```go-html-template")
    assert lines[cited.end_line - 1] == "```"
    # without the page (as `answer_question` is called with hits only) nothing is read
    from chromasync.answer.ask import answer_question

    bare = answer_question(question, result.hits)
    assert not [p for p in bare.parts if p.kind == "code"]
    assert json.dumps(answer.as_json())  # the read chunk's citation serialises
