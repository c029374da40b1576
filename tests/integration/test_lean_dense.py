"""A plain search reads its dense candidates as ids and distances, and its keyword candidates
as ids and BM25 scores, and fills in only the hits it returns: the result is the same as
fetching every candidate whole (real Chroma and SQLite, hash embedder), for many queries,
k values, modes, filters and collections, from the state's keyword index and the mirror."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from chromadb.api.models.Collection import Collection as ChromaCollection

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.datadir import STATE_FILE
from chromasync.embed.hashing import HashEmbedder
from chromasync.retrieve.bm25 import KeywordIndex
from chromasync.retrieve.engine import Retriever
from chromasync.retrieve.fuse import Fusion
from chromasync.retrieve.session import open_retriever

from ..conftest import age_tree, unique_collection

WORDS = tuple(
    " ".join(
        (
            "grinder espresso burr calibration coastal loop kite tide harbour ferry lantern",
            "sourdough starter flour oven crust bicycle chain gear spoke valve pressure pump",
            "garden tomato compost seed frost winter summer river bridge granite basalt quarry",
            "violin rosin bow string tuning pitch orbit comet telescope lens mirror focus",
        )
    ).split(" ")
)
TAGS = ("coffee", "cycling", "baking", "garden", "music", "sky")


def write_corpus(root: Path, seed: int, files: int) -> Path:
    rng = random.Random(seed)
    for n in range(files):
        sections = []
        for s in range(rng.randint(1, 4)):
            sentences = [
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 14))).capitalize() + "."
                for _ in range(rng.randint(1, 3))
            ]
            sections.append(f"## Part {s}\n\n" + " ".join(sentences) + "\n")
        tags = sorted(set(rng.sample(TAGS, rng.randint(1, 3))))
        front = (
            f"---\ntitle: Note {n}\ndate: 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            f"\ntags: [{', '.join(tags)}]\nrating: {rng.randint(1, 5)}\n---\n"
        )
        path = root / f"d{n % 4}" / f"note-{n:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(front + f"# Note {n}\n\n" + "\n".join(sections), encoding="utf-8")
    age_tree(root)
    return root


def queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    out = [" ".join(rng.sample(WORDS, rng.randint(1, 5))) for _ in range(count)]
    return [*out, "the of and", "zyxwvut nowhere", "espresso"]


@pytest.fixture(scope="module")
def two_collections(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Two sources of different kinds: one collection each, searched together by default."""
    base = tmp_path_factory.mktemp("lean")
    settings = api.resolve_settings({"data_dir": str(base / "data"), "provider": "hash"}, {})
    notes = write_corpus(base / "notes", seed=1, files=40)
    docs = write_corpus(base / "docs", seed=2, files=25)
    api.ingest([api.source_for(notes)], settings, embedder=HashEmbedder())
    api.ingest([api.source_for(docs, kind="docs")], settings, embedder=HashEmbedder())
    return settings


