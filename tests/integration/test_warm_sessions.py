"""Warm retrieval sessions (`api.WarmSessions`, what the daemon, `serve`, `watch` and `mcp`
search through) and the keyword lists' one-collection statement: each answers exactly what a
search that opens everything anew answers, and a write to the data dir is seen by the very
next search (real Chroma, real SQLite, hash embedder)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import NotFound
from chromasync.retrieve import session as sessions_module
from chromasync.retrieve.bm25 import Condition, KeywordIndex
from chromasync.retrieve.session import open_retriever

from .test_lean_dense import queries, write_corpus


def _json(result: api.SearchResult) -> str:
    return json.dumps(result.as_json(), ensure_ascii=False, sort_keys=True)


def _requests(settings: Settings) -> list[api.SearchRequest]:
    plain = api.make_filters(settings)
    tagged = api.make_filters(settings, tags=["coffee"])
    out = []
    for i, query in enumerate(queries(30, seed=21)):
        mode = ("hybrid", "dense", "keyword")[i % 3]
        out.append(api.SearchRequest(query, mode=mode, k=(3, 10, 40)[i % 3], filters=plain))
        out.append(api.SearchRequest(query, k=5, filters=tagged, per_doc=bool(i % 2)))
    return out


class Opened:
    """Counts the sessions opened (the real ones open)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = sessions_module._Session.open

        def counted(settings: Settings, embedder: object) -> object:
            self.count += 1
            return real(settings, embedder)  # type: ignore[arg-type]

        monkeypatch.setattr(sessions_module._Session, "open", staticmethod(counted))


def _settings(tmp_path: Path, **env: str) -> Settings:
    return api.resolve_settings({"data_dir": str(tmp_path / "data"), "provider": "hash"}, env)


def test_a_warm_session_answers_as_a_fresh_one_and_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path)
    api.ingest(
        [api.source_for(write_corpus(tmp_path / "notes", 7, 30))], settings, embedder=HashEmbedder()
    )
    api.ingest(
        [api.source_for(write_corpus(tmp_path / "docs", 8, 20), kind="docs")],
        settings,
        embedder=HashEmbedder(),
    )
    requests = _requests(settings)
    fresh = [_json(api.retrieve(r, settings, embedder=HashEmbedder())) for r in requests]
    opened = Opened(monkeypatch)
    warm = api.WarmSessions(settings, HashEmbedder)
    try:
        for _ in range(2):
            assert [_json(api.retrieve(r, settings, sessions=warm)) for r in requests] == fresh
    finally:
        warm.close()
    assert opened.count == 1  # 120 searches, one session: nothing changed in between


