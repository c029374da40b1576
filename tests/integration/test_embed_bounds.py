"""The `openai` embedding provider's bounds against real servers on loopback ports: a server
that holds the connection costs one `timeout` in all (retries included), and an answer over
`MAX_ANSWER_BYTES` is refused while it is read (docs/reliability.md, "Outbound calls")."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chromasync.embed import openai
from chromasync.errors import EmbeddingError
from chromasync.retry import RetryPolicy
from tests.integration.test_chat_bounds import holding_port  # noqa: F401 - a fixture


def test_a_server_that_holds_the_connection_costs_one_timeout(
    holding_port: int,  # noqa: F811
) -> None:
    embedder = openai.OpenAIEmbedder(
        f"http://127.0.0.1:{holding_port}/v1",
        dimension=8,
        timeout_s=1.0,
        retry=RetryPolicy(attempts=4, base_s=0.01),
    )
    started = time.monotonic()
    with pytest.raises(EmbeddingError):
        embedder.embed_documents(["one text"])
    assert time.monotonic() - started < 3.0  # it took one timeout per attempt, 4 s


@pytest.fixture
def padded() -> Iterator[str]:
    """A server answering every request with 8 MiB of spaces after a valid answer."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"data": [{"index": 0, "embedding": [1, 0]}]}')
            try:
                for _ in range(128):
                    self.wfile.write(b" " * 65536)
            except OSError:
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_an_answer_over_the_cap_is_refused_while_read(
    padded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = openai.OpenAIEmbedder(padded, dimension=2, retry=RetryPolicy(attempts=1))
    monkeypatch.setattr(openai, "MAX_ANSWER_BYTES", 1 << 20)
    with pytest.raises(EmbeddingError, match="over 1048576 bytes"):
        embedder.embed_documents(["one text"])
    monkeypatch.setattr(openai, "MAX_ANSWER_BYTES", 16 << 20)
    assert embedder.embed_documents(["one text"]) == [[1.0, 0.0]]
