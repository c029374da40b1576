"""Extractive answers keep the block a sentence leads into, and never quote non-prose."""

from __future__ import annotations

import pytest

from chromasync.answer.extractive import answer_extractive, split_sentences
from chromasync.chunk.blocks import Block, Prose, inline_text, segment
from chromasync.records import Hit

from ..doubling import assert_linear

FORMAT_PAGE = """---
title: Format
description: Returns a textual representation of the time.Time value.
---

Use the `time.Format` function with `time.Time` values:

```go-html-template
{{ $t := time.AsTime "2023-01-27" }}
{{ $t.Format "2 Jan 2006" }} → 27 Jan 2023
```

> [!NOTE]
> To [localize](g) the return value, use the [`time.Format`][] function instead.

{{% include "/_common/time-layout-string.md" %}}

https://pkg.go.dev/time#pkg-constants

Format string|Result
:--|:--
`Monday, January 2, 2006`|`Friday, January 27, 2023`

Read the [Go documentation][] for the layout string of a date.

[Go documentation]: https://pkg.go.dev/time#pkg-constants
[`time.Format`]: /functions/time/format/
"""


def hit(text: str, rid: str = "format", start: int = 1, path: str = "time/Format.md") -> Hit:
    end = start + text.count("\n")
    return Hit(rid, path, "docs", "Format", start, end, 0.9, text, "c", {})


def test_segment_kinds_and_what_is_never_prose() -> None:
    parts = segment(FORMAT_PAGE)
    kinds = [p.kind if isinstance(p, Block) else "prose" for p in parts]
    assert kinds == ["prose", "code", "prose", "table", "prose"]
    code = parts[1]
    assert isinstance(code, Block) and code.lang == "go-html-template"
    assert code.text.startswith("{{ $t := time.AsTime")
    prose = " ".join(p.text for p in parts if isinstance(p, Prose))
    for never in ("title:", "[!NOTE]", "{{%", "https://", "[Go documentation]:", "/functions/"):
        assert never not in prose


def test_code_shortcode_is_code_and_hugo_tables_are_tables() -> None:
    text = (
        "Given this front matter:\n\n{{< code-toggle fm=true >}}\ntitle = 'About'\n"
        '{{< /code-toggle >}}\n\nOr in Go:\n\n{{< code lang="go" >}}\nx := 1\n{{< /code >}}\n'
    )
    blocks = [p for p in segment(text) if isinstance(p, Block)]
    assert [(b.kind, b.lang, b.text) for b in blocks] == [
        ("code", "toml", "title = 'About'"),
        ("code", "go", "x := 1"),
    ]


def test_inline_links_become_their_words() -> None:
    assert inline_text("Use [`humanize`][] or [the docs](https://x.org/a) and [term](g).") == (
        "Use `humanize` or the docs and term."
    )


def test_the_answer_keeps_the_code_a_sentence_leads_into() -> None:
    answer = answer_extractive("how do I format a date in a template?", [hit(FORMAT_PAGE)])
    kinds = [p.kind for p in answer.parts]
    assert "code" in kinds
    [code] = [p for p in answer.parts if p.kind == "code"]
    assert code.lang == "go-html-template" and code.n == 1
    assert "```go-html-template\n{{ $t := time.AsTime" in answer.text
    lead = answer.text.split("```")[0]
    assert lead.rstrip().endswith("values: [1]")
    # the citation covers the sentence and its code (lines 6 to 11 of the file)
    [citation] = answer.citations
    assert (citation.start_line, citation.end_line)[0] <= 6 and citation.end_line >= 11
    for never in ("[Go documentation]:", "https://", "{{%", "[!NOTE]", "title:"):
        assert never not in answer.text
    assert answer.as_json()["parts"][1]["kind"] == "code"  # type: ignore[index]


def test_a_colon_with_nothing_after_it_is_not_a_sentence() -> None:
    text = "Place this in your baseof.html template:\n\n{{< new-in 0.1 >}}\n\nThe site has a home."
    sentences = [s.text for s in split_sentences(hit(text), 0)]
    assert sentences == ["The site has a home."]


def test_a_carried_list_is_quoted_once() -> None:
    text = "Escapes five characters with entities:\n\n- `&` becomes `&amp;`\n- `<` becomes `&lt;`\n"
    answer = answer_extractive("escape characters entities", [hit(text)])
    assert [p.kind for p in answer.parts] == ["prose", "list"]
    assert answer.text.count("&amp;") == 1


