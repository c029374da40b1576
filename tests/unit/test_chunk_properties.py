"""Property tests: every chunker keeps the invariants of `chromasync.chunk` on any input.

Chunks cover the body in order with nothing lost outside declared overlap, each is within
budget (measured with the meter itself, context included) and character limit, their line
ranges match their text, and chunking is deterministic. Checked with the real MiniLM meter
(additive: measured once per document) and with toy meters that take the other code path.
"""

from __future__ import annotations

import bisect
import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from chromasync.chunk import Budget, chunk_document
from chromasync.embed.tokens import default_token_meter

from .chunking import CharMeter, WordMeter, assert_chunks_valid, document, minilm
from .test_chunk_code import SAMPLES

WORDS = [
    "the",
    "index",
    "chroma",
    "sync",
    "naïve",
    "日本語",
    "emoji🙂",
    "x" * 120,  # longer than a word piece may be: one [UNK]
    "a.",
    "end!",
    "--",
    "|",
    "**bold**",
    "`code`",
    "\t",
]

word = st.sampled_from(WORDS)
short_line = st.lists(word, min_size=1, max_size=8).map(" ".join)
line = st.one_of(
    short_line,
    st.lists(word, min_size=1, max_size=40).map(" ".join),
    st.lists(word, min_size=100, max_size=400).map(" ".join),  # one long line
)
paragraph = st.lists(line, min_size=1, max_size=6).map("\n".join)
heading = st.tuples(st.integers(1, 6), short_line).map(lambda t: "#" * t[0] + " " + t[1])
setext = st.tuples(short_line, st.sampled_from(["===", "---"])).map("\n".join)
fence = st.lists(st.one_of(line, st.just("# not a heading")), max_size=12).map(
    lambda lines: "```sh\n" + "\n".join(lines) + "\n```"
)
listing = st.lists(st.tuples(line, st.booleans()), min_size=1, max_size=8).map(
    lambda items: "\n".join(f"- {t}" + ("\n  more" if more else "") for t, more in items)
)
table = st.lists(short_line, min_size=1, max_size=8).map(
    lambda rows: "| a | b |\n|---|---|\n" + "\n".join(f"| {r} | x |" for r in rows)
)
block = st.one_of(heading, setext, paragraph, fence, listing, table)
separator = st.sampled_from(["\n\n", "\n", "\n\n\n", "\n   \n"])
front_matter = st.one_of(
    st.just(""),
    short_line.map(lambda t: f"---\ntitle: {json.dumps(t)}\ntags: [a, b]\n---\n"),
    # a description (short, or longer than its share of the context) on the first chunk
    st.tuples(st.one_of(short_line, st.just("")), line).map(
        lambda t: f"---\ntitle: {json.dumps(t[0])}\ndescription: {json.dumps(t[1])}\n---\n"
    ),
)


@st.composite
def markdown(draw: st.DrawFn) -> str:
    blocks = draw(st.lists(block, min_size=1, max_size=14))
    text = blocks[0]
    for b in blocks[1:]:
        text += draw(separator) + b
    return draw(front_matter) + text + draw(st.sampled_from(["", "\n", "\n\n"]))


@st.composite
def python_source(draw: st.DrawFn) -> str:
    parts = ["import os", "from x import y"]
    for index in range(draw(st.integers(0, 6))):
        body = draw(st.lists(short_line, min_size=1, max_size=30))
        statements = "\n".join(f"    v{i} = {json.dumps(t)}" for i, t in enumerate(body))
        if draw(st.booleans()):
            parts.append(f"def f{index}(a):\n    # {draw(short_line)}\n{statements}\n    return a")
        else:
            methods = "\n\n".join(
                f"    def m{m}(self):\n    {statements.replace(chr(10), chr(10) + '    ')}"
                for m in range(draw(st.integers(1, 5)))
            )
            parts.append(f"class C{index}:\n    '''doc'''\n\n{methods}")
        if draw(st.booleans()):
            parts.append(f"X{index} = {json.dumps(draw(line))}")
    return "\n\n\n".join(parts) + "\n"


METERS = {"minilm": default_token_meter, "chars": CharMeter, "words": WordMeter}


@st.composite
def budgets(draw: st.DrawFn) -> Budget:
    meter = METERS[draw(st.sampled_from(sorted(METERS)))]()
    max_tokens = draw(st.sampled_from([8, 16, 40, 100, 254]))
    max_chars = draw(st.sampled_from([0, 0, 120, 600]))
    return Budget(max_tokens, meter, max_chars)


def check(text: str, name: str, budget: Budget) -> None:
    doc = document(text, name)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert chunk_document(doc, budget) == chunks


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(markdown(), budgets())
def test_markdown_invariants(text: str, budget: Budget) -> None:
    check(text, "doc.md", budget)


