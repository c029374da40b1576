"""The extractive answer: sentences and their lines, scoring, MMR, numbering, groups."""

from __future__ import annotations

import pytest

from chromasync.answer.extractive import (
    Scored,
    Sentence,
    answer_extractive,
    select_mmr,
    split_sentences,
    terms_of,
)
from chromasync.answer.records import Answer, render_location
from chromasync.records import Hit

from ..doubling import assert_linear

INSTALL = """## Install on Linux

Hugo is distributed as a single binary for every platform. Download the extended edition
from the releases page, e.g. the tar.gz archive for linux-amd64.
Unpack the archive and move the hugo binary into a folder on your PATH.

```sh
sudo mv hugo /usr/local/bin/  # Install hugo system-wide. This is code, not prose.
```

| OS | Package |
|----|---------|

You can also install Hugo on Linux with Snap. The Snap package updates itself."""

THEMES = """Themes live in the themes folder of a site. A theme is added as a Git submodule
or as a Hugo module. The theme option in the site configuration selects the active theme."""

DEPLOY = """Hugo writes the finished site to the public folder. Any static host can serve it.
Netlify, GitHub Pages and Cloudflare Pages build Hugo sites from a Git repository."""


def hit(rid: str, text: str, start: int = 1, path: str | None = None, **meta: str | int) -> Hit:
    end = start + text.count("\n")
    return Hit(
        rid,
        path or f"docs/{rid}.md",
        "docs",
        rid.title(),
        start,
        end,
        1.0,
        text,
        metadata=dict(meta),
    )


def test_sentences_carry_their_file_lines_and_skip_non_prose() -> None:
    sentences = split_sentences(hit("install", INSTALL, start=40), 0)
    texts = [s.text for s in sentences]
    assert texts == [
        "Hugo is distributed as a single binary for every platform.",
        "Download the extended edition from the releases page, e.g. the tar.gz archive for "
        "linux-amd64.",
        "Unpack the archive and move the hugo binary into a folder on your PATH.",
        "You can also install Hugo on Linux with Snap.",
        "The Snap package updates itself.",
    ]
    # The chunk starts at file line 40: "## Install" is 40, the first prose line is 42.
    assert [(s.start_line, s.end_line) for s in sentences] == [
        (42, 42),
        (42, 43),
        (44, 44),
        (53, 53),
        (53, 53),
    ]


def test_unknown_lines_stay_unknown() -> None:
    [first, *_] = split_sentences(hit("themes", THEMES, start=0), 0)
    assert (first.start_line, first.end_line) == (0, 0)
    assert render_location("a.md", 0, 0, None) == "a.md"


def test_answer_cites_the_sentence_lines_and_numbers_sources_by_first_use() -> None:
    hits = [hit("themes", THEMES, 5), hit("install", INSTALL, 40), hit("deploy", DEPLOY, 1)]
    answer = answer_extractive("How do I install Hugo on Linux?", hits)
    assert answer.mode == "extractive"
    assert "You can also install Hugo on Linux with Snap. [1]" in answer.text
    # Only the install page is about installing: it is source 1 although ranked second.
    assert answer.citations[0].id == "install"
    assert answer.citations[0].n == 1
    assert answer.citations[0].start_line >= 42 and answer.citations[0].end_line <= 53
    assert [c.n for c in answer.citations] == list(range(1, len(answer.citations) + 1))
    assert "themes" not in {c.id for c in answer.citations}


def test_output_is_in_source_order_with_a_marker_after_each_sentence() -> None:
    hits = [hit("install", INSTALL, 1), hit("deploy", DEPLOY, 1)]
    answer = answer_extractive("Where does Hugo put the site, and how do I install hugo?", hits)
    pieces = [p for p in answer.text.split("] ") if p]
    assert all("[" in p for p in pieces)
    install_at = answer.text.index("[1]")
    deploy_at = answer.text.index("[2]")
    assert install_at < deploy_at
    assert [c.id for c in answer.citations] == ["install", "deploy"]


