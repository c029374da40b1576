"""`chromasync mcp --http`: a real server subprocess on a free loopback port, driven by the
official SDK's streamable-HTTP client, and its Host, Origin, token and body checks over raw
HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from click.testing import CliRunner
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from chromasync import api
from chromasync.cli import service as cli_service
from chromasync.cli.main import main
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.mcp import DEFAULT_HTTP_PORT, MAX_HTTP_BODY
from chromasync.owner.locate import read_owner

from ..conftest import REPO, invoke_cli
from ..servers import MCP_INITIALIZE, free_port

INITIALIZE = MCP_INITIALIZE
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class MCPHTTPServer:
    """`python -m chromasync mcp --http --port PORT [ARGS]` with this checkout's sources."""

    def __init__(self, env: dict[str, str], log: Path, args: Sequence[str] = ()) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = log
        full_env = {**os.environ, **env, "PYTHONPATH": str(REPO / "src")}
        command = [sys.executable, "-m", "chromasync", "mcp", "--http", "--port", str(self.port)]
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [*command, *args],
                stdout=subprocess.DEVNULL,
                stderr=out,
                env=full_env,
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mcp --http exited: {log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("mcp --http did not listen within 120 s")

    def post(self, body: Any = INITIALIZE, headers: dict[str, str] | None = None) -> httpx.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx.post(
            self.url, content=content, headers={**MCP_HEADERS, **(headers or {})}, timeout=30
        )

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return int(self.proc.returncode)


@contextmanager
def mcp_http(env: dict[str, str], log: Path, args: Sequence[str] = ()) -> Iterator[MCPHTTPServer]:
    server = MCPHTTPServer(env, log, args)
    try:
        yield server
    finally:
        server.stop()


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


def test_mcp_http_tools_and_checks(
    notes: Path,
    settings: Settings,
    embedder: HashEmbedder,
    cli_env: dict[str, str],
    data_dir: Path,
    tmp_path: Path,
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    env = {**cli_env, "HOME": os.environ.get("HOME", "/tmp")}
    env.pop("CHROMASYNC_API_TOKEN", None)
    log = tmp_path / "mcp-http.log"
    seen: dict[str, str] = {}
    # no token here (this test is about the other checks; test_service_auth: the token)
    with mcp_http(env, log, ["--allow-origin", "https://App.example/", "--no-auth"]) as server:
        listening = f"chromasync mcp: {server.url} (streamable HTTP); no token required (--no-auth)"
        assert _wait_for_line(log, "chromasync mcp:") == [listening]
        # like stdio mode, the server becomes the owner at its first tool call
        assert read_owner(data_dir) is None

        async def session() -> None:
            async with (
                streamable_http_client(server.url) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                tools = {t.name for t in (await client.list_tools()).tools}
                assert {
                    "search",
                    "ask",
                    "list_sources",
                    "get_document",
                    "get",
                    "multi_get",
                    "links",
                    "suggest",
                    "summaries",
                    "reindex",
                } <= tools
                found = _data(await client.call_tool("search", {"query": "espresso grinder"}))
                hit = found["hits"][0]
                assert hit["citation"] == f"{hit['path']}:{hit['start_line']}-{hit['end_line']}"
                assert hit["source"] == "notes"
                seen["path"] = hit["path"]
                tagged = _data(
                    await client.call_tool(
                        "search", {"query": "notes", "k": 20, "tags": ["baking"]}
                    )
                )
                assert {h["path"] for h in tagged["hits"]} == {"guides/sourdough.md"}
                sources = _data(await client.call_tool("list_sources", {}))["sources"]
                assert [s["label"] for s in sources] == ["notes"]
                bad = await client.call_tool("reindex", {"source": "zzz"})
                assert bad.is_error and "NotFound" in bad.content[0].text

        anyio.run(session)
        owner = read_owner(data_dir)
        assert owner is not None and owner.role == "mcp"
        # the CLI reaches the index through it meanwhile
        cli = invoke_cli(["search", "espresso grinder", "--json", "--k", "1"], env=env)
        assert cli.returncode == 0, cli.stderr
        assert json.loads(cli.stdout)["hits"][0]["path"] == seen["path"]

        # Origin: absent, the service's own (a loopback name on its port) or an allowed one
        # passes; anything else is 403, a loopback page on another port too
        assert server.post().status_code == 200
        for host in ("localhost", "127.0.0.1", "[::1]"):
            origin = f"http://{host}:{server.port}"
            assert server.post(headers={"Origin": origin}).status_code == 200, origin
        assert server.post(headers={"Origin": "https://app.example"}).status_code == 200
        for origin in (
            "http://localhost:5173",
            "http://127.0.0.1",
            "http://[::1]:8080",
            f"https://127.0.0.1:{server.port}",
            "http://evil.example",
            f"http://evil.example:{server.port}",
            "http://127.0.0.1.evil.example",
            "https://app.example:444",
            "null",
        ):
            refused = server.post(headers={"Origin": origin})
            assert refused.status_code == 403, (origin, refused.text)
            assert "mcp-session-id" not in refused.headers
        # no Origin, but a browser says another site (a port is the same site) sent it
        for site in ("cross-site", "same-site"):
            assert server.post(headers={"Sec-Fetch-Site": site}).status_code == 403, site
        assert server.post(headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200
        # Host: only the bound host and the loopback names (DNS rebinding)
        assert server.post(headers={"Host": f"localhost:{server.port}"}).status_code == 200
        wrong_host = server.post(headers={"Host": f"evil.example:{server.port}"})
        assert 400 <= wrong_host.status_code < 500 and "mcp-session-id" not in wrong_host.headers
        # bounded body, and only the one endpoint
        big = {**INITIALIZE, "padding": "x" * MAX_HTTP_BODY}
        assert server.post(big).status_code == 413
        assert httpx.get(f"http://127.0.0.1:{server.port}/", timeout=10).status_code == 404

        # SIGTERM: a clean stop that frees the data dir
        assert server.stop() == 0
    assert read_owner(data_dir) is None
    assert "chromasync mcp: stopped" in log.read_text()


def _wait_for_line(log: Path, prefix: str, timeout: float = 30) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = [line for line in log.read_text().splitlines() if line.startswith(prefix)]
        if lines:
            return lines
        time.sleep(0.1)
    return []


def test_mcp_http_token(
    notes: Path,
    settings: Settings,
    embedder: HashEmbedder,
    cli_env: dict[str, str],
    tmp_path: Path,
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    token = "mcp-http-token-5c1d"
    env = {**cli_env, "HOME": os.environ.get("HOME", "/tmp"), "CHROMASYNC_API_TOKEN": token}
    with mcp_http(env, tmp_path / "mcp-http.log") as server:
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": f"Basic {token}"},
            {"Authorization": f"Bearer {token}x"},
        ):
            refused = server.post(headers=headers)
            assert refused.status_code == 401, headers
            assert refused.headers["www-authenticate"] == "Bearer"
            assert "mcp-session-id" not in refused.headers
        query = httpx.post(
            f"{server.url}?token={token}",
            content=json.dumps(INITIALIZE),
            headers=MCP_HEADERS,
            timeout=30,
        )
        assert query.status_code == 401
        assert server.post(headers={"Authorization": f"bearer {token}"}).status_code == 200

        async def session() -> None:
            headers = {"Authorization": f"Bearer {token}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as http,
                streamable_http_client(server.url, http_client=http) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                found = _data(await client.call_tool("search", {"query": "sourdough starter"}))
                assert found["hits"] and all(h["citation"] for h in found["hits"])

        anyio.run(session)


def test_mcp_http_options(cli_env: dict[str, str]) -> None:
    assert cli_service.DEFAULT_MCP_PORT == DEFAULT_HTTP_PORT
    env = dict(cli_env)
    runner = CliRunner()
    for args, message in (
        (["--port", "9000"], "--port only applies with --http"),
        (["--host", "::1"], "--host only applies with --http"),
        (["--allow-origin", "https://a.example"], "--allow-origin only applies with --http"),
        (["--http", "--host", "0.0.0.0"], "--host 0.0.0.0 is reachable from other machines"),
        (["--http", "--host", "192.168.1.5"], "set CHROMASYNC_API_TOKEN"),
    ):
        result = runner.invoke(main, ["mcp", *args], env={**env, "CHROMASYNC_API_TOKEN": ""})
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
