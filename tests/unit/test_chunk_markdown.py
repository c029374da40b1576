"""Markdown chunking: heading sections, merging, block-aware splitting, front matter."""

from __future__ import annotations

import pytest

from chromasync.chunk import chunk_document, markdown
from chromasync.chunk.markdown import _list_items, parse_blocks

from .chunking import assert_chunks_valid, document, minilm

WORDS = [
    "apple",
    "river",
    "stone",
    "cloud",
    "green",
    "paper",
    "music",
    "table",
    "water",
    "light",
    "glass",
    "house",
]


def words(n: int, offset: int = 0) -> str:
    return " ".join(WORDS[(offset + i) % len(WORDS)] for i in range(n))


def shape(text: str, max_tokens: int = 254) -> list[tuple[int, int, str]]:
    doc = document(text)
    budget = minilm(max_tokens)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    return [(c.start_line, c.end_line, c.heading) for c in chunks]


@pytest.mark.parametrize(
    ("text", "max_tokens", "expected"),
    [
        pytest.param(
            "# Guide\n\nIntro.\n\n## Install\n\nRun it.\n",
            254,
            [(1, 7, "Guide")],
            id="small-sections-merge-under-common-ancestor",
        ),
        pytest.param(
            f"# Guide\n\n## Install\n\n{words(30)}\n\n## Use\n\n{words(30, 3)}\n",
            40,
            [(1, 5, "Guide > Install"), (7, 9, "Guide > Use")],
            id="lone-title-glued-to-first-section",
        ),
        pytest.param(
            f"## A\n\n{words(40)}\n\n### A1\n\n{words(5)}\n\n### A2\n\n{words(5)}\n\n"
            f"## B\n\n{words(5)}\n",
            60,
            [(1, 3, "A"), (5, 11, "A"), (13, 15, "B")],
            id="no-merge-into-a-shallower-section",
        ),
        pytest.param(
            f"## A\n\n{words(5)}\n\n## B\n\n{words(5)}\n",
            254,
            [(1, 3, "A"), (5, 7, "B")],
            id="no-merge-without-common-ancestor",
        ),
        pytest.param(
            f"---\ntitle: Manual\ntags: [x]\n---\n\n{words(30)}\n\n## Setup\n\n{words(30)}\n",
            60,
            [(6, 6, "Manual"), (8, 10, "Manual > Setup")],
            id="front-matter-title-is-the-root",
        ),
        pytest.param(
            "---\ntitle: Setup\n---\n## Setup\n\nSteps.\n\n### Linux\n\nApt.\n",
            254,
            [(4, 10, "Setup")],
            id="title-equal-to-first-heading-not-repeated",
        ),
        pytest.param(
            "Title\n=====\n\nBody text.\n\nPart\n----\n\nMore text.\n",
            254,
            [(1, 9, "Title")],
            id="setext-headings",
        ),
        pytest.param(
            "## Options {#options}\n\nSome text.\n",
            254,
            [(1, 3, "Options")],
            id="heading-attributes-dropped",
        ),
    ],
)
def test_sections(text: str, max_tokens: int, expected: list[tuple[int, int, str]]) -> None:
    assert shape(text, max_tokens) == expected


def test_context_prefix_is_heading_path_and_counted() -> None:
    text = f"# Guide\n\n## Install\n\n{words(60)}\n\n## Use\n\n{words(60, 5)}\n"
    doc = document(text)
    budget = minilm(70)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert [c.heading for c in chunks] == ["Guide > Install", "Guide > Use"]
    # A chunk that starts with its headings does not embed them twice: the prefix keeps
    # only the part of the path the text lacks.
    assert [c.context for c in chunks] == ["", "Guide\n\n"]
    assert chunks[0].embed_text.startswith("# Guide\n\n## Install")
    assert chunks[1].embed_text.startswith("Guide\n\n## Use")
    assert all(budget.meter.count(c.embed_text) <= 70 for c in chunks)


def test_context_prefix_kept_for_a_continuation_and_a_different_first_line() -> None:
    body = " ".join(f"Sentence {i} says {words(8, i)}." for i in range(30))
    doc = document(f"# Guide\n\n## Install\n\n{body}\n\n## Use\n\n{words(20, 5)}\n")
    budget = minilm(64)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    later = [c for c in chunks if c.heading == "Guide > Install" and not c.text.startswith("#")]
    assert later and all(c.context == "Guide > Install\n\n" for c in later)
    # a heading that is not the last of the path is not dropped from the middle
    assert chunks[0].context == ""
    assert chunks[-1].context == "Guide\n\n"


