"""Every install a user can get works: the plain install (no extras) and each extra alone,
each in its own virtual environment made from the lock by `make variants`
(`.venv-variants/NAME`, the package installed as a wheel, not from this checkout's
sources), run as a user runs it: the console script, a fresh HOME, no network. The default
model comes from a loopback server that serves Chroma's archive (made from the session's
model), as Chroma's bucket would on a networked machine.

Outside CI a missing environment skips and says how to make it; in CI (`CI` set) it fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ..conftest import REPO, age_tree
from ..servers import MCP_INITIALIZE, NatsServer, nats_server_bin

#: every test here runs the default model's tokenizer, the plain one the model itself
pytestmark = pytest.mark.model

VARIANTS = REPO / ".venv-variants"
QUERY = "how do I calibrate the grinder"


def venv(name: str) -> Path:
    """The `bin` folder of the variant's environment."""
    bin_dir = VARIANTS / name / "bin"
    if not (bin_dir / "chromasync").exists():
        message = f"{VARIANTS / name} is missing: `make variants` makes it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return bin_dir


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """CHROMASYNC_MODEL_URL and _SHA256 of a loopback server serving Chroma's archive."""
    from chromasync.embed import shared
    from chromasync.embed.local import LocalEmbedder

    served = tmp_path_factory.mktemp("bucket")
    reference = LocalEmbedder(cache_dir=served / "ref", variant="fp32")
    reference.embed_documents(["made"])  # its files made (from the offline weights)
    source = reference.onnx_path().parent
    archive = served / shared.ARCHIVE
    with tarfile.open(archive, "w:gz") as tar:
        for name in shared.FILES:
            tar.add(source / name, arcname=f"onnx/{name}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield {
            "CHROMASYNC_MODEL_URL": f"http://127.0.0.1:{server.server_address[1]}/{shared.ARCHIVE}",
            "CHROMASYNC_MODEL_SHA256": hashlib.sha256(archive.read_bytes()).hexdigest(),
        }
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def user(tmp_path: Path, mirror: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """A user's folder holding `notes/`, and an environment with a fresh HOME, no setting of
    this session's, and the model mirror."""
    shutil.copytree(REPO / "examples" / "notes", tmp_path / "notes")
    age_tree(tmp_path / "notes")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHROMASYNC_", "PYTHON"))}
    env.update(mirror, HOME=str(tmp_path / "home"))
    return tmp_path, env


def run(bin_dir: Path, args: list[str], cwd: Path, env: dict[str, str], **kw: Any) -> Any:
    return subprocess.run(
        [str(bin_dir / args[0]), *args[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        **kw,
    )


def test_the_plain_install_ingests_searches_through_its_daemon_and_asks(
    user: tuple[Path, dict[str, str]],
) -> None:
    bin_dir = venv("plain")
    cwd, env = user
    ingest = run(bin_dir, ["chromasync", "ingest", "notes"], cwd, env)
    assert ingest.returncode == 0, ingest.stderr
    assert "downloading Chroma's default model" in ingest.stderr
    try:
        searches = [
            run(bin_dir, ["chromasync", "search", QUERY, "--k", "3", "--json"], cwd, env)
            for _ in range(3)
        ]
        for done in searches:
            assert done.returncode == 0, done.stderr
            paths = [h["path"] for h in json.loads(done.stdout)["hits"]]
            assert "guides/install.md" in paths
        started = sum(s.stderr.count("starting the search daemon") for s in searches)
        assert started == 1, [s.stderr for s in searches]
        log = (cwd / ".chromasync" / "daemon.log").read_text()
        assert "Traceback" not in log and "Error" not in log, log
        status = run(bin_dir, ["chromasync", "daemon", "status"], cwd, env)
        assert status.returncode == 0 and "pid" in status.stdout + status.stderr
        asked = run(bin_dir, ["chromasync", "ask", QUERY, "--json"], cwd, env)
        assert asked.returncode == 0, asked.stderr
        answer = json.loads(asked.stdout)
        assert answer["citations"] and "install.md" in json.dumps(answer["citations"])
    finally:
        run(bin_dir, ["chromasync", "daemon", "stop"], cwd, env)
    for command, extra in (
        (["mcp"], "serve"),
        (["watch", "notes"], "serve"),
        (["serve", "--watch"], "serve"),
        (["nats"], "nats"),
    ):
        done = run(bin_dir, ["chromasync", *command], cwd, env, stdin=subprocess.DEVNULL)
        assert done.returncode == 2, (command, done.stderr)
        assert f"pip install 'chromasync[{extra}]'" in done.stderr
        assert "Traceback" not in done.stderr


def _ingested(bin_dir: Path, cwd: Path, env: dict[str, str]) -> dict[str, str]:
    env = {**env, "CHROMASYNC_EMBEDDING_PROVIDER": "hash", "CHROMASYNC_NO_DAEMON": "1"}
    done = run(bin_dir, ["chromasync", "ingest", "notes"], cwd, env)
    assert done.returncode == 0, done.stderr
    return env


def test_the_serve_extra_serves_mcp_over_stdio(user: tuple[Path, dict[str, str]]) -> None:
    bin_dir = venv("serve")
    cwd, env = user
    env = _ingested(bin_dir, cwd, env)
    messages = [
        MCP_INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": QUERY, "k": 3}},
        },
    ]
    proc = subprocess.Popen(
        [str(bin_dir / "chromasync"), "mcp"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
        replies = {}
        while 2 not in replies:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            reply = json.loads(line)
            replies[reply.get("id")] = reply
    finally:
        proc.stdin.close()
        proc.wait(30)
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
    result = replies[2]["result"]
    assert not result.get("isError"), result
    assert "guides/install.md" in json.dumps(result)


def test_the_nats_extra_answers_a_request(
    user: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bin_dir = venv("nats")
    if nats_server_bin() is None:
        pytest.skip("nats-server is not installed (`.ci/run` installs Debian's package)")
    cwd, env = user
    env = _ingested(bin_dir, cwd, env)
    server = NatsServer(tmp_path / "nats").start()
    bridge = subprocess.Popen(
        [str(bin_dir / "chromasync"), "nats"],
        cwd=cwd,
        env={**env, "CHROMASYNC_NATS_URL": server.url},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert bridge.stderr is not None
        for line in bridge.stderr:
            assert "Traceback" not in line
            if "connected to" in line:
                break
        request = (
            "import asyncio, json, nats, sys\n"
            "async def main():\n"
            "    nc = await nats.connect(sys.argv[1])\n"
            "    body = json.dumps({'client_id': 't', 'query': sys.argv[2], 'top_k': 3})\n"
            "    reply = await nc.request('corpus.retrieve.requested', body.encode(), timeout=60)\n"
            "    print(reply.data.decode())\n"
            "    await nc.close()\n"
            "asyncio.run(main())\n"
        )
        done = run(bin_dir, ["python", "-c", request, server.url, QUERY], cwd, env)
        assert done.returncode == 0, done.stderr
        assert "guides/install.md" in done.stdout
    finally:
        bridge.send_signal(signal.SIGTERM)
        bridge.wait(30)
        if bridge.stderr is not None:
            bridge.stderr.close()
        server.stop()


SNIPPETS = {
    "langchain": (
        "from chromasync.adapters.langchain import ChromasyncRetriever\n"
        "r = ChromasyncRetriever(settings=settings, k=3)\n"
        "docs = r.invoke(QUERY, k=1)\n"
        "print(len(docs), docs[0].metadata['path'])\n"
    ),
    "llamaindex": (
        "import asyncio\n"
        "from chromasync.adapters.llamaindex import ChromasyncRetriever\n"
        "r = ChromasyncRetriever(settings, k=1)\n"
        "nodes = asyncio.run(r.aretrieve(QUERY))\n"
        "print(len(nodes), nodes[0].node.metadata['path'])\n"
    ),
}


@pytest.mark.parametrize("extra", sorted(SNIPPETS))
def test_each_framework_extra_retrieves_alone(
    extra: str, user: tuple[Path, dict[str, str]]
) -> None:
    bin_dir = venv(extra)
    cwd, env = user
    env = _ingested(bin_dir, cwd, env)
    code = (
        "import os\n"
        "from chromasync import resolve_settings\n"
        f"QUERY = {QUERY!r}\n"
        "settings = resolve_settings({'data_dir': '.chromasync'}, os.environ)\n" + SNIPPETS[extra]
    )
    done = run(bin_dir, ["python", "-c", code], cwd, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "guides/install.md"]