class Includes:
    """What each Chroma query asked for, and how many records each `get` read (the real
    query and get run)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, ...]] = []
        self.got: list[int] = []


@pytest.fixture
def includes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Includes]:
    record = Includes()
    real_query, real_get = ChromaCollection.query, ChromaCollection.get

    def query(self: ChromaCollection, *args: Any, **kwargs: Any) -> Any:
        record.seen.append(tuple(kwargs.get("include") or ()))
        return real_query(self, *args, **kwargs)

    def get(self: ChromaCollection, *args: Any, **kwargs: Any) -> Any:
        record.got.append(len(kwargs.get("ids") or ()))
        return real_get(self, *args, **kwargs)

    monkeypatch.setattr(ChromaCollection, "query", query)
    monkeypatch.setattr(ChromaCollection, "get", get)
    yield record


class Statements:
    """The keyword lists' SQL statements a retriever's keyword index ran."""

    def __init__(self, index: KeywordIndex | None) -> None:
        assert index is not None
        self.seen: list[str] = []
        index.db.set_trace_callback(self.seen.append)

    def lists(self) -> set[str]:
        """For each keyword list read: "lean" (ids and scores) or "full" (with fields)."""
        heads = [sql.split(" FROM ", 1)[0] for sql in self.seen if "MATCH" in sql]
        return {"full" if "c.metadata, c.text" in head else "lean" for head in heads}


def _json(result: api.SearchResult) -> str:
    """The `--json` form, each hit's metadata in key order: Chroma hands a record's metadata
    back in a different key order on every read (two full fetches differ there too)."""
    data = result.as_json()
    for hit in data["hits"]:  # type: ignore[attr-defined]
        hit["metadata"] = dict(sorted(hit["metadata"].items()))
    return json.dumps(data, ensure_ascii=False)


def _both(retriever: Retriever, request: api.SearchRequest) -> tuple[str, str]:
    lean = retriever.search(request)
    full = retriever.search(request, full_fetch=True)
    assert lean == full
    return _json(lean), _json(full)


def _requests(settings: Settings) -> Iterator[api.SearchRequest]:
    plain = api.make_filters(settings)
    for i, query in enumerate(queries(40)):
        for k in (1, 3, 10, 25, 80):
            mode = ("hybrid", "dense", "keyword")[i % 3] if k != 10 else "hybrid"
            yield api.SearchRequest(query, mode=mode, k=k, filters=plain)
    tagged = api.make_filters(settings, tags=["coffee", "sky"])
    phrase = api.make_filters(settings, phrases=["espresso"])
    for query in queries(6, seed=5):
        yield api.SearchRequest(query, k=10, filters=tagged)
        yield api.SearchRequest(query, k=10, filters=phrase, mode="dense")
        yield api.SearchRequest(query, k=10, filters=plain, min_score=0.3)
        yield api.SearchRequest(query, k=10, filters=plain, fusion=Fusion("rrf"))
        yield api.SearchRequest(query, k=10, filters=plain, candidates=15)
        yield api.SearchRequest(query, k=10, filters=plain, mode="keyword")


def test_plain_search_fetches_ids_and_matches_the_full_fetch(
    two_collections: Settings, includes: Includes
) -> None:
    settings = two_collections
    compared = 0
    filled = 0
    keyword_only = 0
    with open_retriever(settings, HashEmbedder()) as retriever:
        statements = Statements(retriever.local_index)
        for request in _requests(settings):
            includes.seen.clear()
            includes.got.clear()
            statements.seen.clear()
            lean, full = _both(retriever, request)
            assert lean == full, request
            result = json.loads(lean)
            # the state's index covers this local store: it holds the dense hits' fields
            # too, read with the keyword list's; a dense-only search reads them from Chroma
            assert bool(includes.got) == (request.mode == "dense" and bool(result["hits"]))
            if request.mode != "keyword":
                # the plain search asked Chroma for distances only; the full fetch for all
                assert set(includes.seen) == {
                    ("distances",),
                    ("metadatas", "documents", "distances"),
                }
            if request.mode != "dense" and statements.lists():
                # and the keyword index for ids and scores only; the full fetch for all
                assert statements.lists() == {"lean", "full"}
            compared += 1
            filled += sum("dense" in h["ranks"] for h in result["hits"])
            keyword_only += sum(h["ranks"].keys() == {"keyword"} for h in result["hits"])
            assert all(h["text"] and h["path"] for h in result["hits"])
    assert compared > 200
    assert filled > 500  # the dense hits really were filled in, not only keyword ones
    assert keyword_only > 500  # and so were the keyword-only ones
    collections = {
        h.collection
        for h in api.retrieve(
            api.SearchRequest("espresso grinder", k=40), settings, embedder=HashEmbedder()
        ).hits
    }
    assert collections == {"chromasync-notes", "chromasync-docs"}


class OverlapReranker:
    """A real, deterministic reranker: counts query words in the text."""

    name = "overlap"

    def score(self, query: str, texts: list[str]) -> list[float]:
        words = set(query.lower().split())
        return [float(sum(w in words for w in t.lower().split())) for t in texts]


def test_requests_that_read_candidates_fetch_them_whole(
    two_collections: Settings, includes: Includes
) -> None:
    """Per-doc collapse, date order, groups and reranking read every candidate's fields."""
    settings = two_collections
    plain = api.make_filters(settings)
    with open_retriever(settings, HashEmbedder()) as retriever:
        statements = Statements(retriever.local_index)
        for options in (
            {"per_doc": True},
            {"sort": "date"},
            {"group_by": "tags"},
            {"group_by": "collection", "per_doc": True},
        ):
            for query in queries(4, seed=3):
                includes.seen.clear()
                statements.seen.clear()
                request = api.SearchRequest(query, k=7, filters=plain, **options)
                _both(retriever, request)
                assert set(includes.seen) == {("metadatas", "documents", "distances")}
                assert statements.lists() == {"full"}
        retriever.reranker = OverlapReranker()
        for query in queries(4, seed=4):
            includes.seen.clear()
            statements.seen.clear()
            lean, _ = _both(retriever, api.SearchRequest(query, k=5, filters=plain))
            assert json.loads(lean)["reranked"] is True
            assert set(includes.seen) == {("metadatas", "documents", "distances")}
            assert statements.lists() == {"full"}


