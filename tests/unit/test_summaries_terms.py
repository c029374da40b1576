"""Distinctive terms and prose sentences of `summarize` (pure)."""

from __future__ import annotations

from chromasync.answer.summaries import distinctive_terms, extractive_summary, is_prose, prose
from chromasync.records import Hit


def _hit(rid: str, text: str) -> Hit:
    return Hit(rid, f"{rid}.md", "notes", "", 1, 5, 0.0, text)


def test_terms_leave_code_out_and_weigh_against_other_groups() -> None:
    groups = {
        "coffee": [
            _hit("a", "The grinder grinds beans. ```\nif end true end\n``` {{ end }} grinder"),
            _hit("b", "Espresso needs a fine grinder and fresh beans for espresso, `end`."),
        ],
        "bikes": [_hit("c", "The chain needs wax, and the beans of the mechanic.")],
    }
    terms = distinctive_terms(groups)
    coffee = [t for t, _ in terms["coffee"]]
    assert coffee[0] == "grinder"
    assert "end" not in coffee and "true" not in coffee
    assert coffee.index("bean") > coffee.index("espresso")  # as often, but bikes use it too
    assert "end" not in prose("a `end` b {{ end }} <br> https://x.org/end")


def test_summary_prefers_prose_sentences() -> None:
    assert is_prose("Tomato seedlings want warm soil and steady watering.")
    assert not is_prose("[rel]: /configuration/output-formats/#rel")
    assert not is_prose("| a | b | c | d | e | f |")
    assert not is_prose('echo "x" && command -v go &> /dev/null || echo "Go: missing"')
    hits = [
        _hit(
            "a",
            "{{ range .Pages }} grinder {{ end }} grinder grinder burrs\n\n"
            "The grinder burrs wear out after a few years of daily use.",
        ),
    ]
    summary = extractive_summary(hits, ["grinder", "burr"])
    assert summary == "The grinder burrs wear out after a few years of daily use."
