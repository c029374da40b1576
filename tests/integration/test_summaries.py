"""Summaries per group (`summarize`): extractive, or by a real local chat server, cached by
each group's chunk hashes (requests counted)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.datadir import SUMMARIES_FILE
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import ConfigError
from tests.chat_server import ChatServer, Reply

from ..conftest import invoke_cli

NOTES = {
    "coffee/a.md": "# Espresso\n\nThe espresso grinder needs its burrs calibrated daily.\n\n"
    "A portafilter tamp decides the crema of the shot.\n",
    "coffee/b.md": "# Pour over\n\nBloom the ground coffee for thirty seconds.\n\n"
    "The grinder setting for pour over is coarser than for espresso.\n",
    "cycling/a.md": "# Chains\n\nA derailleur shifts the chain between the sprockets.\n\n"
    "Wax the chain every few hundred kilometres of riding.\n",
    "cycling/b.md": "# Winter\n\nStudded tyres grip on icy roads.\n\n"
    "Lower the saddle a little when the roads are icy.\n",
    "garden/a.md": "# Tomatoes\n\nTomato seedlings want warm soil and steady watering.\n\n"
    "Mulch keeps the soil moist in July.\n",
}


@pytest.fixture
def corpus(tmp_path: Path, embedder: HashEmbedder) -> tuple[Path, Settings]:
    root = tmp_path / "notes"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    settings = api.resolve_settings({"data_dir": str(tmp_path / "data"), "provider": "hash"}, {})
    api.ingest([api.source_for(root)], settings, embedder=embedder)
    return root, settings


def test_extractive_summaries_with_distinctive_terms(corpus: tuple[Path, Settings]) -> None:
    _, settings = corpus
    report = api.summaries(settings, group_by="path:1")
    by_group = {g.group: g for g in report.groups}
    assert list(by_group) == ["coffee", "cycling", "garden"]  # biggest first, then by name
    coffee = by_group["coffee"]
    assert coffee.mode == "extractive" and not coffee.cached
    assert (coffee.files, coffee.chunks) == (2, 2)
    assert "grinder" in coffee.terms[:3] and "espresso" in coffee.terms
    assert not {"chain", "soil"} & set(coffee.terms)
    assert "grinder" in coffee.summary and "soil" not in coffee.summary
    assert "chain" in by_group["cycling"].summary
    assert report.written == 3 and report.model_calls == 0
    cache = settings.data_dir / SUMMARIES_FILE
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    again = api.summaries(settings, group_by="path:1")
    assert again.written == 0 and all(g.cached for g in again.groups)
    assert [g.summary for g in again.groups] == [g.summary for g in report.groups]
    with pytest.raises(ConfigError):
        api.summaries(settings, group_by="path:0")


def test_model_summaries_are_written_only_for_changed_groups(
    corpus: tuple[Path, Settings], embedder: HashEmbedder
) -> None:
    root, plain = corpus
    with ChatServer() as server:
        settings = api.resolve_settings(
            {
                "data_dir": str(plain.data_dir),
                "provider": "hash",
                "llm_url": server.url,
                "llm_model": "test-chat",
            },
            {},
        )
        server.default = Reply("A group about things [1].")
        first = api.summaries(settings, group_by="path:1")
        assert len(server.requests) == 3 and first.model_calls == 3
        assert {g.mode for g in first.groups} == {"llm:test-chat"}
        assert all(g.summary == "A group about things [1]." for g in first.groups)
        prompts = [json.dumps(r) for r in server.requests]
        assert sum("Tomato seedlings" in p for p in prompts) == 1

        unchanged = api.summaries(settings, group_by="path:1")
        assert len(server.requests) == 3 and unchanged.model_calls == 0
        assert all(g.cached for g in unchanged.groups)

        (root / "garden" / "a.md").write_text("# Tomatoes\n\nPinch out the side shoots.\n")
        api.ingest([api.source_for(root)], settings, embedder=embedder)
        server.default = Reply("Tomato care [1].")
        changed = api.summaries(settings, group_by="path:1")
        assert len(server.requests) == 4 and changed.model_calls == 1
        assert "side shoots" in json.dumps(server.requests[-1])
        by_group = {g.group: g for g in changed.groups}
        assert by_group["garden"].summary == "Tomato care [1]." and not by_group["garden"].cached
        assert by_group["coffee"].cached and by_group["cycling"].cached

        # another field has its own entries; a vanished group is dropped from the cache
        (root / "garden" / "a.md").unlink()
        api.ingest([api.source_for(root)], settings, embedder=embedder)
        after = api.summaries(settings, group_by="path:1")
        assert [g.group for g in after.groups] == ["coffee", "cycling"]
        assert len(server.requests) == 4
        stored = json.loads((settings.data_dir / SUMMARIES_FILE).read_text())
        assert set(stored["groups"]["path:1"]) == {"coffee", "cycling"}
    # without the model, summaries are extractive again (a different key): all written
    extractive = api.summaries(plain, group_by="path:1")
    assert extractive.written == 2 and {g.mode for g in extractive.groups} == {"extractive"}


@pytest.mark.parametrize("junk", ["", None, "   ", "}}{{ ;; ## ==", "null", "[1] [2]"])
def test_an_empty_or_junk_model_reply_is_never_cached(
    corpus: tuple[Path, Settings], junk: str | None
) -> None:
    _, plain = corpus
    with ChatServer() as server:
        settings = api.resolve_settings(
            {**_llm(plain, server), "data_dir": str(plain.data_dir)}, {}
        )
        server.default = Reply(junk)
        first = api.summaries(settings, group_by="path:1")
        assert first.model_calls == 3 and first.rejected == 3 and first.written == 0
        assert all(g.mode == "extractive" and not g.cached and g.summary for g in first.groups)
        assert first.as_json()["cached"] == 0
        server.default = Reply("A group about coffee and bikes [1][2].")
        second = api.summaries(settings, group_by="path:1")
        assert second.model_calls == 3 and second.rejected == 0  # asked again
        assert all(g.mode == "llm:test-chat" for g in second.groups)


def test_a_citation_naming_no_source_is_removed_from_a_summary(
    corpus: tuple[Path, Settings],
) -> None:
    _, plain = corpus
    with ChatServer() as server:
        settings = api.resolve_settings(
            {**_llm(plain, server), "data_dir": str(plain.data_dir)}, {}
        )
        server.default = Reply("Notes on the grinder [1][99]. And more [0, 2].")
        report = api.summaries(settings, group_by="path:1")
        coffee = {g.group: g for g in report.groups}["coffee"]
        assert coffee.summary == "Notes on the grinder [1]. And more [2]."
        again = api.summaries(settings, group_by="path:1")
        cached = {g.group: g for g in again.groups}["coffee"]
        assert cached.cached and cached.summary == coffee.summary


def _llm(settings: Settings, server: ChatServer) -> dict[str, str]:
    return {"provider": "hash", "llm_url": server.url, "llm_model": "test-chat"}


def test_cli_summarize(corpus: tuple[Path, Settings]) -> None:
    _, settings = corpus
    env = {"CHROMASYNC_DATA_DIR": str(settings.data_dir), "CHROMASYNC_EMBEDDING_PROVIDER": "hash"}
    done = invoke_cli(["summarize", "--group-by", "path:1", "--json"], env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [g["group"] for g in data["groups"]] == ["coffee", "cycling", "garden"]
    assert data["written"] == 3
    text = invoke_cli(["summarize", "--group-by", "path:1", "--limit", "1"], env)
    assert text.returncode == 0, text.stderr
    assert "coffee" in text.stdout and "garden" not in text.stdout
    assert "2 smaller group(s) left out" in text.stdout


def test_rest_and_mcp_summaries(corpus: tuple[Path, Settings], embedder: HashEmbedder) -> None:
    import os
    import sys

    import anyio
    from fastapi.testclient import TestClient
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from chromasync.owner.service import Service
    from chromasync.rest import create_app

    from ..conftest import REPO

    _, settings = corpus
    with (
        Service(settings, "serve", embedder=embedder) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as client,
    ):
        body = client.get("/summaries", params={"group_by": "path:1"}).json()
        assert [g["group"] for g in body["groups"]] == ["coffee", "cycling", "garden"]
        assert body["written"] == 3
        assert client.get("/summaries", params={"group_by": "path:1"}).json()["cached"] == 3
        assert client.get("/summaries", params={"group_by": "path:0"}).status_code == 400
        assert client.get("/summaries").status_code == 422

    env = {
        **os.environ,
        "CHROMASYNC_DATA_DIR": str(settings.data_dir),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "PYTHONPATH": str(REPO / "src"),
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "chromasync", "mcp"], env=env
    )
    out: dict[str, object] = {}

    async def session() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as mcp_client,
        ):
            await mcp_client.initialize()
            result = await mcp_client.call_tool("summaries", {"group_by": "source", "limit": 5})
            assert not result.is_error, result.content
            out["data"] = result.structured_content or json.loads(result.content[0].text)

    anyio.run(session)
    data = out["data"]
    assert isinstance(data, dict)
    assert [g["group"] for g in data["groups"]] == ["notes"]
    assert data["groups"][0]["files"] == 5


def test_summaries_through_an_owner_follow_the_callers_chat_settings(
    corpus: tuple[Path, Settings], embedder: HashEmbedder
) -> None:
    """The caller's chat model writes through an owner that has none (issue 40: extractive,
    `model_calls: 0`), and an owner's model writes nothing for a caller without one; the
    key never leaves the caller."""
    from fastapi.testclient import TestClient

    from chromasync.owner.client import OwnerClient
    from chromasync.owner.queries import SummariesQuery
    from chromasync.owner.service import Service
    from chromasync.rest import create_app

    _, plain = corpus
    with ChatServer(api_key="sk-caller-only") as server:
        server.default = Reply("A group about things [1].")
        caller = api.resolve_settings(
            {**_llm(plain, server), "data_dir": str(plain.data_dir)},
            {"CHROMASYNC_LLM_API_KEY": "sk-caller-only"},
        )
        with (
            Service(plain, "serve", embedder=embedder) as service,
            TestClient(create_app(service), base_url="http://127.0.0.1") as http,
        ):
            assert service.info is not None
            sent: list[bytes] = []
            http.event_hooks["request"] = [lambda request: sent.append(request.read())]
            owner = OwnerClient(service.info, http=http, settings=caller)
            first = owner.summaries(SummariesQuery("path:1"))
            assert first.model_calls == 3 and len(server.requests) == 3
            assert {g.mode for g in first.groups} == {"llm:test-chat"}
            assert all(g.summary == "A group about things [1]." for g in first.groups)
            assert server.auth_headers == ["Bearer sk-caller-only"] * 3
            assert sent and not any(b"sk-caller-only" in body for body in sent)
            again = owner.summaries(SummariesQuery("path:1"))  # cached where it was written
            assert again.model_calls == 0 and all(g.cached for g in again.groups)
            assert "draft" not in json.dumps(again.as_json())
            # the owner's settings name a model, the caller's none: extractive, as alone
            service.settings = caller
            extractive = OwnerClient(service.info, http=http, settings=plain)
            report = extractive.summaries(SummariesQuery("path:1"))
            assert report.model_calls == 0 and len(server.requests) == 3
            assert {g.mode for g in report.groups} == {"extractive"}
