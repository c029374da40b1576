"""Hybrid retrieval against a real Chroma and the real keyword index (hash embedder)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import ConfigError, NotFound
from chromasync.records import Hit
from chromasync.retrieve.filters import where_to_sql
from chromasync.state.manifest import STATE_FILE

from ..conftest import age_tree, set_mtime

NOTES = "chromasync-notes"  # the collection of a `notes` source in the per-kind layout

CORPUS: dict[str, str] = {
    "journal/2026-01-10.md": """---
title: Winter ride
date: 2026-01-10
tags: [journal, cycling]
rating: 3
---
# Winter ride

Icy roads on the coastal loop; the studded tyres earned their keep.
""",
    "journal/2026-05-01.md": """---
title: First of May
date: 2026-05-01
tags: [journal, cycling, coffee]
rating: 5
---
# First of May

Rode the coastal loop, 84 km, then calibrated the espresso grinder at the cafe.
""",
    "guides/grinder.md": """---
title: Installing the espresso grinder
published_at: 2026-03-14
tags: [coffee, hardware]
url: https://example.org/grinders/calibration
draft: false
---
# Installing the espresso grinder

## Calibration

Turn the adjustment ring clockwise until the burrs just touch, then back off two steps.
That is the zero point for espresso.

## Cleaning

Brush the burrs weekly. Pay-for-performance baristas clean daily.
""",
    "guides/sourdough.md": """---
title: Sourdough starter
date: 2025-11-02
tags: [baking]
url: https://bread.example.net/starter
draft: true
---
# Sourdough starter

