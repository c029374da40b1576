"""`chromasync mcp` over stdio, driven by the official SDK's client (a real subprocess)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.metakeys import RECORD_FIELDS
from chromasync.owner.locate import read_owner

from ..conftest import REPO, invoke_cli, set_mtime


def _params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "chromasync", "mcp"],
        env={**env, "PYTHONPATH": str(REPO / "src")},
    )


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


def _error(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


def test_mcp_tools_over_stdio(
    notes: Path,
    settings: Settings,
    embedder: HashEmbedder,
    cli_env: dict[str, str],
    data_dir: Path,
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    outside = notes.parent / "outside.md"
    outside.write_text("# Outside\n\nMCP-OUTSIDE-CANARY\n")
    env = {**cli_env, "HOME": os.environ.get("HOME", "/tmp")}

    async def session() -> None:
        async with (
            stdio_client(_params(env)) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {
                "search",
                "list_sources",
                "get_document",
                "get",
                "multi_get",
                "reindex",
            } <= tools

            found = _data(await client.call_tool("search", {"query": "espresso grinder"}))
            hit = found["hits"][0]
            assert hit["citation"] == f"{hit['path']}:{hit['start_line']}-{hit['end_line']}"
            assert not RECORD_FIELDS & set(hit["metadata"]), hit  # stored, not shown
            filtered = _data(
                await client.call_tool(
                    "search", {"query": "notes", "k": 20, "tags": ["baking"], "after": "2025-01-01"}
                )
            )
            assert {h["path"] for h in filtered["hits"]} == {"guides/sourdough.md"}
            same = _data(
                await client.call_tool(
                    "search",
                    {
                        "query": "notes",
                        "k": 20,
                        "where_json": {"path": "guides/sourdough.md"},
                        "matches": ["path=sourdough"],
                        "per_doc": True,
                    },
                )
            )
            assert [h["path"] for h in same["hits"]] == ["guides/sourdough.md"]
            assert _error(await client.call_tool("search", {"query": "x", "where": ["nokey"]}))

            sources = _data(await client.call_tool("list_sources", {}))["sources"]
            assert [s["label"] for s in sources] == ["notes"] and sources[0]["files"] == 5

            # small sections merge: the journal page's two top-level sections stay apart
            journal = "journal/2026-05-01.md"
            doc = _data(await client.call_tool("get_document", {"path": journal}))
            assert doc["path"] == journal and len(doc["chunks"]) >= 2
            for bad in ("../outside.md", "/etc/passwd", "%2e%2e/outside.md", "nope.md"):
                text = _error(await client.call_tool("get_document", {"path": bad}))
                assert "CANARY" not in text
                assert "SourceError: " in text or "NotFound: " in text, text
            got = _data(await client.call_tool("get", {"path": f"{journal}:1-2"}))
            assert (got["path"], got["start_line"], got["end_line"]) == (journal, 1, 2)
            many = _data(await client.call_tool("multi_get", {"glob": "journal/*"}))
            assert [f["path"] for f in many["files"]] == [journal] and many["left_out"] == 0
            for bad in ("../outside.md", "/etc/passwd", "%2e%2e/outside.md", "a\x00.md"):
                assert "SourceError: " in _error(await client.call_tool("get", {"path": bad}))
                assert "SourceError: " in _error(await client.call_tool("multi_get", {"glob": bad}))

            # while this server runs it owns the data dir; the CLI goes through it
            owner = read_owner(data_dir)
            assert owner is not None and owner.role == "mcp"
            (notes / "ideas.txt").write_text("Plant zanzibarberries by the gate.\n")
            set_mtime(notes / "ideas.txt", 1_700_000_000)
            cli = invoke_cli(["ingest", str(notes), "--json"], env=cli_env)
            assert cli.returncode == 0, cli.stderr
            assert "reindexing through it" in cli.stderr
            assert json.loads(cli.stdout)[0]["files_updated"] == 1
            found = _data(await client.call_tool("search", {"query": "zanzibarberries", "k": 1}))
            assert found["hits"][0]["path"] == "ideas.txt"

            (notes / "ideas.txt").write_text("Plant quincefruit by the gate.\n")
            set_mtime(notes / "ideas.txt", 1_700_000_100)
            summary = _data(await client.call_tool("reindex", {"source": "notes"}))
            assert summary["status"] == "done"
            assert summary["summaries"][0]["files_updated"] == 1
            assert "NotFound" in _error(await client.call_tool("reindex", {"source": "zzz"}))
            assert _error(await client.call_tool("search", {"query": ""}))

    anyio.run(session)
    # the server has exited: the data dir is free again
    assert read_owner(data_dir) is None
    cli = invoke_cli(["search", "quincefruit", "--json", "--k", "1"], env=cli_env)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["hits"][0]["path"] == "ideas.txt"


def test_mcp_ask_and_the_cli_ask_through_it(
    notes: Path,
    settings: Settings,
    embedder: HashEmbedder,
    cli_env: dict[str, str],
    data_dir: Path,
) -> None:
    from tests.chat_server import ChatServer, Reply

    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    key = "sk-mcp-ask-0f3e9a"
    with ChatServer(api_key=key) as chat:
        chat.default = Reply("Back off two steps from the zero point [1][5].")
        env = {
            **cli_env,
            "HOME": os.environ.get("HOME", "/tmp"),
            "CHROMASYNC_LLM_URL": chat.url,
            "CHROMASYNC_LLM_MODEL": "test-chat",
            "CHROMASYNC_LLM_API_KEY": key,
        }

        async def session() -> None:
            async with (
                stdio_client(_params(env)) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                tools = {t.name for t in (await client.list_tools()).tools}
                assert "ask" in tools
                question = "How do I calibrate the grinder burrs?"
                data = _data(await client.call_tool("ask", {"question": question, "k": 3}))
                assert data["mode"] == "llm" and data["removed_citations"] == 1
                assert data["answer"] == "Back off two steps from the zero point [1]."
                assert data["citations"][0]["path"] == "guides/install.md"
                none = _data(
                    await client.call_tool("ask", {"question": question, "tags": ["nope"]})
                )
                assert none["answer"] == "No sources matched these filters."
                assert _error(await client.call_tool("ask", {"question": "x" * 5000}))

                # while MCP owns the data dir, `chromasync ask` searches through it
                assert read_owner(data_dir) is not None
                cli = invoke_cli(["ask", question, "--k", "3"], env=env)
                assert cli.returncode == 0, cli.stderr
                assert cli.stdout.startswith("Back off two steps from the zero point [1][5].")
                assert "checked answer:" in cli.stdout and "[1] guides/install.md:" in cli.stdout
                assert key not in cli.stdout + cli.stderr

        anyio.run(session)
