"""Every outbound call has a total deadline and every answer a size cap (issue 30, goal 3):
the Chroma server client and the owner's client, against loopback servers that accept and
hold the connection, drip their answer a byte at a time, or flood it (`tests.servers.
StallingServer`). Each call returns within its deadline with an error that names the server
and what it waited for; before, each waited one per-read timeout per attempt, and a drip
(a byte within every read timeout) never ended."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.config.settings import Settings
from chromasync.datadir import READER_MARK
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import StoreError
from chromasync.owner import client as owner_client
from chromasync.owner import daemon as daemons
from chromasync.owner.client import OwnerClient
from chromasync.owner.index import open_index
from chromasync.owner.locate import OwnerInfo, find_owner
from chromasync.retry import NO_RETRY, GaveUp
from chromasync.store import connect
from chromasync.store.target import StoreConfig

from ..servers import StallingServer

HEARTBEAT = {"/api/v2/heartbeat": json.dumps({"nanosecond heartbeat": 1})}


def _chroma(tmp_path: Path, url: str, **more: Any) -> Settings:
    flags = {"data_dir": str(tmp_path / "d"), "provider": "hash", "chroma_url": url, **more}
    return resolve_settings(flags, {})


@pytest.fixture(autouse=True)
def _chromadb_imported() -> None:
    import chromadb  # noqa: F401 - its import (seconds) is no part of a call's time


def _fails_within(seconds: float, call: Any) -> str:
    """The error of `call`, which must come within `seconds` (and 1.5 s of slack)."""
    started = time.monotonic()
    with pytest.raises(StoreError) as info:
        call()
    took = time.monotonic() - started
    assert took < seconds + 1.5, took
    return str(info.value)


@pytest.mark.parametrize("behaviour", ["hold", "drip-head", "drip-body"])
def test_a_chroma_server_that_stalls_costs_the_timeout_per_attempt(
    tmp_path: Path, behaviour: str
) -> None:
    """`chroma_timeout` 0.6 s, 2 attempts: the heartbeat gives up after about 1.2 s. A drip
    of a byte every 0.1 s (a head or a 1,000-byte body) took 1.6 s or 100 s an attempt."""
    with StallingServer(behaviour, every=0.1) as server:
        settings = _chroma(tmp_path, server.url, chroma_timeout=0.6, chroma_retries=2)
        message = _fails_within(1.2, lambda: api.open_store(settings))
    assert "gave up after" in message and "ReadTimeout" in message, message
    assert server.url.split("//")[1] in message  # names the server


def test_a_chroma_server_that_answers_the_heartbeat_then_holds(tmp_path: Path) -> None:
    """chromadb asks who we are and checks the tenant while it makes its client, with a
    session of its own that has no timeout at all: that session is ours from the start."""
    with StallingServer("hold", answers=HEARTBEAT) as server:
        settings = _chroma(tmp_path, server.url, chroma_timeout=0.6, chroma_retries=1)
        message = _fails_within(0.6, lambda: api.open_store(settings))
    assert "connect failed" in message and server.url.split("//")[1] in message, message


@pytest.mark.parametrize("behaviour", ["hold", "drip-head", "drip-body"])
def test_a_kept_alive_connection_that_turns_bad_is_cut_off_at_the_deadline(
    tmp_path: Path, behaviour: str
) -> None:
    """The first request on a connection is answered, the next one on it (reused from the
    pool: no new connection for the deadline to learn) is held or dripped. A head dripped a
    byte every 0.1 s took 8 s, the time the head took, however short the deadline."""
    import httpx

    with StallingServer(behaviour, every=0.1, answers=HEARTBEAT, then_misbehave=True) as server:
        config = StoreConfig(tmp_path, url=server.url, timeout_s=0.6, retry=NO_RETRY)
        transport = connect._transport(config)
        with httpx.Client(transport=transport, timeout=connect._timeout(config)) as client:
            assert client.get(f"{server.url}/api/v2/heartbeat").status_code == 200
            started = time.monotonic()
            with pytest.raises(GaveUp, match="ReadTimeout"):
                client.get(f"{server.url}/api/v2/collections")
            took = time.monotonic() - started
    assert server.connections == 1  # the second request went over the first's connection
    assert took < 0.6 + 1.5, took


def test_a_chroma_answer_over_its_cap_is_refused_while_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connect, "MAX_ANSWER_BYTES", 1 << 20)
    with StallingServer("flood", size=8 << 20) as server:
        settings = _chroma(tmp_path, server.url, chroma_timeout=5, chroma_retries=3)
        message = _fails_within(5, lambda: api.open_store(settings))
        assert server.connections == 1  # not retried: the same answer would come again
    assert "the answer is over 1048576 bytes" in message, message


# -- the owner's client (the full CLI's side of `serve`, `watch`, `mcp` and the daemon) --


@pytest.fixture
def sock(tmp_path: Path) -> str:
    return str(tmp_path / "o.sock")


def _owner(path: str, deadline_s: float) -> OwnerClient:
    return OwnerClient(OwnerInfo(pid=1, role="daemon", socket=path), deadline_s=deadline_s)


@pytest.mark.parametrize("behaviour", ["hold", "drip-head", "drip-body"])
def test_an_owner_that_stalls_is_cut_off_at_the_deadline(sock: str, behaviour: str) -> None:
    """A hung daemon (it accepts, it is not stopped) held `search` for a 60 s read timeout
    per read, and a drip for ever; now each call ends at its deadline."""
    with StallingServer(behaviour, path=sock, every=0.1), _owner(sock, 0.8) as client:
        message = _fails_within(0.8, client.status)
        assert "did not answer within 0.8 s" in message and "hung" in message, message
        _fails_within(0.8, lambda: client.search(api.SearchArgs("kites")))


def test_an_owner_answer_over_its_cap_is_refused_while_read(
    sock: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(owner_client, "MAX_ANSWER_BYTES", 1 << 20)
    with StallingServer("flood", path=sock, size=8 << 20), _owner(sock, 5) as client:
        message = _fails_within(5, client.status)
    assert "is over 1048576 bytes" in message, message


HUNG_DAEMON = r"""
import fcntl, json, os, socket, sys, time
data_dir, mark, key = sys.argv[1:4]
fd = os.open(os.path.join(data_dir, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, f"pid {os.getpid()}: {mark}chromasync daemon run\n".encode())
path = os.path.join(data_dir, "owner.sock")
server = socket.socket(socket.AF_UNIX)
server.bind(path)
server.listen(8)
with open(os.path.join(data_dir, "owner.json"), "w") as out:
    json.dump({"pid": os.getpid(), "role": "daemon", "socket": path, "key": key}, out)
print("ready", flush=True)
held = []
while True:  # it takes every call and answers none (hung, not stopped)
    held.append(server.accept()[0])
"""


def test_a_hung_daemon_leaves_the_search_to_this_process(
    notes: Path, settings: Settings, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full CLI's side (`open_index`): a daemon that takes calls and answers none is
    given its deadline once; then the command runs in its own process, as the console
    script's client does (it waited 60 s a read, then failed)."""
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    monkeypatch.setattr(owner_client, "CALL_S", 0.5)
    monkeypatch.delenv("CHROMASYNC_NO_DAEMON", raising=False)
    key = daemons.settings_key(settings)
    proc = subprocess.Popen(
        [sys.executable, "-c", HUNG_DAEMON, str(settings.data_dir), READER_MARK, key],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        info = find_owner(settings.data_dir)
        assert info is not None and info.role == "daemon" and daemons.answers(info), info
        assert info.key == key
        started = time.monotonic()
        with open_index(settings) as index:
            assert type(index).__name__ != "LocalIndex"  # the daemon's client, first
            result = index.search(api.SearchArgs("grinder calibration", mode="keyword"))
            again = index.search(api.SearchArgs("grinder", mode="keyword"))
        assert time.monotonic() - started < 3.0  # one deadline, then here
        assert result.hits and again.hits
        assert proc.poll() is None  # the daemon was left alone
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
