"""Inbound connections to a real server (uvicorn on a loopback port, the guarded protocol of
`rest.connections`): connections that never finish their headers are closed at the header
deadline while normal requests keep working, and a client that drops `/ask/stream`
mid-answer cancels the model's stream (docs/reliability.md, "Inbound connections")."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chromasync import api, rest
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.owner.service import Service
from chromasync.rest import connections
from tests.chat_server import ChatServer, Reply
from tests.integration.test_ask import QUESTION, with_llm


@pytest.fixture
def service(notes: Path, settings: Settings, embedder: HashEmbedder) -> Iterator[Service]:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    with Service(settings, "serve", embedder=embedder) as svc:
        yield svc


@pytest.fixture
def served(service: Service, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The REST app on a loopback port, with a 1 s header deadline."""
    monkeypatch.setattr(connections, "HEADER_TIMEOUT_S", 1.0)
    yield from _serve(service)


@pytest.fixture
def patient(service: Service, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The REST app on a loopback port, with a 60 s header deadline."""
    monkeypatch.setattr(connections, "HEADER_TIMEOUT_S", 60.0)
    yield from _serve(service)


def _serve(service: Service) -> Iterator[int]:
    listener = rest.bind_tcp("127.0.0.1", 0)
    port = int(listener.getsockname()[1])
    server = rest.BackgroundServer(rest.create_app(service), [listener])
    server.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
            break
        except httpx.HTTPError:
            time.sleep(0.05)
    yield port
    server.stop()


def _closed(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except TimeoutError:
        return False
    except OSError:
        return True


def test_connections_that_never_finish_their_headers_are_closed(served: int) -> None:
    """300 connections send half a request head and wait: normal requests are answered
    meanwhile, and every one of the 300 is closed by the deadline (none was, before)."""
    slow = []
    for _ in range(300):
        sock = socket.create_connection(("127.0.0.1", served))
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        slow.append(sock)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{served}", timeout=5) as client:
            for _ in range(5):
                assert client.get("/health").status_code == 200
        started = time.monotonic()
        closed = sum(_closed(sock, max(0.1, 4.0 - (time.monotonic() - started))) for sock in slow)
        assert closed == 300
        with httpx.Client(base_url=f"http://127.0.0.1:{served}", timeout=5) as client:
            assert client.get("/health").status_code == 200
    finally:
        for sock in slow:
            sock.close()


def test_one_client_holds_at_most_its_limit_of_waiting_connections(patient: int) -> None:
    """With the deadline far off, 100 slow connections from one address are cut to
    `MAX_WAITING_PER_CLIENT` once they have waited a second; a new request is served."""
    served = patient
    slow = []
    try:
        for _ in range(100):
            sock = socket.create_connection(("127.0.0.1", served))
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            slow.append(sock)
        time.sleep(1.5)
        with httpx.Client(base_url=f"http://127.0.0.1:{served}", timeout=5) as client:
            assert client.get("/health").status_code == 200
        oldest = slow[: 100 - connections.MAX_WAITING_PER_CLIENT - 8]  # the 60 oldest
        assert sum(_closed(sock, 2.0) for sock in oldest) == len(oldest)
    finally:
        for sock in slow:
            sock.close()


def test_many_concurrent_requests_from_one_client_all_succeed(served: int) -> None:
    """The per-client limit counts only connections waiting for their head: 100 requests
    at once from one address are all answered."""
    results: list[int] = []

    def one() -> None:
        with httpx.Client(timeout=30) as client:
            results.append(client.get(f"http://127.0.0.1:{served}/health").status_code)

    threads = [threading.Thread(target=one) for _ in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == [200] * 100


def test_a_dropped_ask_stream_cancels_the_model_stream(served: int, service: Service) -> None:
    """24 clients each read the first token of `/ask/stream` and hang up: every model
    stream is closed soon after (each ran its whole 20 s course before), and no thread is
    left behind."""
    with ChatServer() as chat:
        with_llm(service, chat)
        chat.default = Reply(" ".join(["word"] * 400), chunk_delay=0.05)
        body = json.dumps({"question": QUESTION, "k": 3}).encode()
        head = (
            "POST /ask/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        threads_before = threading.active_count()
        for _ in range(24):
            with socket.create_connection(("127.0.0.1", served), timeout=30) as sock:
                sock.sendall(head + body)
                seen = b""
                while b"event: token" not in seen:
                    data = sock.recv(65536)
                    assert data, seen
                    seen += data
        deadline = time.monotonic() + 10
        while chat.streaming and time.monotonic() < deadline:
            time.sleep(0.05)
        assert chat.streaming == 0
        assert len(chat.requests) == 24
        time.sleep(0.3)
        assert threading.active_count() <= threads_before + 2


def test_a_request_body_over_the_limit_is_refused_while_read(served: int) -> None:
    """9 MiB to `/search`: declared, a 413 before a byte of it is read; sent chunked with
    no length, a 413 once the limit has arrived (FastAPI read the whole body first)."""
    big = b'{"query": "' + b"x" * (9 << 20) + b'"}'
    headers = {"Content-Type": "application/json"}
    with httpx.Client(base_url=f"http://127.0.0.1:{served}", timeout=30) as client:
        declared = client.post("/search", content=big, headers=headers)
        assert declared.status_code == 413 and "request body" in declared.json()["detail"]

        def pieces() -> Iterator[bytes]:
            for at in range(0, len(big), 1 << 16):
                yield big[at : at + (1 << 16)]

        try:
            chunked = client.post("/search", content=pieces(), headers=headers)
            assert chunked.status_code == 413
        except httpx.HTTPError:
            pass  # the server answered 413 and closed while the client still sent
        small = client.post("/search", json={"query": "grinder"})
        assert small.status_code == 200, small.text


def test_connections_that_never_finish_their_body_are_closed(served: int) -> None:
    """A whole head, then a body that never comes (or a byte now and then): the deadline
    covers the request's body too. These connections were held for ever."""
    slow = []
    for _ in range(50):
        sock = socket.create_connection(("127.0.0.1", served))
        sock.sendall(
            b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"q": '
        )
        slow.append(sock)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{served}", timeout=5) as client:
            assert client.get("/health").status_code == 200
        started = time.monotonic()
        closed = sum(_closed(sock, max(0.1, 4.0 - (time.monotonic() - started))) for sock in slow)
        assert closed == 50
    finally:
        for sock in slow:
            sock.close()
