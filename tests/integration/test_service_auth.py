"""`serve` and `mcp --http` answer only whoever holds the token, by default (issue 30).

With no CHROMASYNC_API_TOKEN they used to serve every indexed file to any local user. Now
they make a token on first start, keep it in the data dir's `api-token` (0600), require it
on every route that holds index data, and the CLI reads it to go through them; `serve`
prints the search page's URL with the token in its fragment. `--no-auth` opts out.
Real processes on loopback, real Chroma.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.datadir import TOKEN_FILE
from chromasync.embed.hashing import HashEmbedder
from chromasync.owner.locate import read_owner

from ..conftest import REPO, invoke_cli
from .test_mcp_http import INITIALIZE, MCP_HEADERS, mcp_http

pytestmark = pytest.mark.skipif(bool(os.environ.get("CHROMASYNC_TEST_CHROMA_URL")), reason="")


@contextmanager
def serving(env: dict[str, str], log: Path, *args: str) -> Iterator[str]:
    """`chromasync serve --port 0 ARGS`: yields its URL once it owns the data dir."""
    full = {**os.environ, **env, "PYTHONPATH": str(REPO / "src")}
    full.pop("CHROMASYNC_API_TOKEN", None)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "chromasync", "serve", "--port", "0", *args],
            stdout=subprocess.DEVNULL,
            stderr=out,
            env=full,
        )
    try:
        data_dir = Path(env["CHROMASYNC_DATA_DIR"])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            info = read_owner(data_dir)
            if (
                info is not None
                and info.role == "serve"
                and info.url
                and "serve:" in log.read_text()
            ):
                yield info.url
                break
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        else:
            pytest.fail("serve did not start")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def test_serve_without_a_token_makes_one_and_refuses_requests_without_it(
    notes: Path, settings: Settings, cli_env: dict[str, str], data_dir: Path, tmp_path: Path
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=HashEmbedder())
    env = {k: v for k, v in cli_env.items() if k != "CHROMASYNC_API_TOKEN"}
    log = tmp_path / "serve.log"
    with serving(env, log) as url:
        path = data_dir / TOKEN_FILE
        token = path.read_text().strip()
        assert len(token) >= 32 and path.stat().st_mode & 0o777 == 0o600
        # the printed URL opens the page with the token (a fragment: never sent to the server)
        assert f"{url}/#token={token}" in log.read_text()
        for route in ("/search?q=grinder", "/get?spec=guides/sourdough.md", "/sources"):
            refused = httpx.get(url + route, timeout=30)
            assert refused.status_code == 401, route
        assert httpx.get(url + "/health", timeout=30).status_code == 200
        assert httpx.get(url + "/", timeout=30).status_code == 200  # the page shell
        found = httpx.get(
            url + "/search?q=grinder", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        assert found.status_code == 200 and found.json()["hits"]
        # the CLI goes through serve with the data dir's token
        cli = invoke_cli(["search", "espresso grinder", "--json", "--k", "1"], env=env)
        assert cli.returncode == 0, cli.stderr
        assert json.loads(cli.stdout)["hits"]
    # the next start keeps the same token
    with serving(env, tmp_path / "again.log") as url:
        assert (data_dir / TOKEN_FILE).read_text().strip() == token
        assert httpx.get(url + "/sources", timeout=30).status_code == 401


@pytest.mark.parametrize(("text", "mode"), [("zq\n", 0o600), ("Zq" * 22 + "\n", 0o644)])
def test_serve_never_runs_without_a_token_because_its_file_is_not_right(
    cli_env: dict[str, str], data_dir: Path, text: str, mode: int
) -> None:
    """A data dir's `api-token` readable by others made `serve` run with no token at all
    (it printed `#token=None`); one of one character was taken (issue 40)."""
    env = {k: v for k, v in cli_env.items() if k != "CHROMASYNC_API_TOKEN"}
    data_dir.mkdir(mode=0o700, exist_ok=True)
    (data_dir / TOKEN_FILE).write_text(text)
    (data_dir / TOKEN_FILE).chmod(mode)
    full = {**os.environ, **env, "PYTHONPATH": str(REPO / "src")}
    full.pop("CHROMASYNC_API_TOKEN", None)
    serve = [sys.executable, "-m", "chromasync", "serve", "--port", "0"]
    try:
        done = subprocess.run(serve, capture_output=True, text=True, env=full, timeout=60)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"serve ran: {exc.stderr!r}")
    assert done.returncode == 2, done.stderr
    assert "remove it, and a new one is made" in done.stderr and text.strip() not in done.stderr
    assert read_owner(data_dir) is None


def test_serve_no_auth_opts_out(
    notes: Path, settings: Settings, cli_env: dict[str, str], data_dir: Path, tmp_path: Path
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=HashEmbedder())
    env = {k: v for k, v in cli_env.items() if k != "CHROMASYNC_API_TOKEN"}
    log = tmp_path / "serve.log"
    with serving(env, log, "--no-auth") as url:
        assert httpx.get(url + "/sources", timeout=30).status_code == 200
        assert "no token required (--no-auth)" in log.read_text()
        assert not re.search(r"#token=", log.read_text())
    assert not (data_dir / TOKEN_FILE).exists()


def test_mcp_http_without_a_token_requires_the_data_dirs_own(
    notes: Path, settings: Settings, cli_env: dict[str, str], data_dir: Path, tmp_path: Path
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=HashEmbedder())
    env = {**cli_env, "HOME": os.environ.get("HOME", "/tmp")}
    env.pop("CHROMASYNC_API_TOKEN", None)
    with mcp_http(env, tmp_path / "mcp.log") as server:
        assert server.post().status_code == 401
        token = (data_dir / TOKEN_FILE).read_text().strip()
        assert (data_dir / TOKEN_FILE).stat().st_mode & 0o777 == 0o600
        ok = server.post(headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        refused = httpx.post(server.url, json=call, headers=MCP_HEADERS, timeout=30)
        assert refused.status_code == 401
    assert INITIALIZE["method"] == "initialize"