def test_example_shown_first_on_a_reference_page() -> None:
    text = (
        "```go-template\n{{ math.Sqrt 81 }} → 9\n```\n\n"
        "The math.Sqrt function returns the square root of the given number."
    )
    answer = answer_extractive("square root of a number", [hit(text, path="math/Sqrt.md")])
    assert [p.kind for p in answer.parts] == ["prose", "code"]
    assert "{{ math.Sqrt 81 }}" in answer.text


def test_unrelated_code_after_prose_is_not_an_example() -> None:
    text = (
        "Hugo ships as one binary for every platform.\n\n```sh\nsudo mv hugo /usr/local/bin/\n```"
        "\n\nYou can also install Hugo with Snap."
    )
    answer = answer_extractive("Snap package", [hit(text)])
    assert [p.kind for p in answer.parts] == ["prose"]


@pytest.mark.timing
@pytest.mark.parametrize("unit", [FORMAT_PAGE, "A sentence of prose here.\n\n```\ncode\n```\n"])
def test_segment_is_linear(unit: str) -> None:
    base = 200_000 // len(unit)  # about 200 KB of text, then twice that
    texts = {n: unit * n for n in (base, 2 * base)}
    assert_linear(lambda n: segment(texts[n]), base, bound=3.5, what="2x text")


def test_reading_view_keeps_code_apart_from_prose() -> None:
    from chromasync.chunk.blocks import code_lines, reading_view

    prose, code = reading_view(FORMAT_PAGE)
    assert "{{ $t" not in prose and "Use the `time.Format` function" in prose
    assert "\n" not in prose and "[Go documentation]:" not in prose
    assert "> To localize the return value" not in prose and "To localize the return" in prose
    assert code is not None and code.lang == "go-html-template"
    assert code_lines(code) == code.text.splitlines()
    long = Block("code", "\n".join(str(i) for i in range(20)), "", 0, 1, 0, 19)
    assert code_lines(long, 3) == ["0", "1", "2", "…"]


def test_code_led_into_by_a_colon_is_an_example() -> None:
    text = (
        "The `transform.HTMLEscape` function escapes characters.\n\nFor example:\n\n"
        '```go-html-template\n{{ htmlEscape "Lilo & Stitch" }} → Lilo &amp; Stitch\n```'
    )
    answer = answer_extractive("escape special characters", [hit(text, path="HTMLEscape.md")])
    assert [p.kind for p in answer.parts] == ["prose", "code"]
    assert answer.parts[1].text.startswith("{{ htmlEscape")


def test_the_best_pages_example_is_shown_beside_another_pages_code() -> None:
    best = "```go-html-template\n{{ $d.Milliseconds }} → 12751500\n```"
    other = (
        "The time.Duration function returns a duration value in milliseconds.\n\n"
        'This template:\n\n```go-html-template\n{{ time.Duration "hour" 24 }}\n```'
    )
    hits = [
        hit(best, "ms", path="duration/Milliseconds.md"),
        hit(other, "dur", path="time/Duration.md"),
    ]
    answer = answer_extractive("duration as a count of milliseconds", hits)
    code = [p.text for p in answer.parts if p.kind == "code"]
    assert code[0] == "{{ $d.Milliseconds }} → 12751500"  # the best page's, first
    [first] = [c for c in answer.citations if c.n == answer.parts[0].n]
    assert first.path == "duration/Milliseconds.md"


def test_the_best_pages_example_from_its_page_is_cited_as_its_chunk() -> None:
    prose = hit("The address depends on the base URL of the project.", "p", 12, "AbsURL.md")
    read = hit('With a base:\n\n```go\n{{ absURL "a" }}\n```', "q", 30, "AbsURL.md")
    answer = answer_extractive("the address and the base", [prose], page=lambda h: [prose, read])
    assert [p.kind for p in answer.parts] == ["prose", "code"]
    cited = {c.n: c for c in answer.citations}[answer.parts[1].n]
    assert (cited.id, cited.start_line, cited.end_line) == ("q", 32, 34)
    unrelated = hit("Some other words here.\n\n```sh\nls -l\n```", "r", 40, "AbsURL.md")
    plain = answer_extractive("the address and the base", [prose], page=lambda h: [unrelated])
    assert [p.kind for p in plain.parts] == ["prose"]


