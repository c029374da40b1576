"""`chromasync mcp` over stdio, driven line by line (a real subprocess): a request whose id
is an object, list, bool, float or null gets an error reply (it got none), and a line far
over `MAX_MESSAGE_BYTES` without a newline is dropped while it is read, not held: the
server's peak memory (`VmHWM`) stays flat, and it answers the next message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chromasync.mcp.stdio import MAX_MESSAGE_BYTES

from ..conftest import REPO
from ..servers import MCP_INITIALIZE


class Stdio:
    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "chromasync", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env, "PYTHONPATH": str(REPO / "src")},
        )

    def send(self, message: Any) -> None:
        self.write((json.dumps(message) + "\n").encode())

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its stdout"
        return dict(json.loads(line))

    def peak_kib(self) -> int:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(next(x for x in status.splitlines() if x.startswith("VmHWM")).split()[1])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture
def mcp(cli_env: dict[str, str]) -> Iterator[Stdio]:
    server = Stdio({**cli_env, "HOME": os.environ.get("HOME", "/tmp")})
    server.send(MCP_INITIALIZE)
    assert server.reply()["id"] == 1
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    yield server
    server.close()


def test_a_request_with_a_bad_id_gets_an_error_reply(mcp: Stdio) -> None:
    for n, ident in enumerate([{"a": 1}, [1], True, 1.5, None]):
        mcp.send({"jsonrpc": "2.0", "id": ident, "method": "tools/list"})
        reply = mcp.reply()
        assert reply["id"] is None and reply["error"]["code"] == -32600, ident
        assert "string or an integer" in reply["error"]["message"]
        mcp.send({"jsonrpc": "2.0", "id": n, "method": "ping"})
        assert mcp.reply() == {"jsonrpc": "2.0", "id": n, "result": {}}


def test_a_huge_line_is_dropped_while_it_is_read(mcp: Stdio) -> None:
    """Two lines of 32 and 64 MiB (no newline until their end): each is answered -32600,
    and the peak memory grows by far less than either (the SDK held each line whole)."""
    mcp.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert mcp.reply()["id"] == 2
    before = mcp.peak_kib()
    block = b"x" * (1024 * 1024)
    for mib in (32, 64):
        for _ in range(mib):
            mcp.write(block)
        mcp.write(b"\n")
        reply = mcp.reply()
        assert reply["error"]["code"] == -32600
        assert f"over {MAX_MESSAGE_BYTES} bytes" in reply["error"]["message"]
    grown_mib = (mcp.peak_kib() - before) / 1024
    assert grown_mib < 16, f"peak memory grew by {grown_mib:.0f} MiB"
    mcp.write(b"{not json\n")
    assert mcp.reply()["error"]["code"] == -32700
    mcp.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert mcp.reply() == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_json_nested_too_deeply_gets_an_error_reply(mcp: Stdio) -> None:
    """Within the line limit, nesting past what the JSON decoder can recurse into is a
    parse error reply, and the next request is served (the RecursionError escaped)."""
    mcp.write(b"[" * 400_000 + b"]" * 400_000 + b"\n")
    reply = mcp.reply()
    assert reply["id"] is None and reply["error"]["code"] == -32700, reply
    assert "nested too deeply" in reply["error"]["message"]
    mcp.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    assert mcp.reply() == {"jsonrpc": "2.0", "id": 7, "result": {}}
