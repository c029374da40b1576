"""Reverse links end to end: stored per chunk at ingest, found by `links`, `--links-to`,
REST `/links`; a changed link and the upgrade of an index without links embed nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.datadir import CACHE_FILE
from chromasync.embed.hashing import HashEmbedder
from chromasync.metakeys import CHUNK_HASH_KEY

from ..conftest import age_tree, invoke_cli, set_mtime

A = """---
title: A
exact_url: https://WEF.org/jobs-2025/?utm_source=x
---
# A

See [the report](https://www.weforum.org/reports/future-of-jobs-2025/) and [[b]].
Also [broken](missing.md) and ![pic](img.png).
"""
B = "# B\n\nBack to [[a|the A note]] and https://www.weforum.org/reports/other#x\n"
C = "# C\n\nNothing to see here, no links at all.\n"


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    root = tmp_path / "linked"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text(A)
    (root / "sub" / "b.md").write_text(B.replace("[[a|", "[[../a|"))
    (root / "c.md").write_text(C)
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    age_tree(root)
    return root


def _metadata(settings: Settings) -> dict[str, dict[str, object]]:
    collection = api.open_store(settings).collection(settings.collection, create=False)
    return {str(r.metadata["path"]): dict(r.metadata) for r in collection.iter_records()}


def test_links_stored_and_found(linked: Path, settings: Settings, embedder: HashEmbedder) -> None:
    api.ingest([api.source_for(linked, "n")], settings, embedder=embedder)
    meta = _metadata(settings)
    assert meta["a.md"]["links"] == [
        "https://wef.org/jobs-2025",
        "https://www.weforum.org/reports/future-of-jobs-2025",
        "img.png",
        "missing.md",
        "note:b",
    ]
    assert meta["sub/b.md"]["links"] == ["a", "https://www.weforum.org/reports/other"]
    assert "links" not in meta["c.md"]

    report = api.links("https://www.weforum.org/reports", settings).as_json()
    found = [
        (f["path"], lk["line"], lk["text"])
        for f in report["files"]
        for c in f["chunks"]
        for lk in c["links"]
    ]
    assert found == [
        ("a.md", 7, "the report"),
        ("sub/b.md", 3, "https://www.weforum.org/reports/other#x"),
    ]
    by_path = api.links("a.md", settings).as_json()
    assert [f["path"] for f in by_path["files"]] == ["sub/b.md"]
    by_field = api.links("https://wef.org/jobs-2025", settings).as_json()
    [chunk] = by_field["files"][0]["chunks"]
    assert chunk["links"] == [
        {
            "target": "https://wef.org/jobs-2025",
            "text": "exact_url",
            "line": 0,
            "kind": "front-matter",
        }
    ]
    assert api.links("https://nowhere.example", settings).chunks == ()

    outgoing = api.links(None, settings, from_path="a.md", source="n").as_json()
    assert outgoing["missing"] == ["missing.md"]  # img.png is on disk, b is indexed
    assert {lk["target"] for lk in outgoing["links"]} >= {"note:b", "img.png"}


def test_search_links_to_combines_with_filters(
    linked: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    api.ingest([api.source_for(linked, "n")], settings, embedder=embedder)

    def paths(query: str = "note", **given: object) -> list[str]:
        args = api.SearchArgs.of(query, k=10, **given)
        hits = api.retrieve(api.search_request(args, settings), settings, embedder=embedder).hits
        return sorted(h.path for h in hits)

    assert paths() == ["a.md", "c.md", "sub/b.md"]
    assert paths(links_to=["https://www.weforum.org/reports"]) == ["a.md", "sub/b.md"]
    assert paths(links_to=["https://www.weforum.org/reports"], paths=["sub/*"]) == ["sub/b.md"]
    assert paths(links_to=["https://www.weforum.org/reports", "a.md"]) == ["sub/b.md"]
    assert paths(links_to=["https://nowhere.example"]) == []
    for mode in ("dense", "keyword"):
        assert paths("the report", links_to=["b"], mode=mode) == ["a.md"]


def test_changed_link_and_upgrade_embed_nothing(
    linked: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chromasync.plan import triage
    from chromasync.sync import ingest as ingest_module

    # an index written before links existed (chunking version 2, no `links`)
    with monkeypatch.context() as old:
        old.setattr(triage, "CHUNKING_VERSION", 2)
        old.setattr(ingest_module, "CHUNKING_VERSION", 2)
        old.setattr(triage, "extract_links", lambda *a: [])
        old.setattr(triage, "front_matter_links", lambda *a: [])
        api.ingest([api.source_for(linked, "n")], settings, embedder=HashEmbedder())
    before = _metadata(settings)
    assert all("links" not in m for m in before.values())
    (settings.data_dir / CACHE_FILE).unlink()  # vectors must come from the collection

    counting = HashEmbedder()
    [upgraded] = api.ingest([api.source_for(linked, "n")], settings, embedder=counting)
    assert counting.calls == 0 and upgraded.chunks_embedded == 0
    after = _metadata(settings)
    assert after["sub/b.md"]["links"] == ["a", "https://www.weforum.org/reports/other"]
    assert {p: m[CHUNK_HASH_KEY] for p, m in after.items()} == {
        p: m[CHUNK_HASH_KEY] for p, m in before.items()
    }

    # a changed front-matter link is a metadata rewrite
    (linked / "a.md").write_text(A.replace("WEF.org/jobs-2025", "WEF.org/jobs-2026"))
    set_mtime(linked / "a.md", 1_700_000_000)
    [edited] = api.ingest([api.source_for(linked, "n")], settings, embedder=counting)
    assert counting.calls == 0 and edited.chunks_embedded == 0 and edited.files_updated == 1
    assert "https://wef.org/jobs-2026" in _metadata(settings)["a.md"]["links"]  # type: ignore[operator]
    assert api.links("https://wef.org/jobs-2025", settings).chunks == ()


def test_cli_links(linked: Path, cli_env: dict[str, str]) -> None:
    assert invoke_cli(["ingest", str(linked), "--source", "n", "-q"], cli_env).returncode == 0
    done = invoke_cli(["links", "https://www.weforum.org/reports", "--json"], cli_env)
    assert done.returncode == 0, done.stderr
    assert [f["path"] for f in json.loads(done.stdout)["files"]] == ["a.md", "sub/b.md"]
    text = invoke_cli(["links", "--from", str(linked / "a.md")], cli_env)
    assert text.returncode == 0, text.stderr
    assert "missing.md" in text.stdout and "1 missing internal target" in text.stdout
    both = invoke_cli(["links", "x", "--from", "a.md"], cli_env)
    assert both.returncode == 2 and "one of them" in both.stderr
    hits = invoke_cli(["search", "note", "--links-to", "b", "--json"], cli_env)
    assert [h["path"] for h in json.loads(hits.stdout)["hits"]] == ["a.md"]


def test_rest_links(linked: Path, settings: Settings, embedder: HashEmbedder) -> None:
    from fastapi.testclient import TestClient

    from chromasync.owner.service import Service
    from chromasync.rest import create_app

    api.ingest([api.source_for(linked, "n")], settings, embedder=embedder)
    with (
        Service(settings, "serve", embedder=embedder, allow_roots=[linked]) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as client,
    ):
        body = client.get("/links", params={"target": "a.md"}).json()
        assert [f["path"] for f in body["files"]] == ["sub/b.md"]
        found = client.get("/links", params={"from": "a.md", "source": "n"})
        assert found.status_code == 200 and found.json()["missing"] == ["missing.md"]
        for bad in ("/etc/passwd", "../a.md", "sub/../../x"):
            refused = client.get("/links", params={"from": bad})
            assert refused.status_code == 400, bad
        assert client.get("/links", params={"from": "nope.md"}).status_code == 404
        assert client.get("/links").status_code == 400
        hits = client.get("/search", params={"q": "the report", "links_to": "b"}).json()["hits"]
        assert [h["path"] for h in hits] == ["a.md"]


def test_mcp_links_tool(
    linked: Path, settings: Settings, embedder: HashEmbedder, cli_env: dict[str, str]
) -> None:
    """The MCP tool answers as the owner does (it once failed on every call)."""
    import os
    import sys

    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from ..conftest import REPO

    api.ingest([api.source_for(linked, "n")], settings, embedder=embedder)
    env = {**os.environ, **cli_env, "PYTHONPATH": str(REPO / "src")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "chromasync", "mcp"], env=env
    )
    out: dict[str, object] = {}

    async def session() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            found = await client.call_tool("links", {"target": "a.md"})
            assert not found.is_error, found.content
            out["to"] = found.structured_content or json.loads(found.content[0].text)
            from_ = await client.call_tool("links", {"from_path": "a.md", "source": "n"})
            assert not from_.is_error, from_.content
            out["from"] = from_.structured_content or json.loads(from_.content[0].text)

    anyio.run(session)
    to, from_ = out["to"], out["from"]
    assert isinstance(to, dict) and [f["path"] for f in to["files"]] == ["sub/b.md"]
    assert isinstance(from_, dict) and from_["missing"] == ["missing.md"]