@pytest.mark.parametrize(
    ("words", "same"),
    [
        (("string", "strings"), True),
        (("rune", "runes"), True),
        (("match", "matches"), True),
        (("meeting", "meetings", "meet"), True),
        (("cell", "cells"), True),
        (("string", "str"), False),
    ],
)
def test_a_word_and_its_plural_share_a_stem(words: tuple[str, ...], same: bool) -> None:
    from chromasync.answer.terms import stem

    assert (len({stem(w) for w in words}) == 1) is same


def test_a_body_less_pages_front_matter_is_never_a_sentence() -> None:
    from chromasync.chunk.blocks import reading_view

    index = "title: Hash functions\nlinkTitle: hash\ndescription: Use these functions to hash.\n"
    index += "categories: []\nmenu:\n  docs:\n    parent: functions"
    page = hit(index, "index", 2, "hash/_index.md")
    prose = hit("The hash.FNV32a function returns the hash of a string.", "fnv", 12, "FNV32a.md")
    answer = answer_extractive("hash functions", [page, prose])
    assert "title:" not in answer.text and "linkTitle" not in answer.text
    assert answer.text.startswith("The hash.FNV32a function")
    assert segment(index) == []
    # the terminal still shows such a hit's lines, flattened
    assert reading_view(index)[0].startswith("title: Hash functions linkTitle: hash")
    # prose that happens to start with "title:" stays prose
    assert segment("title: a word.\nAnd then a sentence of prose.")[0].text.startswith("title:")


def test_an_example_that_would_open_the_answer_must_be_about_the_question() -> None:
    code_only = "```go\n{{ math.Sqrt 81 }} → 9\n```"
    prose = hit("Deploy the public folder to any static host you like.", "d", 5, "Deploy.md")

    def page(heading: str, description: str) -> Hit:
        return Hit(
            "s",
            "Sqrt.md",
            "docs",
            heading,
            12,
            14,
            0.9,
            code_only,
            "c",
            {"description": description},
        )

    about = page("math.Sqrt", "Returns the square root of the given number.")
    answer = answer_extractive("square root of a number", [about, prose])
    assert answer.parts[0].kind == "code"  # its description says what it does
    unrelated = page("math.Sqrt", "Returns a number.")
    answer = answer_extractive("deploy to a static host", [unrelated, prose])
    assert [p.kind for p in answer.parts] == ["prose"]


def test_another_chunks_block_must_share_a_word_with_the_question_or_its_heading() -> None:
    matched = hit("Push to the main branch and the site is deployed to Pages.", "m", 10, "gh.md")
    cache = Hit(
        "c",
        "gh.md",
        "docs",
        "Host on GitHub Pages > Settings",
        40,
        44,
        0.5,
        "```toml\n[caches.images]\ndir = ':cacheDir/images'\n```",
        "c",
        {},
    )
    workflow = Hit(
        "w",
        "gh.md",
        "docs",
        "Host on GitHub Pages > Workflow",
        60,
        64,
        0.4,
        "```yaml\nname: Deploy to GitHub Pages\n```",
        "c",
        {},
    )
    answer = answer_extractive("deploy the site", [matched, cache])
    assert [p.kind for p in answer.parts] == ["prose"]  # the cache settings are not it
    answer = answer_extractive("deploy the site", [matched, cache, workflow])
    assert [p.text for p in answer.parts if p.kind == "code"] == ["name: Deploy to GitHub Pages"]


def test_an_example_without_its_own_sentence_carries_its_marker_in_the_text() -> None:
    code_only = "```go\n{{ math.Sqrt 81 }} → 9\n```"
    sqrt = Hit("s", "Sqrt.md", "docs", "math.Sqrt", 12, 14, 0.9, code_only, "c", {})
    answer = answer_extractive("math.Sqrt of a number", [sqrt])
    assert answer.text == "```go\n{{ math.Sqrt 81 }} → 9\n```\n\n[1]"
    # a block after its own source's sentence is not marked twice
    led = answer_extractive("how do I format a date in a template?", [hit(FORMAT_PAGE)])
    assert "```\n\n[1]" not in led.text