Feed the starter flour and water every day; the zyxwvut culture smells of apples.
""",
    "ideas.txt": "Ideas: a kite that photographs the coastal loop from above.\n",
}


def write_corpus(root: Path, files: dict[str, str] = CORPUS) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    age_tree(root)
    return root


@pytest.fixture
def corpus(tmp_path: Path, settings: Settings, embedder: HashEmbedder) -> Path:
    """A fresh indexed corpus, for tests that change it."""
    root = write_corpus(tmp_path / "notes")
    api.ingest([api.source_for(root)], settings, embedder=embedder)
    return root


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Settings]:
    """One indexed corpus for the read-only tests of this module (never modified)."""
    base = tmp_path_factory.mktemp("retrieval")
    root = write_corpus(base / "notes")
    settings = api.resolve_settings({"data_dir": str(base / "data"), "provider": "hash"}, {})
    api.ingest([api.source_for(root)], settings, embedder=HashEmbedder())
    return root, settings


def _search(settings: Settings, embedder: HashEmbedder, query: str, **kw: Any) -> api.SearchResult:
    filter_options = {
        k: kw.pop(k)
        for k in list(kw)
        if k
        in {
            "sources",
            "where",
            "where_json",
            "tags",
            "tags_all",
            "after",
            "before",
            "paths",
            "phrases",
            "matches",
        }
    }
    request = api.SearchRequest(query, filters=api.make_filters(settings, **filter_options), **kw)
    return api.retrieve(request, settings, embedder=embedder)


def _paths(result: api.SearchResult) -> set[str]:
    return {h.path for h in result.hits}


# -- filters: the same restriction in every mode -------------------------------------------

FILTER_CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"tags": ["cycling"]}, {"journal/2026-01-10.md", "journal/2026-05-01.md"}),
    ({"tags": ["cycling", "coffee"], "tags_all": True}, {"journal/2026-05-01.md"}),
    (
        {"tags": ["baking", "hardware"]},
        {"guides/grinder.md", "guides/sourdough.md"},
    ),
    ({"after": "2026-03-01"}, {"journal/2026-05-01.md", "guides/grinder.md"}),
    ({"before": "2026-01-11"}, {"journal/2026-01-10.md", "guides/sourdough.md"}),
    (
        {"after": "2026-01-01", "before": "2026-04-01"},
        {"journal/2026-01-10.md", "guides/grinder.md"},
    ),
    ({"paths": ["journal/*"]}, {"journal/2026-01-10.md", "journal/2026-05-01.md"}),
    ({"paths": ["*.txt"]}, {"ideas.txt"}),
    ({"where": ["rating=5"]}, {"journal/2026-05-01.md"}),
    ({"where": ["draft=false"]}, {"guides/grinder.md"}),
    ({"where_json": '{"rating": {"$gte": 3}}'}, {"journal/2026-01-10.md", "journal/2026-05-01.md"}),
    ({"phrases": ["zero point"]}, {"guides/grinder.md"}),
    ({"phrases": ["pay for performance"]}, {"guides/grinder.md"}),
    ({"matches": ["url=EXAMPLE.ORG/grinders"]}, {"guides/grinder.md"}),
    ({"sources": ["notes"], "tags": ["baking"]}, {"guides/sourdough.md"}),
    ({"paths": ["nowhere/*"]}, set()),
]


@pytest.mark.parametrize("mode", ["dense", "keyword", "hybrid"])
def test_an_unknown_source_label_is_an_error(
    shared: tuple[Path, Settings], embedder: HashEmbedder, mode: str
) -> None:
    """Not an empty result: a typo says so, with the closest label (issue 29)."""
    _, settings = shared
    with pytest.raises(NotFound, match=r"no source labelled 'elsewhere'.*known: notes"):
        _search(settings, embedder, "espresso", mode=mode, k=50, sources=["elsewhere"])


@pytest.mark.parametrize("mode", ["dense", "keyword", "hybrid"])
@pytest.mark.parametrize(("options", "expected"), FILTER_CASES)
def test_filters_restrict_every_mode(
    shared: tuple[Path, Settings],
    embedder: HashEmbedder,
    mode: str,
    options: dict[str, Any],
    expected: set[str],
) -> None:
    _, settings = shared
    # A query with a word in every file, so keyword mode can reach them all.
    query = "the coastal loop espresso starter kite"
    for rel, text in CORPUS.items():
        assert set(query.split()) & set(re.findall(r"\w+", text.lower())), rel
    result = _search(settings, embedder, query, mode=mode, k=50, **options)
    got = _paths(result)
    # k covers every chunk: dense ranks each chunk that passes the filter, keyword each that
    # holds a query word, and every file holds one.
    assert got == expected
    assert result.filters.as_json()  # echoed back


def test_where_sql_agrees_with_chroma(
    shared: tuple[Path, Settings],
) -> None:
    """The SQL translation selects exactly the records Chroma's own `where` selects."""
    _, settings = shared
    collection = api.open_store(settings).collection(settings.collection_for("notes"), create=False)
    db = sqlite3.connect(settings.data_dir / STATE_FILE)
    cases: list[dict[str, Any]] = [
        {"rating": 5},
        {"rating": 5.0},
        {"rating": "5"},
        {"rating": {"$ne": 5}},
        {"rating": {"$nin": [3, 5]}},
        {"rating": {"$in": [3, 4]}},
        {"rating": {"$gt": 3}},
        {"rating": {"$lte": 3}},
        {"draft": True},
        {"draft": {"$ne": True}},
        {"tags": {"$contains": "coffee"}},
        {"tags": {"$not_contains": "coffee"}},
        {"url": {"$contains": "example"}},
        {"title": "Sourdough starter"},
        {"$or": [{"rating": 3}, {"tags": {"$contains": "baking"}}]},
        {"$and": [{"tags": {"$contains": "journal"}}, {"date_ts": {"$gte": 1_770_000_000}}]},
    ]
    for where in cases:
        chroma = {r.id for r in collection.iter_records(where=where)}
        sql, params = where_to_sql(where)
        local = {
            r[0]
            for r in db.execute(
                f"SELECT c.id FROM chunks AS c WHERE c.collection = ? AND {sql}",
                (settings.collection_for("notes"), *params),
            )
        }
        assert local == chroma, where
    db.close()


def test_keyword_finds_exact_rare_words(
    shared: tuple[Path, Settings], embedder: HashEmbedder
) -> None:
    _, settings = shared
    result = _search(settings, embedder, "zyxwvut", mode="keyword", k=5)
    assert [h.path for h in result.hits] == ["guides/sourdough.md"]
    assert result.hits[0].ranks == {"keyword": 1}
    stemmed = _search(settings, embedder, "calibrating", mode="keyword", k=5)
    assert "journal/2026-05-01.md" in _paths(stemmed)  # porter: calibrated ~ calibrating


