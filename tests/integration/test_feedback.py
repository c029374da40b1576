"""Hybrid search's second round (pseudo-relevance feedback, `FEEDBACK_FUSION`, opt-in)
against a real Chroma and the real keyword index: a document in the best one's words but
none of the query's is found by keyword, under the same filters; the lean search equals the
full fetch; the default hybrid, dense and keyword modes run no second round."""

from __future__ import annotations

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.retrieve.results import DEFAULT_FUSION, FEEDBACK_FUSION
from chromasync.retrieve.session import open_retriever

FILES = {
    "statins.md": "# Statins\n\nStatins lower cholesterol. Statins and cholesterol in trials.\n",
    "diet.md": "# Diet\n\nCholesterol falls with a diet of oats; cholesterol and lipids.\n",
    "roses.md": "# Roses\n\nPrune the roses in spring and water them at dawn.\n",
    "bikes.md": "# Bikes\n\nOil the chain after a wet ride and check the brakes.\n",
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    base = tmp_path_factory.mktemp("feedback")
    root = base / "notes"
    root.mkdir()
    for name, text in FILES.items():
        (root / name).write_text(text)
    settings = api.resolve_settings({"data_dir": str(base / "data"), "provider": "hash"}, {})
    api.ingest([api.source_for(root)], settings, embedder=HashEmbedder())
    return settings


def _hits(settings: Settings, **kw: object) -> dict[str, api.Hit]:
    request = api.SearchRequest("statins", k=10, **kw)  # type: ignore[arg-type]
    result = api.retrieve(request, settings, embedder=HashEmbedder())
    return {h.path: h for h in result.hits}


def test_the_second_round_finds_the_best_documents_words(indexed: Settings) -> None:
    fed = _hits(indexed, fusion=FEEDBACK_FUSION)
    plain = _hits(indexed)  # the default: DEFAULT_FUSION, the first round alone
    assert FEEDBACK_FUSION.feedback is not None and DEFAULT_FUSION.feedback is None
    first = next(iter(fed))
    assert first == next(iter(plain)) == "statins.md"
    # "diet" holds no word of the query: only the expanded query ("cholesterol") finds it
    assert "keyword" in fed["diet.md"].ranks and "keyword" not in plain["diet.md"].ranks
    assert list(fed).index("diet.md") < list(fed).index("roses.md")
    assert "keyword" not in fed["roses.md"].ranks


def test_the_second_round_keeps_the_filters(indexed: Settings) -> None:
    filters = api.make_filters(indexed, paths=["statins.md", "roses.md", "bikes.md"])
    fed = _hits(indexed, filters=filters, fusion=FEEDBACK_FUSION)
    assert set(fed) <= {"statins.md", "roses.md", "bikes.md"} and "statins.md" in fed


@pytest.mark.parametrize("mode", ["dense", "keyword"])
def test_single_modes_do_not_feed_back(indexed: Settings, mode: str) -> None:
    assert [h.id for h in _hits(indexed, mode=mode, fusion=FEEDBACK_FUSION).values()] == [
        h.id for h in _hits(indexed, mode=mode).values()
    ]
    assert "diet.md" not in _hits(indexed, mode="keyword", fusion=FEEDBACK_FUSION)


def test_lean_search_equals_the_full_fetch(indexed: Settings) -> None:
    request = api.SearchRequest("cholesterol statins", k=3, fusion=FEEDBACK_FUSION)
    with open_retriever(indexed, HashEmbedder()) as retriever:
        lean = retriever.search(request)
        full = retriever.search(request, full_fetch=True)
    assert lean.hits == full.hits and len(lean.hits) == 3


def test_eval_measures_the_fed_ranking_beside_the_default(indexed: Settings) -> None:
    queries = [api.EvalQuery("q1", "statins", ("diet.md",))]
    report = api.evaluate(
        queries,
        indexed,
        modes=("hybrid",),
        feedback=True,
        embedder=HashEmbedder(),
    )
    assert report.modes["hybrid+feedback"]["mrr"] > report.modes["hybrid"]["mrr"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, True),  # ask's default: hybrid with feedback (docs/retrieval.md)
        ({"feedback": False}, False),  # --no-feedback
        ({"mode": "dense"}, False),  # feedback is hybrid's only: never an error by default
        ({"mode": "keyword"}, False),
    ],
)
def test_ask_retrieves_with_feedback_unless_told(
    indexed: Settings, given: dict[str, object], expected: bool
) -> None:
    seen: list[api.SearchArgs] = []

    def search(args: api.SearchArgs) -> api.SearchResult:
        seen.append(args)
        return api.retrieve(api.search_request(args, indexed), indexed, embedder=HashEmbedder())

    answer = api.ask(api.SearchArgs.of("statins", **given), indexed, search=search)
    assert seen[0].feedback is expected
    assert answer.citations, "the extractive answer cites what was found"
    # search itself keeps plain hybrid unless --feedback is given
    request = api.search_request(api.SearchArgs.of("statins", **given), indexed)
    assert request.fusion is None
