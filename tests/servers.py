"""Real local servers for tests: `chroma run`, a fault-injecting HTTP proxy, and an
OpenAI-compatible embeddings server. All listen on loopback ports of their own.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

CHROMA_BIN = Path(sys.executable).parent / "chroma"


#: An MCP client's first message (every MCP test's handshake: stdio and HTTP alike).
MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ChromaServer:
    """`chroma run --path PATH --host 127.0.0.1 --port PORT`, ready-checked by heartbeat."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = path.parent / f"chroma-{self.port}.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 90.0) -> ChromaServer:
        with self.log.open("wb") as log:
            self._proc = subprocess.Popen(
                [
                    str(CHROMA_BIN),
                    "run",
                    "--path",
                    str(self.path),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"chroma run exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"chroma run did not answer its heartbeat within {timeout} s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)


@dataclass
class Fault:
    """Inject into matching requests: `drop` the connection, answer `status`, or `slow`."""

    action: str  # "drop" | "status" | "slow" | "body"
    path: str = ""  # substring of the request path
    method: str | None = None
    times: int = 1  # how many matching requests; -1: all
    status: int = 503
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: bytes = b""


@dataclass
class Seen:
    method: str
    path: str
    outcome: str  # "forwarded", "drop", "status 503", "slow", "body"
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names


class FaultProxy:
    """An HTTP proxy on loopback in front of `upstream` that injects the queued faults."""

    def __init__(self, upstream: str) -> None:
        parsed = httpx.URL(upstream)
        self.upstream_host = parsed.host
        self.upstream_port = parsed.port or 80
        self.faults: list[Fault] = []
        self.seen: list[Seen] = []
        self.rewrite: Callable[[str, bytes], bytes] | None = None  # (path, body) -> body
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = proxy._take(self.command, self.path)
                outcome = "forwarded" if fault is None else fault.action
                if fault is not None and fault.action == "status":
                    outcome = f"status {fault.status}"
                with proxy._lock:
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    proxy.seen.append(Seen(self.command, self.path, outcome, body, headers))
                if fault is not None and fault.action == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault is not None and fault.action in ("status", "body"):
                    payload = fault.body or json.dumps({"error": "injected"}).encode()
                    self.send_response(fault.status)
                    for key, value in fault.headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if fault is not None and fault.action == "slow":
                    time.sleep(fault.delay)
                status, headers, data = proxy._forward(self.command, self.path, self.headers, body)
                if proxy.rewrite is not None:
                    data = proxy.rewrite(self.path, data)
                self.send_response(status)
                for key, value in headers:
                    if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()
            self.seen.clear()

    def _take(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.path in path and fault.method in (None, method) and fault.times != 0:
                    if fault.times > 0:
                        fault.times -= 1
                    return fault
        return None

    def _forward(
        self, method: str, path: str, headers: Any, body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
        try:
            send = {k: v for k, v in headers.items() if k.lower() not in ("host", "connection")}
            conn.request(method, path, body=body or None, headers=send)
            response = conn.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            conn.close()

    def requests(self, method: str, path: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.method == method and path in s.path]


class EmbeddingServer:
    """An OpenAI-compatible `/v1/embeddings` endpoint serving vectors of `embed`."""

    def __init__(
        self,
        embed: Callable[[Sequence[str]], list[list[float]]],
        model: str = "test-model",
        api_key: str | None = None,
    ) -> None:
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server.auth_headers.append(self.headers.get("Authorization"))
                if self.path.rstrip("/") != "/v1/embeddings":
                    self._reply(404, {"error": {"message": "not found"}})
                    return
                if api_key is not None and self.headers.get("Authorization") != f"Bearer {api_key}":
                    self._reply(401, {"error": {"message": "Incorrect API key provided"}})
                    return
                if body.get("model") != model:
                    self._reply(404, {"error": {"message": f"model {body.get('model')} unknown"}})
                    return
                texts = body["input"]
                texts = [texts] if isinstance(texts, str) else texts
                server.requests.append(body)
                vectors = embed(texts)
                data = [
                    {"object": "embedding", "index": i, "embedding": v}
                    for i, v in reversed(list(enumerate(vectors)))  # out of order on purpose
                ]
                self._reply(
                    200,
                    {
                        "object": "list",
                        "model": model,
                        "data": data,
                        "usage": {"prompt_tokens": 0, "total_tokens": 0},
                    },
                )

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    def __enter__(self) -> EmbeddingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class HeldEmbeddingServer(EmbeddingServer):
    """An `EmbeddingServer` whose answers wait for `release()`: whatever embeds through it
    (a side build) is held at its first request, and `waiting` is set then."""

    def __init__(
        self,
        embed: Callable[[Sequence[str]], list[list[float]]],
        model: str = "test-model",
        api_key: str | None = None,
    ) -> None:
        self.waiting, self._gate = threading.Event(), threading.Event()

        def held(texts: Sequence[str]) -> list[list[float]]:
            self.waiting.set()
            assert self._gate.wait(60)
            return embed(texts)

        super().__init__(held, model, api_key)

    def release(self) -> None:
        self._gate.set()


def pythonpath_env(repo: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(repo / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


#: Where Debian's `nats-server` package puts the server (`.ci/run` installs it).
NATS_SERVER_CANDIDATES = ("nats-server", "/usr/sbin/nats-server", "/usr/bin/nats-server")


def nats_server_bin() -> str | None:
    """The `nats-server` binary, or None when it is not installed."""
    import shutil

    for name in NATS_SERVER_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class NatsServer:
    """`nats-server` with JetStream (`-js`), its store in `folder`, on a loopback port.

    `conf` is extra configuration text (authorization, `max_payload`); the port stays the
    same across `stop()` and `start()`, so a client can reconnect to it, and so does the
    JetStream store (what was published survives a restart)."""

    def __init__(self, folder: Path, conf: str = "", jetstream: bool = True) -> None:
        binary = nats_server_bin()
        if binary is None:
            raise RuntimeError("nats-server is not installed (apt-get install nats-server)")
        self.binary = binary
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self.log = folder / f"nats-{self.port}.log"
        self.config = folder / "nats.conf"
        store = json.dumps(str(folder / "js"))
        js = f"jetstream {{ store_dir: {store} }}\n" if jetstream else ""
        self.config.write_text(f"listen: 127.0.0.1:{self.port}\n{js}{conf}\n")
        self.jetstream = jetstream
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> NatsServer:
        with self.log.open("ab") as log:
            self._proc = subprocess.Popen(
                [self.binary, *(["-js"] if self.jetstream else []), "-c", str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"nats-server exited: {self.log.read_text()[-2000:]}")
            if "Server is ready" in self.log.read_text(errors="replace"):
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return self
                except OSError:
                    pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nats-server did not start within {timeout} s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
        if self.log.exists():  # the next start waits for its own "ready" line
            self.log.rename(self.log.with_suffix(f".{time.monotonic_ns()}.log"))


class CommandProcess:
    """A long-running `chromasync COMMAND` subprocess (`watch`, `nats`, `serve`...) whose
    stderr lines are collected as they come."""

    def __init__(self, command: str, args: Sequence[str], env: dict[str, str]) -> None:
        repo = Path(__file__).resolve().parents[1]
        full = {**os.environ, **env, "PYTHONPATH": str(repo / "src")}
        self.command = command
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "chromasync", command, *args],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=full,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            for line in self.proc.stderr:
                self.lines.put(line.rstrip("\n"))

    def expect(self, text: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no {text!r} from chromasync {self.command}; saw: {self.seen}")

    def drain(self) -> list[str]:
        while True:
            try:
                self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                return self.seen

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=60)
        time.sleep(0.2)  # the pump takes the last lines
        self.drain()
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


class StallingServer:
    """A raw HTTP server (TCP on loopback, or a Unix socket at `path`) that misbehaves on
    every request, as `behaviour` says:

    * `hold`: reads the request and never answers;
    * `drip-head`: sends its status line and headers a byte every `every` seconds;
    * `drip-body`: sends a head declaring `size` bytes, then a byte every `every` seconds;
    * `flood`: sends a head declaring `size` bytes, then all of them (zeros).

    A request for a path in `answers` gets that JSON body instead, properly; the next
    request on that connection is held, or, with `then_misbehave`, gets `behaviour` (a
    kept-alive connection that turns bad).
    """

    def __init__(
        self,
        behaviour: str,
        *,
        path: str | None = None,
        every: float = 0.1,
        size: int = 1000,
        answers: dict[str, str] | None = None,
        then_misbehave: bool = False,
    ) -> None:
        self.behaviour, self.every, self.size = behaviour, every, size
        self.answers = answers or {}
        self.then_misbehave = then_misbehave
        if path is None:
            self._listener = socket.socket()
            self._listener.bind(("127.0.0.1", 0))
            self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        else:
            self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._listener.bind(path)
            self.url = "http://localhost"
        self._listener.listen(16)
        self._listener.settimeout(0.1)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.connections = 0

    def __enter__(self) -> StallingServer:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn = self._listener.accept()[0]
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(0.2)
            try:
                request = conn.recv(65536)  # the request (small ones only)
                target = request.split(b" ", 2)[1].decode() if request.count(b" ") >= 2 else ""
                body = self.answers.get(target.split("?")[0])
                if body is not None:
                    data = body.encode()
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
                    )
                    if self.then_misbehave and conn.recv(65536):  # the next request
                        self._answer(conn)
                    while conn.recv(65536):  # the next request on this connection
                        pass
                    return
                self._answer(conn)
            except OSError:
                return  # the client went away

    def _answer(self, conn: socket.socket) -> None:
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {self.size}\r\n\r\n"
        )
        if self.behaviour == "flood":
            conn.sendall(head.encode())
            piece = b"0" * 65536
            sent = 0
            while sent < self.size and not self._stop.is_set():
                conn.sendall(piece[: self.size - sent])
                sent += len(piece)
            return
        if self.behaviour == "drip-head":
            drip = [bytes([b]) for b in head.encode()]
        elif self.behaviour == "drip-body":
            conn.sendall(head.encode())
            drip = [b"0"] * self.size
        else:  # hold
            drip = []
        sent = 0
        while sent < len(drip) and not self._stop.wait(self.every):
            conn.sendall(drip[sent])
            sent += 1
        self._stop.wait()