def test_hybrid_merges_both_lists(shared: tuple[Path, Settings], embedder: HashEmbedder) -> None:
    _, settings = shared
    query = "zyxwvut burrs"
    dense = _search(settings, embedder, query, mode="dense", k=3)
    keyword = _search(settings, embedder, query, mode="keyword", k=3)
    hybrid = _search(settings, embedder, query, mode="hybrid", k=6)
    ids = [h.id for h in hybrid.hits]
    assert {h.id for h in keyword.hits} <= set(ids)
    assert dense.hits[0].id in ids
    both = [h for h in hybrid.hits if set(h.ranks) == {"dense", "keyword"}]
    assert both, "some hit should be ranked by both lists"
    scores = [h.score for h in hybrid.hits]
    assert scores == sorted(scores, reverse=True)


def test_per_doc_sort_and_group(shared: tuple[Path, Settings], embedder: HashEmbedder) -> None:
    _, settings = shared
    result = _search(settings, embedder, "the", mode="dense", k=10, per_doc=True)
    paths = [h.path for h in result.hits]
    assert len(paths) == len(set(paths)) == 5
    for hit in result.hits:  # k covers every chunk: the others of each file are folded in
        assert hit.collapsed == int(hit.metadata["chunk_count"]) - 1

    # date order covers the relevant candidates: with a floor of 0, every one of them
    by_date = _search(
        settings, embedder, "the", mode="dense", k=10, per_doc=True, sort="date", min_score=0.0
    )
    assert [h.path for h in by_date.hits][:4] == [
        "journal/2026-05-01.md",
        "guides/grinder.md",  # published_at 2026-03-14
        "journal/2026-01-10.md",
        "guides/sourdough.md",
    ]
    assert by_date.hits[4].path == "ideas.txt"  # undated last

    grouped = _search(settings, embedder, "the", mode="dense", k=10, per_doc=True, group_by="draft")
    values = [v for v, _ in grouped.groups]
    assert sorted(values) == ["(none)", "False", "True"]
    flat = [i for _, members in grouped.groups for i in members]
    assert flat == list(range(len(grouped.hits)))
    as_json = grouped.as_json()
    assert as_json["group_by"] == "draft" and len(as_json["groups"]) == 3  # type: ignore[arg-type]
    # a folder level, as `suggest` and `similar` read it (issue 39: one `group_key`)
    folders = _search(
        settings, embedder, "the", mode="dense", k=10, per_doc=True, group_by="path:1", min_score=0
    )
    assert sorted(v for v, _ in folders.groups) == ["(root)", "guides", "journal"]


