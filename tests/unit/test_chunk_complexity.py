"""Every chunker runs in linear (or n log n) time: doubling the input at most ~doubles the time.

A quadratic chunker takes ~4x as long on twice the input; the bound here is 3x, measured as
every doubling test is (`tests/doubling.py`). Each input is sized so that one run takes a
tenth of a second or more (the noise of a shared machine is smaller than that). The `Deadline` tests
use an injected clock, never the real one.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chromasync.chunk import Budget, Deadline, TooSlow, chunk_document, code
from chromasync.chunk.code import MAX_INDENT_DEPTH, indent_depth

from ..doubling import assert_linear
from .chunking import WordMeter, assert_chunks_valid, document, minilm


def _assert_linear(
    make: Callable[[int], str], n: int, name: str, budget: Budget, case: str
) -> None:
    docs = {size: document(make(size), name) for size in (n, 2 * n)}
    assert_linear(lambda size: chunk_document(docs[size], budget), n, what=f"{case}: 2x input")


# (input of size n, n, file name): n chosen so that one run takes ~0.1-0.5 s
CASES: dict[str, tuple[Callable[[int], str], int, str]] = {
    "md-headings": (lambda n: "".join(f"# h{i}\n" for i in range(n)), 4000, "a.md"),
    "md-heading-levels": (
        lambda n: "".join(f"{'#' * (1 + i % 6)} h{i}\n" for i in range(n)),
        4000,
        "a.md",
    ),
    "md-setext": (lambda n: "".join(f"h{i}\n===\n" for i in range(n)), 3000, "a.md"),
    "md-list": (lambda n: "".join(f"- item {i}\n" for i in range(n)), 6000, "a.md"),
    "md-nested-list": (
        lambda n: "".join(f"{'  ' * (i % 5)}- item {i}\n" for i in range(n)),
        6000,
        "a.md",
    ),
    "md-table": (
        lambda n: "| a | b |\n|---|---|\n" + "".join(f"| {i} | x |\n" for i in range(n)),
        3000,
        "a.md",
    ),
    "md-fence": (
        lambda n: "```\n" + "".join(f"# line {i}\n" for i in range(n)) + "```\n",
        5000,
        "a.md",
    ),
    "md-fences": (lambda n: "".join(f"```\nx{i}\n```\n" for i in range(n)), 2500, "a.md"),
    "md-long-line": (lambda n: " ".join(f"w{i}" for i in range(n)) + "\n", 12000, "a.md"),
    "md-long-word": (lambda n: "x" * (n * 8) + "\n", 20000, "a.md"),
    "md-sentences": (lambda n: "".join(f"Sentence {i}. " for i in range(n)), 6000, "a.md"),
    "py-functions": (
        lambda n: "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(n)),
        2000,
        "a.py",
    ),
    "py-class-methods": (
        lambda n: (
            "class C:\n" + "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(n))
        ),
        1000,
        "a.py",
    ),
    "py-statements": (lambda n: "".join(f"x{i} = {i}\n" for i in range(n)), 4000, "a.py"),
    "json-keys": (
        lambda n: "{\n" + ",\n".join(f'  "k{i}": {i}' for i in range(n)) + "\n}\n",
        3000,
        "a.json",
    ),
    "json-deep": (lambda n: '{"a": ' * n + "1" + "}" * n + "\n", 8000, "a.json"),
    "text-paragraphs": (
        lambda n: "".join(f"para {i} words here.\n\n" for i in range(n)),
        5000,
        "a.txt",
    ),
    "text-one-line": (lambda n: " ".join(f"w{i}" for i in range(n)) + "\n", 20000, "a.txt"),
}


@pytest.mark.timing
@pytest.mark.parametrize("case", sorted(CASES))
def test_doubling_the_input_at_most_doubles_the_time(case: str) -> None:
    make, n, name = CASES[case]
    _assert_linear(make, n, name, minilm(), case)


@pytest.mark.timing
@pytest.mark.parametrize("case", ["md-headings", "md-list", "text-paragraphs"])
def test_linear_with_a_meter_that_is_not_exact(case: str) -> None:
    make, n, name = CASES[case]
    _assert_linear(make, n, name, Budget(254, WordMeter()), case)


def test_a_run_of_headings_is_still_chunked_correctly() -> None:
    doc = document("".join(f"{'#' * (1 + i % 3)} h{i}\n" for i in range(3000)), "a.md")
    assert_chunks_valid(doc, chunk_document(doc, minilm()), minilm())


def test_code_nested_deeper_than_the_parser_can_take_is_split_by_lines() -> None:
    """The YAML grammar's scanner crashes the process past 255 indentation levels, and
    containers are opened recursively: a deep file falls back to lines, no crash."""
    deep_yaml = "".join("  " * i + f"k{i}:\n" for i in range(400)) + "  " * 400 + "v\n"
    assert indent_depth(deep_yaml.split("\n")) > MAX_INDENT_DEPTH
    doc = document(deep_yaml, "deep.yaml")
    chunks = chunk_document(doc, minilm())
    assert_chunks_valid(doc, chunks, minilm())
    deep_py = "".join("    " * i + f"class C{i}:\n" for i in range(120)) + "    " * 120 + "pass\n"
    doc = document(deep_py, "deep.py")
    assert_chunks_valid(doc, chunk_document(doc, minilm()), minilm())


def test_code_longer_than_the_parser_may_take_is_split_by_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """tree-sitter's tree takes about 55 bytes a byte of source (8 MiB of Python: 724 MB):
    past `MAX_PARSE_CHARS` a file is split by lines, without symbols."""
    doc = document("".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(300)), "a.py")
    assert {c.symbol for c in chunk_document(doc, minilm())} >= {"f0", "f299"}
    monkeypatch.setattr(code, "MAX_PARSE_CHARS", len(doc.text) - 1)
    chunks = chunk_document(doc, minilm())
    assert_chunks_valid(doc, chunks, minilm())
    assert {c.symbol for c in chunks} == {None}


class FakeClock:
    """Seconds that advance by `step` at every reading."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += self.step
        return self.now


def test_deadline_stops_chunking_past_its_budget() -> None:
    doc = document("".join(f"# h{i}\n\ntext {i}\n\n" for i in range(5000)), "a.md")
    clock = FakeClock(step=1.0)
    budget = Budget(254, minilm().meter, deadline=Deadline(50.0, clock))
    with pytest.raises(TooSlow, match="50 s"):
        chunk_document(doc, budget)
    assert clock.reads > 40  # checked again and again inside the chunker's loops


@pytest.mark.parametrize("name", ["a.md", "a.py", "a.txt"])
def test_deadline_not_reached_chunks_as_without_one(name: str) -> None:
    text = "".join(f"# h{i}\n\ndef f{i}():\n    return {i}\n\n" for i in range(300))
    doc = document(text, name)
    clock = FakeClock(step=0.0)
    timed = chunk_document(doc, Budget(254, minilm().meter, deadline=Deadline(1.0, clock)))
    assert timed == chunk_document(doc, minilm())
    assert clock.reads > 1