def test_hash_lines_inside_fences_are_not_headings() -> None:
    text = "## Run\n\n```sh\n# install\npip install x\n## not a heading\n```\n\nDone.\n"
    blocks = list(parse_blocks(text.split("\n"), 1, 10))
    assert [(b.kind, b.first, b.last) for b in blocks] == [
        ("heading", 1, 1),
        ("fence", 3, 7),
        ("paragraph", 9, 9),
    ]
    assert shape(text) == [(1, 9, "Run")]


def test_list_items_and_continuations_are_one_block() -> None:
    text = "- one\n  more of one\n\n- two\n   ```\n   # code\n   ```\n- three\n\nAfter.\n"
    blocks = list(parse_blocks(text.split("\n"), 1, 11))
    assert [(b.kind, b.first, b.last) for b in blocks] == [("list", 1, 8), ("paragraph", 10, 10)]
    lines = text.split("\n")
    assert list(_list_items(lines, 1, 8, blocks[0].level, lambda: None)) == [(1, 2), (4, 7), (8, 8)]


def test_fence_kept_whole_when_it_fits() -> None:
    fence = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(12)) + "\n```"
    text = f"## Code\n\n{words(25)}\n\n{fence}\n\n{words(25, 2)}\n"
    doc = document(text)
    budget = minilm(80)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    holding = [c for c in chunks if "```python" in c.text]
    assert len(holding) == 1 and holding[0].text.rstrip().endswith("```")


def test_oversized_fence_is_split_by_lines_with_overlap() -> None:
    fence = "```\n" + "\n".join(f"line {i} " + words(6, i) for i in range(60)) + "\n```"
    text = f"## Big\n\n{fence}\n"
    doc = document(text)
    budget = minilm(100)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert len(chunks) > 3
    assert all(c.heading == "Big" for c in chunks)
    assert chunks[0].overlap == 0 and all(c.overlap > 0 for c in chunks[1:])
    assert chunks[0].text.startswith("## Big\n\n```")


def test_list_split_at_items_not_inside_them() -> None:
    items = "\n".join(f"- item {i}: {words(10, i)}\n  continued {i}" for i in range(12))
    text = f"## List\n\n{items}\n"
    doc = document(text)
    budget = minilm(90)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert len(chunks) > 1
    for chunk in chunks[1:]:
        assert chunk.text.startswith("- item"), chunk.text


def test_flat_text_falls_back_to_paragraphs() -> None:
    text = "\n\n".join(words(40, i) for i in range(6)) + "\n"
    doc = document(text)
    budget = minilm(100)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert len(chunks) == 3
    assert all(c.heading == "" and c.context == "" for c in chunks)
    assert [c.start_line for c in chunks] == [1, 5, 9]


def test_long_line_split_into_sentences_with_heading_context() -> None:
    line = " ".join(f"Sentence {i} says {words(8, i)}." for i in range(40))
    text = f"## Essay\n\n{line}\n"
    doc = document(text)
    budget = minilm(64)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    pieces = [c for c in chunks if c.start_line == 3]
    assert len(pieces) > 3
    assert all(c.text.startswith("Sentence") and c.text.endswith(".") for c in pieces)
    assert chunks[0].text.startswith("## Essay\n") and chunks[0].context == ""
    assert all(c.context == "Essay\n\n" for c in chunks[1:])


def test_front_matter_never_in_text() -> None:
    text = "---\ntitle: Secret title\nparams:\n  nested: value\n---\n\n# Body\n\nHello.\n"
    doc = document(text)
    chunks = chunk_document(doc, minilm())
    assert doc.body_start_line == 6
    assert chunks and all("nested" not in c.text and "params" not in c.text for c in chunks)
    assert chunks[0].start_line == 7


def test_deterministic() -> None:
    text = "\n\n".join(f"## S{i}\n\n{words(30 + i, i)}" for i in range(20))
    doc = document(text)
    assert chunk_document(doc, minilm(60)) == chunk_document(doc, minilm(60))


def test_heading_path_cut_when_too_long() -> None:
    title = " ".join(f"word{i}" for i in range(200))
    text = f"# {title}\n\n{words(20)}\n"
    doc = document(text)
    budget = minilm(64)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert chunks[0].heading.endswith("…")
    assert budget.meter.count(chunks[0].context) <= 64 // 4 + 1