def test_keyword_index_follows_edits_and_deletes(
    corpus: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    grinder = corpus / "guides" / "grinder.md"
    grinder.write_text(grinder.read_text().replace("zero point", "qwertyuiop mark"))
    set_mtime(grinder, 1_700_000_000)
    (corpus / "guides" / "sourdough.md").unlink()
    api.ingest([api.source_for(corpus)], settings, embedder=embedder)

    assert not _search(settings, embedder, "zyxwvut", mode="keyword").hits
    assert not _search(settings, embedder, "zero", mode="keyword", phrases=["zero point"]).hits
    found = _search(settings, embedder, "qwertyuiop", mode="keyword")
    assert [h.path for h in found.hits] == ["guides/grinder.md"]

    collection = api.open_store(settings).collection(settings.collection_for("notes"), create=False)
    stored = {r.id: r.document for r in collection.iter_records(documents=True)}
    db = sqlite3.connect(settings.data_dir / STATE_FILE)
    local = dict(
        db.execute(
            "SELECT id, text FROM chunks WHERE collection = ?", (settings.collection_for("notes"),)
        )
    )
    fts = db.execute("SELECT COUNT(*) FROM keyword WHERE keyword MATCH 'zyxwvut'").fetchone()[0]
    db.close()
    assert local == stored
    assert fts == 0


def test_several_collections_fuse_and_name_their_collection(
    tmp_path: Path, embedder: HashEmbedder
) -> None:
    settings = api.resolve_settings({"data_dir": str(tmp_path / "data"), "provider": "hash"}, {})
    notes = write_corpus(tmp_path / "notes")
    docs = write_corpus(
        tmp_path / "docs", {"kites.md": "# Kites\n\nA kite over the coastal loop.\n"}
    )
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    api.ingest([api.source_for(docs, kind="docs")], settings, embedder=embedder)
    both = {NOTES, "chromasync-docs"}

    for request in (
        {},  # the default: every collection of this configuration (one per kind)
        {"collections": (NOTES, "chromasync-docs")},
        {"all_collections": True},
    ):
        result = _search(settings, embedder, "kite coastal loop", k=10, **request)
        assert set(result.collections) == both
        assert {h.collection for h in result.hits} == both
        assert ("chromasync-docs", "kites.md") in {(h.collection, h.path) for h in result.hits}

    only = _search(settings, embedder, "kite", collections=("chromasync-docs",), mode="keyword")
    assert {h.collection for h in only.hits} == {"chromasync-docs"}


def test_missing_collection_is_not_found(
    shared: tuple[Path, Settings], embedder: HashEmbedder
) -> None:
    _, settings = shared
    with pytest.raises(NotFound, match="nope"):
        _search(settings, embedder, "x", collections=("nope",))


def test_keyword_mirror_covers_what_the_state_does_not(
    corpus: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """Without a local index for the collection, keyword search reads a mirror of it."""
    expected = _search(settings, embedder, "coastal loop", mode="keyword", k=10)
    (settings.data_dir / STATE_FILE).unlink()
    for suffix in ("-wal", "-shm"):
        (settings.data_dir / (STATE_FILE + suffix)).unlink(missing_ok=True)
    mirrored = _search(settings, embedder, "coastal loop", mode="keyword", k=10)
    assert [h.id for h in mirrored.hits] == [h.id for h in expected.hits]
    assert (settings.data_dir / "keyword-mirror.sqlite3").is_file()
    assert _paths(
        _search(settings, embedder, "espresso", mode="keyword", phrases=["zero point"])
    ) == {"guides/grinder.md"}


def test_search_api_keeps_its_signature(
    shared: tuple[Path, Settings], embedder: HashEmbedder
) -> None:
    _, settings = shared
    hits = api.search("grinder calibration", settings, k=3, embedder=embedder)
    assert hits and all(isinstance(h, Hit) for h in hits)
    dense = api.search(
        "grinder", settings, k=10, where={"draft": False}, embedder=embedder, mode="dense"
    )
    assert {h.path for h in dense} == {"guides/grinder.md"}


class OverlapReranker:
    """A real, deterministic reranker: counts query words in the text."""

    name = "overlap"

    def score(self, query: str, texts: list[str]) -> list[float]:
        words = set(query.lower().split())
        return [float(sum(w in words for w in t.lower().split())) for t in texts]


def test_rerank_reorders_and_none_configured_is_skipped(
    shared: tuple[Path, Settings], embedder: HashEmbedder
) -> None:
    corpus, settings = shared
    from chromasync.retrieve.rerank import make_reranker, rerank

    assert make_reranker(None) is None
    plain = _search(settings, embedder, "burrs weekly brush", mode="dense", k=5)
    assert plain.reranked is False
    reranked = rerank("burrs weekly brush", list(plain.hits), OverlapReranker())
    assert "Brush the burrs weekly" in reranked[0].text
    assert reranked[0].ranks["rerank"] == 1
    with pytest.raises(ConfigError, match=r"config\.json"):
        make_reranker(str(corpus))


def test_similar_flags_copies_and_excludes_itself(
    shared: tuple[Path, Settings], tmp_path: Path, embedder: HashEmbedder
) -> None:
    corpus, settings = shared
    copy = tmp_path / "capture.md"
    copy.write_text((corpus / "guides" / "grinder.md").read_text())
    result = api.similar(copy, settings, k=3, embedder=embedder)
    top = result.documents[0]
    assert (top.path, top.exact, top.duplicate) == ("guides/grinder.md", True, True)
    assert result.excluded is None

    itself = api.similar(corpus / "guides" / "grinder.md", settings, k=10, embedder=embedder)
    assert itself.excluded == "notes:guides/grinder.md"
    assert "guides/grinder.md" not in {d.path for d in itself.documents}

    fresh = tmp_path / "fresh.md"
    fresh.write_text("# Tide tables\n\nLow water at noon, high water at six.\n")
    unrelated = api.similar(fresh, settings, k=3, embedder=embedder, threshold=0.99)
    assert not any(d.duplicate for d in unrelated.documents)
    assert json.dumps(unrelated.as_json())


def test_eval_measures_each_mode(
    shared: tuple[Path, Settings], tmp_path: Path, embedder: HashEmbedder
) -> None:
    _, settings = shared
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "\n".join(
            json.dumps(q)
            for q in [
                {"query": "zyxwvut culture", "relevant": ["sourdough"]},
                {"query": "studded tyres icy roads", "relevant": ["journal/2026-01-10.md"]},
                {"query": "burrs adjustment ring", "relevant": ["grinder.md"]},
            ]
        )
    )
    report = api.evaluate(api.load_queries(queries), settings, embedder=embedder)
    assert set(report.modes) == {"hybrid", "dense", "keyword"}
    assert report.queries == 3
    assert report.modes["keyword"]["recall"] == 1.0
    assert report.modes["keyword"]["mrr"] == 1.0
    for figures in report.modes.values():
        assert all(0.0 <= v <= 1.0 for v in figures.values())


def test_a_phrase_filters_and_the_query_ranks(tmp_path: Path, settings: Settings) -> None:
    """Issue 39, Q4: with `--phrase`, the hits that held it were ranked among themselves
    alone: two candidates, each list normalised over two documents, so the keyword list's
    best (an inbox decoy repeating a name) always won, and the top meaning match read 0.03
    (the lowest of a padded list). The phrase is a filter: what passes it keeps its place
    and relevance in the query's whole ranking."""
    from click.testing import CliRunner

    from chromasync.cli.main import main

    root = tmp_path / "grants"
    for folder in ("inbox", "reports", "misc"):
        (root / folder).mkdir(parents=True)
    (root / "reports/kresge.md").write_text(
        "# Kresge\n\nThe Kresge Foundation ties each grant to results: pay-for-performance.\n"
    )
    (root / "inbox/fwd.md").write_text(
        "# Fwd: newsletter\n\nFwd: pay-for-performance. The newsletter says Kresge again and "
        "again, with grant outcomes for every reader of the list this week; unsubscribe "
        "below to stop the newsletter.\n"
    )
    for i in range(30):
        (root / f"misc/n{i}.md").write_text(
            f"# Note {i}\n\nA note {i} on a foundation grant for parks and schools.\n"
        )
    age_tree(root)
    api.ingest([api.source_for(root)], settings)
    query = "Kresge Foundation grant outcomes"

    def found(**options: Any) -> list[tuple[str, float | None]]:
        request = api.build_request(api.SearchArgs.of(query, **options), ("date",))
        return [(h.path, h.relevance) for h in api.retrieve(request, settings).hits]

    for mode in ("hybrid", "dense", "keyword"):
        whole = found(mode=mode, k=40)
        phrased = found(mode=mode, phrases=["pay-for-performance"])
        assert phrased == [hit for hit in whole if hit[0] in ("reports/kresge.md", "inbox/fwd.md")]
    best, decoy = found(phrases=["pay-for-performance"])
    assert best[0] == "reports/kresge.md" and decoy[0] == "inbox/fwd.md"
    assert (best[1] or 0) > 0.5 and (decoy[1] or 0) > (best[1] or 0) / 2  # no weak reading
    env = {"CHROMASYNC_DATA_DIR": str(settings.data_dir), "CHROMASYNC_EMBEDDING_PROVIDER": "hash"}
    argv = ["search", query, "--phrase", "pay-for-performance", "--json", "--no-daemon"]
    done = CliRunner().invoke(main, argv, env=env)
    assert done.exit_code == 0, done.output
    assert [h["path"] for h in json.loads(done.stdout)["hits"]] == [best[0], decoy[0]]
