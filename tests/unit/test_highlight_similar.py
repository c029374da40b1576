"""Matched-word spans, snippets, and the aggregation of similar documents."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import chromasync
from chromasync.records import Hit
from chromasync.retrieve.highlight import STOP_WORDS, match_spans, snippet, stem
from chromasync.retrieve.similar import aggregate, nearest_sources


@pytest.mark.parametrize(
    ("text", "query", "phrases", "marked"),
    [
        ("Calibrate the grinder", "grinder", (), ["grinder"]),
        ("Grinders and GRINDER", "grinder", (), ["Grinders", "GRINDER"]),
        ("the burrs touched", "touch burr", (), ["burrs", "touched"]),
        ("the zero point is set", "the", (), ["the"]),
        (
            "a pay-for-performance plan",
            "plan",
            ("pay for performance",),
            ["pay-for-performance", "plan"],
        ),
        ("nothing here", "grinder", (), []),
        # whole words only, never stop words (issue 17's query)
        (
            "How do I calibrate the grinder? Sourdough: do the dough first.",
            "how do I calibrate the grinder",
            (),
            ["calibrate", "grinder"],
        ),
        ("Sourdough and dough", "do", (), []),
        ("I do it", "how do I", (), ["I", "do"]),
        ("grinderish grinder", "grinder", (), ["grinder"]),
    ],
)
def test_match_spans(text: str, query: str, phrases: tuple[str, ...], marked: list[str]) -> None:
    assert [text[a:b] for a, b in match_spans(text, query, phrases)] == marked


_PAGE_CASES = [
    (
        "How do I calibrate the grinder? Sourdough: do the dough.",
        "how do I calibrate the grinder",
        ["calibrate", "grinder"],
    ),
    ("Sourdough and dough", "do", []),
    ("Grinders and GRINDER, grinderish", "grinder", ["Grinders", "GRINDER"]),
    ("the zero point", "the", ["the"]),
    ("a+b (x) c", "a+b (x)", ["b", "x"]),
]


def _app_js() -> str:
    return (Path(chromasync.__file__).parent / "static" / "app.js").read_text(encoding="utf-8")


def test_page_stop_words_are_the_service_list() -> None:
    block = re.search(r"const STOP_WORDS = new Set\(\[(.*?)\]\);", _app_js(), re.DOTALL)
    assert block is not None
    assert set(re.findall(r'"([^"]+)"', block.group(1))) == set(STOP_WORDS)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_page_marks_whole_words_and_no_stop_words() -> None:
    source = _app_js()
    start = source.index("const STOP_WORDS")
    end = source.index("function highlighted")
    script = source[start:end] + (
        "const cases = JSON.parse(process.argv[1]);\n"
        "console.log(JSON.stringify(cases.map(([text, query]) => {\n"
        "  const words = terms(query);\n"
        "  return words.length ? [...text.matchAll(wordPattern(words))].map((m) => m[0]) : [];\n"
        "})));\n"
    )
    cases = [[text, query] for text, query, _ in _PAGE_CASES]
    out = subprocess.run(
        ["node", "-e", script, json.dumps(cases)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(out.stdout) == [marked for _, _, marked in _PAGE_CASES]


def test_stem_is_conservative_on_short_words() -> None:
    assert stem("Running") == "runn" and stem("is") == "is" and stem("bus") == "bus"


def test_snippet_windows_around_the_first_match() -> None:
    text = "x " * 200 + "target word" + " y" * 200
    spans = match_spans(text, "target", ())
    window, shifted = snippet(text, spans, width=80)
    assert window.startswith("…") and window.endswith("…")
    assert [window[a:b] for a, b in shifted] == ["target"]
    short, spans_short = snippet("target", [(0, 6)])
    assert short == "target" and spans_short == [(0, 6)]


def _hit(path: str, score: float, source: str = "notes", chunk: str = "0") -> Hit:
    return Hit(f"{path}-{chunk}", path, source, "", 1, 2, score, "", "c")


def test_aggregate_weights_chunks_and_flags_duplicates() -> None:
    neighbours = [
        [_hit("a.md", 0.99), _hit("b.md", 0.80)],
        [_hit("a.md", 0.97, chunk="1"), _hit("c.md", 0.90)],
    ]
    docs = aggregate([3.0, 1.0], neighbours, threshold=0.95, k=5)
    assert [(d.path, d.duplicate, d.matched_chunks) for d in docs] == [
        ("a.md", True, 2),
        ("b.md", False, 1),
        ("c.md", False, 1),
    ]
    assert docs[0].score == pytest.approx((3 * 0.99 + 0.97) / 4)
    assert docs[1].score == pytest.approx(3 * 0.80 / 4)
    assert docs[0].best.id == "a.md-0"


def test_aggregate_excludes_the_file_itself_and_marks_exact_copies() -> None:
    neighbours = [[_hit("self.md", 1.0), _hit("copy.md", 1.0), _hit("near.md", 0.5)]]
    docs = aggregate(
        [1.0],
        neighbours,
        exclude=lambda h: h.path == "self.md",
        exact=[_hit("copy.md", 1.0), _hit("self.md", 1.0), _hit("far.md", 1.0, source="x")],
        threshold=0.9,
    )
    assert [(d.path, d.exact, d.duplicate) for d in docs] == [
        ("copy.md", True, True),
        ("far.md", True, True),
        ("near.md", False, False),
    ]
    assert nearest_sources(docs)[0] == ("notes", 1.0, 2)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_page_script_parses() -> None:
    path = Path(chromasync.__file__).parent / "static" / "app.js"
    checked = subprocess.run(
        ["node", "--check", str(path)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stderr