def test_a_long_line_under_a_setext_heading_of_two_lines() -> None:
    """Found by the property above: the heading's text spans two lines, and the long line
    after it is cut; its first piece keeps the whole heading in front of it."""
    text = "# the\n\nthe\n\nthe\nthe the index\n--\n" + "the " * 7 + "the"
    budget = Budget(16, CharMeter(), 0)
    chunks = chunk_document(document(text), budget)
    assert chunks[1].text.startswith("the\nthe the index\n--\nthe the")
    check(text, "doc.md", budget)


@PROPERTY
@given(markdown(), budgets(), st.sampled_from(["doc.txt", "doc.py", "doc.json", "doc.yaml"]))
def test_text_and_unparsable_code_invariants(text: str, budget: Budget, name: str) -> None:
    text = text.replace("---\n", "", 1) if text.startswith("---") else text
    assume(text.strip())
    check(text, name, budget)


@PROPERTY
@given(python_source(), budgets())
def test_code_invariants(text: str, budget: Budget) -> None:
    check(text, "mod.py", budget)


@PROPERTY
@given(st.sampled_from(sorted(SAMPLES)), budgets())
def test_every_grammar_invariants(name: str, budget: Budget) -> None:
    """Each language's sample file, cut at budgets small enough to open its declarations."""
    check(SAMPLES[name][0], name, budget)


@PROPERTY
@given(
    st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        min_size=1,
        max_size=600,
    ).filter(lambda t: t.strip()),
    budgets(),
    st.sampled_from(["doc.md", "doc.txt", "doc.js", "doc.toml", "doc.css", "doc.sql", "doc.xml"]),
)
def test_arbitrary_text_invariants(text: str, budget: Budget, name: str) -> None:
    if name.endswith(".md") and text.startswith("---"):
        text = " " + text
    check(text, name, budget)


def test_one_mebibyte_single_line() -> None:
    """The nasty corpus's `large/one-long-line.md`: one word of 1 MiB after a marker."""
    text = "NASTY-INDEX-long-line " + "w" * (1 << 20) + "\n"
    doc = document(text, "one-long-line.md")
    budget = minilm()
    chunks = chunk_document(doc, budget)  # its time: test_chunk_complexity (md-long-word)
    assert_chunks_valid(doc, chunks, budget)
    assert chunks[0].text.startswith("NASTY-INDEX-long-line ")
    assert all(len(c.text) <= budget.char_limit for c in chunks)


@pytest.mark.parametrize("max_tokens", [16, 254])
def test_one_long_prose_line(max_tokens: int) -> None:
    text = " ".join(f"Point {i} is {'long ' * (i % 7)}and clear." for i in range(3000)) + "\n"
    doc = document(text, "essay.txt")
    budget = minilm(max_tokens)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert all(c.start_line == c.end_line == 1 for c in chunks)


def test_segmented_starts_equal_one_call() -> None:
    meter = default_token_meter()

    def whole(text: str, begin: int = 0) -> list[int]:
        encoded = meter._tokenizer.encode(text[begin:], add_special_tokens=False)
        return [begin + start for start, _ in encoded.offsets]

    def found(text: str, begin: int = 0) -> list[int]:
        pieces = meter.starts(text, begin)
        listed = [pieces.select(k) for k in range(len(pieces))]
        for offset in range(0, len(text) + 2, 97):  # rank: the pieces before an offset
            assert pieces.rank(offset) == bisect.bisect_left(listed, offset)
        return listed

    # Hangul: a syllable is several jamo pieces that start where it does
    text = "\n".join(f"Line {i}: naïve 日本語 한국어 {'x' * (i % 150)} end." for i in range(6000))
    assert len(text) > 200_000
    assert found(text) == whole(text)
    assert found(text, 1000) == whole(text, 1000)
    prose = " ".join(f"Point {i}: naïve, 日本語 {'x' * (i % 150)}." for i in range(6000))
    assert len(prose) > 200_000 and "\n" not in prose  # one long line: cut at spaces
    assert found(prose) == whole(prose)
    one_line = '{"a":' * 20_000 + "1" + "}" * 20_000 + "\n"  # no space: cut at punctuation
    assert len(one_line) > 100_000
    assert found(one_line) == whole(one_line)
    # no space nor punctuation: CJK ideographs are words; one ASCII word is one unknown piece
    for spaceless in (
        "日本語" * 20_000,
        "w" * 100_000,
        "x,y" + "Zq9" * 40_000 + ".",
        "1,2" * 30_000,
    ):
        assert found(spaceless) == whole(spaceless), spaceless[:20]