def test_body_less_page_is_indexed_by_title_and_description() -> None:
    text = (
        "---\ntitle: Functions\nweight: 3\ndescription: >\n  All the functions.\n"
        "cascade:\n  x: 1\n---\n"
    )
    doc = document(text, "_index.md")
    chunks = chunk_document(doc, minilm())
    assert [(c.start_line, c.end_line, c.heading) for c in chunks] == [(2, 5, "Functions")]
    assert chunks[0].text == "title: Functions\nweight: 3\ndescription: >\n  All the functions."


def test_first_chunk_embeds_the_page_description() -> None:
    text = (
        "---\ntitle: math.Sqrt\ndescription: Returns the square root of the given number.\n"
        f"---\n\n```go-html-template\n{{{{ math.Sqrt 81 }}}} → 9\n```\n\n## More\n\n{words(150)}\n"
    )
    doc = document(text, "Sqrt.md")
    budget = minilm(128)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert len(chunks) >= 2
    assert chunks[0].context == "math.Sqrt\nReturns the square root of the given number.\n\n"
    assert chunks[0].heading == "math.Sqrt"  # the heading stays the path
    assert all("square root" not in c.context for c in chunks[1:])
    assert "Returns" not in chunks[0].text  # front matter is never chunk text


def test_description_without_title_and_a_page_starting_with_its_heading() -> None:
    untitled = document("---\ndescription: About the river.\n---\n\nA paragraph.\n")
    assert [c.context for c in chunk_document(untitled, minilm())] == ["About the river.\n\n"]
    # the heading the text starts with is not embedded twice; the description stays
    headed = document("---\ndescription: About the river.\n---\n\n# Guide\n\nA paragraph.\n")
    [chunk] = chunk_document(headed, minilm())
    assert chunk.heading == "Guide" and chunk.context == "About the river.\n\n"


def test_a_long_description_is_cut_to_its_share_of_the_budget() -> None:
    long = " ".join(f"word{i}" for i in range(300))
    doc = document(f"---\ntitle: Guide\ndescription: {long}\n---\n\n{words(20)}\n")
    budget = minilm(64)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert chunks[0].context.startswith("Guide\nword0 word1")
    assert chunks[0].context.endswith(" …\n\n")
    assert budget.meter.count(chunks[0].context) <= 64 // 4 + 1


def test_a_page_without_description_is_chunked_as_before() -> None:
    doc = document("---\ntitle: Guide\nsummary: not a description\n---\n\nA paragraph.\n")
    [chunk] = chunk_document(doc, minilm())
    assert chunk.context == "Guide\n\n"


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        (
            {"heading": "Sqrt", "chromasync_context": "Sqrt\nRoots.\n\n", "description": "Roots."},
            "Sqrt\nRoots.",
        ),
        ({"heading": "Sqrt", "chromasync_context": "Sqrt\n\n", "description": "Roots."}, "Sqrt"),
        ({"heading": "Sqrt", "description": "Roots."}, "Sqrt"),  # a later chunk: no context
        ({"heading": "", "chromasync_context": "Roots.\n\n", "description": "Roots."}, "Roots."),
        (
            {"heading": "G", "chromasync_context": "G\nA long …\n\n", "description": "A long one"},
            "G\nA long …",
        ),
        ({"heading": "", "chromasync_context": "Greeter\n\n", "symbol": "hello"}, ""),  # code
        ({"heading": "G > I", "chromasync_context": "G\n\n", "description": "x"}, "G > I"),
    ],
)
def test_keyword_heading_holds_the_description_the_context_embeds(
    meta: dict[str, str], expected: str
) -> None:
    from chromasync.metakeys import keyword_heading

    assert keyword_heading(meta) == expected


def test_past_max_sections_a_heading_stays_in_its_section(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sibling sections without a common ancestor are a chunk each: a file of a million
    `# N` / text pairs made a million chunks (and records). Past `MAX_SECTIONS` headings
    that open a section, a heading is a block of the section it is in."""
    text = "".join(f"# h{i}\n\ntext {i}\n\n" for i in range(6))
    assert shape(text) == [(1 + 4 * i, 3 + 4 * i, f"h{i}") for i in range(6)]
    monkeypatch.setattr(markdown, "MAX_SECTIONS", 2)
    assert shape(text) == [(1, 3, "h0"), (5, 23, "h1")]