def test_bounds_on_sentences_and_characters() -> None:
    long = " ".join(f"Hugo sentence number {i} mentions hugo builds quickly." for i in range(60))
    answer = answer_extractive("hugo builds", [hit("long", long)], max_sentences=3)
    assert answer.text.count("[1]") == 3
    answer = answer_extractive("hugo builds", [hit("long", long)], max_sentences=50, max_chars=200)
    body = answer.text.replace(" [1]", "")
    assert len(body) <= 200
    assert answer.text.count("[1]") >= 2


def test_no_shared_word_falls_back_to_the_top_hits_opening() -> None:
    answer = answer_extractive("zymurgy?", [hit("themes", THEMES), hit("deploy", DEPLOY)])
    assert answer.text == "Themes live in the themes folder of a site. [1]"


def _sentence(rank: int, text: str) -> Sentence:
    return Sentence(rank, 0, text, 1, 1, terms_of(text))


def test_mmr_prefers_a_new_point_over_a_near_duplicate() -> None:
    a = Scored(_sentence(0, "Hugo builds sites fast with Go templates"), 1.0)
    a2 = Scored(_sentence(1, "Hugo builds sites fast with Go templates too"), 0.98)
    b = Scored(_sentence(2, "Sites deploy to any static host"), 0.6)
    picked = select_mmr([a, a2, b], max_sentences=2, lam=0.7)
    assert picked == [a, b]
    # Relevance alone (lambda 1, duplicates allowed) takes the near-duplicate.
    assert select_mmr([a, a2, b], max_sentences=2, lam=1.0, duplicate=1.1) == [a, a2]


def test_mmr_diversity_across_hits_in_the_answer() -> None:
    same = "Hugo builds a site of a thousand pages in under a second."
    hits = [hit("one", same), hit("two", same), hit("three", DEPLOY + " Hugo builds to public.")]
    answer = answer_extractive("How fast does Hugo build a site?", hits)
    assert answer.text.count(same) == 1


def test_spread_takes_a_sentence_of_several_hits_first() -> None:
    a = Scored(_sentence(0, "Grinder burrs are calibrated at the zero point"), 1.0)
    a2 = Scored(_sentence(0, "The zero point of the burrs is printed on a card"), 0.95)
    b = Scored(_sentence(1, "Espresso needs a fine and even grind"), 0.5)
    # plain MMR stays with the top hit's second sentence; spread cites hit 1 first
    assert select_mmr([a, a2, b], max_sentences=2, lam=1.0) == [a, a2]
    assert select_mmr([a, a2, b], max_sentences=2, lam=1.0, spread=2) == [a, b]
    # once each hit has a sentence, MMR fills from any hit
    assert select_mmr([a, a2, b], max_sentences=3, lam=1.0, spread=2) == [a, b, a2]


def test_spread_gives_way_when_no_other_hit_fits() -> None:
    a = Scored(_sentence(0, "Grinder burrs are calibrated"), 1.0)
    a2 = Scored(_sentence(0, "Burrs touch at zero"), 0.9)
    long = Scored(_sentence(1, "Burrs " + "word " * 60), 0.8)
    picked = select_mmr([a, a2, long], max_sentences=3, max_chars=80, lam=1.0, spread=3)
    assert picked == [a, a2]


def test_spread_cuts_a_further_hits_sentence_to_fit() -> None:
    a = Scored(_sentence(0, "Burrs " + "word " * 80), 1.0)  # 406 characters
    b = Scored(_sentence(1, "Grinder " + "term " * 60), 0.8)  # 308 characters
    picked = select_mmr([a, b], max_sentences=2, max_chars=600, lam=1.0, spread=2)
    assert [p.sentence.rank for p in picked] == [0, 1]
    assert picked[1].sentence.text.endswith("…")
    assert sum(len(p.sentence.text) + 1 for p in picked) <= 600
    # without spread the long second sentence does not fit and is left out
    assert select_mmr([a, b], max_sentences=2, max_chars=600, lam=1.0) == [a]