def test_the_search_after_a_write_sees_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ingest that adds a file, one that removes it, and a source removed: each commits
    the state, so the next warm search opens a new session and answers as a fresh one."""
    settings = _settings(tmp_path, CHROMASYNC_COLLECTIONS="shared")
    notes = write_corpus(tmp_path / "notes", 9, 20)
    api.ingest([api.source_for(notes)], settings, embedder=HashEmbedder())
    opened = Opened(monkeypatch)
    warm = api.WarmSessions(settings, HashEmbedder)
    request = api.SearchRequest("quokka zanzibar", mode="keyword", k=5)

    def warm_and_fresh() -> tuple[list[str], str]:
        result = api.retrieve(request, settings, sessions=warm)
        again = api.retrieve(request, settings, embedder=HashEmbedder())
        assert _json(result) == _json(again)
        return [h.path for h in result.hits], _json(result)

    try:
        assert warm_and_fresh()[0] == []
        (notes / "new.md").write_text("# New\n\nA quokka met a zanzibar ferry.\n", encoding="utf-8")
        api.ingest([api.source_for(notes)], settings, embedder=HashEmbedder())
        assert warm_and_fresh()[0] == ["new.md"]
        for mode in ("hybrid", "dense"):
            hybrid = api.SearchRequest("quokka zanzibar", mode=mode, k=50)
            warm_hits = api.retrieve(hybrid, settings, sessions=warm).hits
            assert "new.md" in [h.path for h in warm_hits] or mode == "dense"
            fresh = api.retrieve(hybrid, settings, embedder=HashEmbedder())
            assert _json(api.retrieve(hybrid, settings, sessions=warm)) == _json(fresh)
        (notes / "new.md").unlink()
        api.ingest([api.source_for(notes)], settings, embedder=HashEmbedder())
        assert warm_and_fresh()[0] == []
        espresso = api.SearchRequest("espresso", k=3)
        assert api.retrieve(espresso, settings, sessions=warm).hits
        opened_before = opened.count
        api.remove_source(settings, "notes")
        # the last source gone, its emptied collection is dropped (issue 29): the store is
        # as before the first ingest, and the warm session sees that as a fresh one would
        with pytest.raises(NotFound, match="run `chromasync ingest` first"):
            api.retrieve(espresso, settings, sessions=warm)
        assert opened.count == opened_before + 1
    finally:
        warm.close()


def test_searches_at_once_each_get_a_session(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    api.ingest(
        [api.source_for(write_corpus(tmp_path / "n", 10, 25))], settings, embedder=HashEmbedder()
    )
    requests = _requests(settings)[:24]
    fresh = {
        r.query + r.mode + str(r.k): _json(api.retrieve(r, settings, embedder=HashEmbedder()))
        for r in requests
    }
    warm = api.WarmSessions(settings, HashEmbedder, keep=2)
    failures: list[str] = []

    def run(part: list[api.SearchRequest]) -> None:
        for r in part:
            got = _json(api.retrieve(r, settings, sessions=warm))
            if got != fresh[r.query + r.mode + str(r.k)]:
                failures.append(r.query)

    try:
        threads = [threading.Thread(target=run, args=(requests[i::4] * 3,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(t.is_alive() for t in threads)
        assert failures == []
        assert len(warm._idle) <= 2  # no more than `keep` stay open
    finally:
        warm.close()
    assert warm._idle == []


def test_one_collection_lists_equal_the_joined_statement(tmp_path: Path) -> None:
    """Where the index holds one collection only and nothing filters, the keyword list is
    ranked in FTS5 alone; it must equal the statement that joins every match to its row
    (forced here by a condition that is always true), ids, order and scores; with two
    collections in the index the joined statement runs, and no other collection leaks."""
    shared = _settings(tmp_path / "one", CHROMASYNC_COLLECTIONS="shared")
    api.ingest(
        [api.source_for(write_corpus(tmp_path / "a", 11, 40))], shared, embedder=HashEmbedder()
    )
    two = _settings(tmp_path / "two")
    api.ingest([api.source_for(write_corpus(tmp_path / "b", 12, 30))], two, embedder=HashEmbedder())
    api.ingest(
        [api.source_for(write_corpus(tmp_path / "c", 13, 30), kind="docs")],
        two,
        embedder=HashEmbedder(),
    )
    always = Condition("1 = 1")
    for settings, sole in ((shared, True), (two, False)):
        with open_retriever(settings, HashEmbedder()) as retriever:
            index = retriever.local_index
            assert isinstance(index, KeywordIndex)
            names = api.search_collections(settings)
            statements: list[str] = []
            index.db.set_trace_callback(statements.append)
            compared = 0
            for name in names:
                assert index.holds_only(name) is sole
                for query in queries(40, seed=31):
                    for n in (1, 7, 200):
                        for fields in (False, True):
                            statements.clear()
                            quick = index.search(name, query, n, fields=fields)
                            ranked_alone = any(
                                "ORDER BY bm25_score, rowid LIMIT" in s for s in statements
                            )
                            assert ranked_alone is sole
                            joined = index.search(name, query, n, always, fields=fields)
                            assert quick == joined
                            assert all(h.collection == name for h in quick)
                            compared += bool(quick)
            assert compared > 200
