"""A real OpenAI-compatible `/v1/chat/completions` server on a loopback port, for tests and
the answer benchmark. Each request takes the next queued `Reply` (or `default`)."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """What to answer: `status` with `content` (streamed in `chunks` pieces when asked),
    after `delay` seconds; `drop` closes the connection without answering.

    Misbehaviours: `endless` streams `content` again and again (never `[DONE]`);
    `no_done` stops after the content without a finish reason or `[DONE]`; `pad` bytes of
    spaces are sent after a whole answer's JSON (a huge body), before `Content-Length`
    could help: it is left out then."""

    content: str | None = "It works [1]."  # None: a JSON null (whole answers only)
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    chunk_delay: float = 0.0
    drop: bool = False
    endless: bool = False
    no_done: bool = False
    pad: int = 0


class ChatServer:
    def __init__(self, api_key: str | None = None, model: str = "test-chat") -> None:
        self.api_key = api_key
        self.model = model
        self.queue: deque[Reply] = deque()
        self.default = Reply()
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str | None] = []
        self.streaming = 0  # streams being written now
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, payload: Any, headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server.auth_headers.append(self.headers.get("Authorization"))
                    reply = server.queue.popleft() if server.queue else server.default
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.drop:
                    self.close_connection = True
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._json(404, {"error": {"message": "not found"}}, {})
                    return
                wanted = f"Bearer {server.api_key}"
                if server.api_key is not None and self.headers.get("Authorization") != wanted:
                    self._json(401, {"error": {"message": "Incorrect API key provided"}}, {})
                    return
                if reply.status != 200:
                    self._json(reply.status, {"error": {"message": "injected"}}, reply.headers)
                    return
                usage = {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
                if not body.get("stream"):
                    message = {"role": "assistant", "content": reply.content}
                    choice = {"index": 0, "message": message, "finish_reason": "stop"}
                    payload = {"model": server.model, "choices": [choice], "usage": usage}
                    if reply.pad:
                        self._padded(payload, reply.pad)
                        return
                    self._json(200, payload, {})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                words = (reply.content or "").split(" ")
                pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
                with server._lock:
                    server.streaming += 1
                try:
                    while True:
                        for piece in pieces:
                            delta = {
                                "model": server.model,
                                "choices": [{"delta": {"content": piece}}],
                            }
                            self.wfile.write(f"data: {json.dumps(delta)}\n\n".encode())
                            self.wfile.flush()
                            if reply.chunk_delay:
                                time.sleep(reply.chunk_delay)
                        if not reply.endless:
                            break
                except OSError:  # the client went away
                    return
                finally:
                    with server._lock:
                        server.streaming -= 1
                if reply.no_done:
                    return
                end = {"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": usage}
                self.wfile.write(f": keep-alive\n\ndata: {json.dumps(end)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _padded(self, payload: Any, pad: int) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                self.wfile.write(json.dumps(payload).encode())
                block = b" " * 65536
                try:
                    for _ in range(pad // len(block)):
                        self.wfile.write(block)
                except OSError:
                    server.pad_aborted = True

        self.pad_aborted = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self.queue.extend(replies)

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