def test_spread_shares_the_room_so_every_spread_source_fits() -> None:
    """Three hits of long sentences (as abstracts are): each spread pick is cut to its share
    of the room, so all three are cited within max_chars (the first used to take 406 of the
    600 characters and leave room for one more source only)."""
    a = Scored(_sentence(0, "Burrs " + "word " * 80), 1.0)  # 406 characters
    b = Scored(_sentence(1, "Grinder " + "term " * 60), 0.8)  # 308 characters
    c = Scored(_sentence(2, "Espresso " + "bean " * 60), 0.7)  # 309 characters
    picked = select_mmr([a, b, c], max_sentences=3, max_chars=600, lam=1.0, spread=3)
    assert [p.sentence.rank for p in picked] == [0, 1, 2]
    assert [len(p.sentence.text) <= 200 for p in picked] == [True, True, True]
    assert all(p.sentence.text.endswith("…") for p in picked)
    assert sum(len(p.sentence.text) + 1 for p in picked) <= 600
    short = Scored(_sentence(0, "Burrs touch at zero."), 1.0)  # under its share: kept whole
    assert select_mmr([short, b], max_chars=600, lam=1.0, spread=2)[0] == short


def test_answer_cites_more_than_the_top_hit() -> None:
    first = "Hugo builds sites fast. Hugo builds sites with Go templates. Hugo builds often."
    second = "Hugo builds sites into the public folder."
    answer = answer_extractive(
        "How does Hugo build sites?", [hit("one", first), hit("two", second)]
    )
    assert {c.id for c in answer.citations} == {"one", "two"}


def test_grouped_answer_has_one_part_per_value_with_its_own_citations() -> None:
    hits = [
        hit("install", INSTALL, 1, product="hugo"),
        hit("deploy", DEPLOY, 1, product="hosting"),
        hit("themes", THEMES, 1, product="hugo"),
    ]
    answer = answer_extractive("install hugo themes and deploy", hits, group_by="product")
    assert [g.value for g in answer.groups] == ["hugo", "hosting"]
    hugo, hosting = answer.groups
    assert {c.id for c in hugo.citations} <= {"install", "themes"}
    assert [c.id for c in hosting.citations] == ["deploy"]
    numbers = [c.n for c in answer.citations]
    assert numbers == sorted(set(numbers))  # one number per source across the groups
    assert answer.text.startswith("product: hugo\n")
    payload = answer.as_json()
    assert payload["group_by"] == "product"
    groups = payload["groups"]
    assert isinstance(groups, list)
    assert [g["value"] for g in groups] == ["hugo", "hosting"]


def test_group_by_source_and_missing_field() -> None:
    hits = [hit("install", INSTALL), hit("deploy", DEPLOY)]
    by_source = answer_extractive("hugo", hits, group_by="source")
    assert [g.value for g in by_source.groups] == ["docs"]
    missing = answer_extractive("hugo", hits, group_by="team")
    assert [g.value for g in missing.groups] == ["(none)"]


def test_json_shape_and_page_rendering() -> None:
    answer = answer_extractive("Snap package", [hit("install", INSTALL, 10, page=7)])
    payload = answer.as_json()
    assert set(payload) == {
        "question",
        "answer",
        "citations",
        "sources",
        "mode",
        "model",
        "usage",
        "flags",
        "removed_citations",
        "unsupported_citations",
        "unsupported",
        "parts",
    }
    citations = payload["citations"]
    assert isinstance(citations, list)
    [citation] = citations
    assert set(citation) == {
        "n",
        "id",
        "path",
        "heading",
        "start_line",
        "end_line",
        "page",
        "quote",
        "source",
    }
    assert payload["sources"] == ["docs/install.md:23 p. 7"]
    assert isinstance(answer, Answer) and answer.sources == ("docs/install.md:23 p. 7",)


@pytest.mark.timing
@pytest.mark.parametrize("field", [None, "source"])
def test_time_is_linear_in_the_input(field: str | None) -> None:
    hits = {
        n: [
            hit(f"h{i}", f"Topic {i} explains hugo module {i % 7}. " * 40 + INSTALL)
            for i in range(n)
        ]
        for n in (20, 40)
    }
    assert_linear(
        lambda n: answer_extractive("hugo module install linux", hits[n], group_by=field),
        20,
        bound=3.5,
        what="2x hits",
    )