def test_a_chunk_gone_before_it_is_read_searches_again_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer deletes a returned chunk between the query and the read of its fields: the
    search is run again with every field fetched, so no hit comes back empty."""
    settings = api.resolve_settings(
        {"data_dir": str(tmp_path / "data"), "provider": "hash"},
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    api.ingest(
        [api.source_for(write_corpus(tmp_path / "n", 3, 20))], settings, embedder=HashEmbedder()
    )
    request = api.SearchRequest("espresso grinder tide", k=5, mode="dense")
    with open_retriever(settings, HashEmbedder()) as retriever:
        before = retriever.search(request)
        gone = before.hits[0].id
        real_get = ChromaCollection.get
        deleted: list[str] = []

        def get(self: ChromaCollection, *args: Any, **kwargs: Any) -> Any:
            if not deleted and gone in (kwargs.get("ids") or ()):
                self.delete(ids=[gone])  # the concurrent writer
                deleted.append(gone)
            return real_get(self, *args, **kwargs)

        monkeypatch.setattr(ChromaCollection, "get", get)
        after = retriever.search(request)
        assert deleted == [gone]
        assert gone not in [h.id for h in after.hits]
        assert all(h.text and h.path for h in after.hits)
        assert after == retriever.search(request, full_fetch=True)


def test_dense_hits_are_read_from_chroma_once_an_ingest_has_begun(
    tmp_path: Path, includes: Includes
) -> None:
    """An ingest begins (its source marked running) after the retriever saw the state clean:
    the state's index may now lag the collection, so the dense hits' fields are read from
    Chroma again, and the result is still the full fetch's."""
    settings = api.resolve_settings({"data_dir": str(tmp_path / "data"), "provider": "hash"}, {})
    api.ingest(
        [api.source_for(write_corpus(tmp_path / "n", 6, 20))], settings, embedder=HashEmbedder()
    )
    request = api.SearchRequest("espresso grinder tide harbour", k=5)
    with open_retriever(settings, HashEmbedder()) as retriever:
        includes.got.clear()  # the ingest's reads
        before = retriever.search(request)
        assert any("dense" in h.ranks for h in before.hits)
        assert includes.got == []  # filled from the state's index
        writer = sqlite3.connect(settings.data_dir / STATE_FILE)
        with writer:
            writer.execute("UPDATE sources SET status = 'running'")
        writer.close()
        after = retriever.search(request)
        assert includes.got  # from Chroma
        assert after == before == retriever.search(request, full_fetch=True)


def test_a_keyword_index_changed_before_its_hits_are_read_searches_again_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process rewrites a returned keyword hit (same id, other words and metadata)
    between the list and the read of its fields: the search runs again whole, so no hit
    shows text it was not ranked for."""
    settings = api.resolve_settings({"data_dir": str(tmp_path / "data"), "provider": "hash"}, {})
    api.ingest(
        [api.source_for(write_corpus(tmp_path / "n", 5, 20))], settings, embedder=HashEmbedder()
    )
    request = api.SearchRequest("espresso grinder tide", k=5, mode="keyword")
    with open_retriever(settings, HashEmbedder()) as retriever:
        before = retriever.search(request)
        changed = before.hits[0]
        real_records = KeywordIndex.records
        rewritten: list[str] = []

        def records(self: KeywordIndex, collection: str, ids: Any) -> Any:
            if not rewritten and changed.id in ids:
                writer = sqlite3.connect(settings.data_dir / STATE_FILE)
                with writer:  # what a re-ingest's INSERT OR REPLACE does to the row
                    row = writer.execute(
                        "SELECT collection, source, path, heading, metadata FROM chunks "
                        "WHERE id = ?",
                        (changed.id,),
                    ).fetchone()
                    writer.execute("DELETE FROM chunks WHERE id = ?", (changed.id,))
                    meta = {**json.loads(row[4]), "title": "Rewritten"}
                    writer.execute(
                        "INSERT INTO chunks (id, collection, source, path, heading, text, "
                        "metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (changed.id, *row[:4], "zanzibar quokka", json.dumps(meta)),
                    )
                writer.close()
                rewritten.append(changed.id)
            return real_records(self, collection, ids)

        monkeypatch.setattr(KeywordIndex, "records", records)
        after = retriever.search(request)
        assert rewritten == [changed.id]
        assert all("quokka" not in h.text for h in after.hits)
        assert after == retriever.search(request, full_fetch=True)
        assert after != before


def test_server_store_matches_the_full_fetch(
    tmp_path: Path, chroma_server: str, includes: Includes
) -> None:
    settings = api.resolve_settings(
        {
            "data_dir": str(tmp_path / "data"),
            "provider": "hash",
            "chroma_url": chroma_server,
            "collection": unique_collection(),
        },
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    api.ingest(
        [api.source_for(write_corpus(tmp_path / "n", 4, 30))], settings, embedder=HashEmbedder()
    )
    plain = api.make_filters(settings)
    with open_retriever(settings, HashEmbedder()) as retriever:
        for i, query in enumerate(queries(12, seed=9)):
            includes.seen.clear()
            mode = ("hybrid", "dense", "keyword")[i % 3]
            lean, full = _both(
                retriever, api.SearchRequest(query, k=3 + i, mode=mode, filters=plain)
            )
            assert lean == full
            if mode != "keyword":
                assert ("distances",) in includes.seen
    # another data dir searches the same collection from its keyword mirror
    elsewhere = replace(settings, data_dir=tmp_path / "elsewhere")
    with open_retriever(elsewhere, HashEmbedder()) as retriever:
        for i, query in enumerate(queries(12, seed=10)):
            mode = ("hybrid", "keyword")[i % 2]
            request = api.SearchRequest(query, k=3 + i, mode=mode, filters=plain)
            lean, full = _both(retriever, request)
            assert lean == full
            made = {plan[1] for plan in retriever.search(request).keyword_plan}
            assert made == {"mirror"}
