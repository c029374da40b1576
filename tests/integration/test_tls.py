"""HTTPS to a Chroma server verifies certificates: a self-signed one is refused at once
(a TLS failure is not retried), with a message that says so and holds no secret."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from chromasync.errors import StoreError, storage_errors
from chromasync.retry import RetryPolicy
from chromasync.store.connect import open_store
from chromasync.store.target import StoreConfig

SECRET = "tok-TLS-93be1f"


@pytest.fixture
def self_signed_server(tmp_path: Path) -> Iterator[tuple[str, list[str], list[str]]]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    class Server(ThreadingHTTPServer):
        def get_request(self) -> Any:
            sock, addr = self.socket.accept()
            connections.append(str(addr))
            return context.wrap_socket(sock, server_side=True), addr

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # the client refuses our certificate: expected

    connections: list[str] = []
    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", hits, connections
    finally:
        server.shutdown()
        server.server_close()


def test_self_signed_certificate_is_refused(
    tmp_path: Path, self_signed_server: tuple[str, list[str], list[str]]
) -> None:
    url, hits, connections = self_signed_server
    config = StoreConfig(tmp_path, url=url, token=SECRET, retry=RetryPolicy(attempts=5))
    with pytest.raises(StoreError) as info:
        open_store(config)
    message = str(info.value)
    assert "TLS" in message and "CERTIFICATE_VERIFY_FAILED" in message
    assert "SSL_CERT_FILE" in message
    assert SECRET not in message
    assert hits == []  # the handshake failed: no request was ever sent
    assert len(connections) == 1  # and it was not retried


def test_a_refused_certificate_is_not_a_data_dir_permission_problem(
    tmp_path: Path, self_signed_server: tuple[str, list[str], list[str]]
) -> None:
    """The certificate error's errno is EPERM: the data dir's error table must not read it
    as "permission denied in the data dir" (issue 29)."""
    url, _, _ = self_signed_server
    config = StoreConfig(tmp_path, url=url, token=SECRET, retry=RetryPolicy(attempts=1))
    with pytest.raises(StoreError) as info, storage_errors(tmp_path):
        open_store(config)
    message = str(info.value)
    assert "certificate" in message.lower() and "permission denied" not in message
    assert SECRET not in message


def test_chroma_cloud_without_a_key_says_so_without_dialing(tmp_path: Path) -> None:
    """`chroma-cloud://` with no API key: a ConfigError naming the key, and no connection
    to the server at all (issue 29)."""
    import socket

    from chromasync.errors import ConfigError

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.3)
    try:
        url = f"chroma-cloud+http://127.0.0.1:{listener.getsockname()[1]}"
        with pytest.raises(ConfigError, match="needs an API key, and none is set"):
            open_store(StoreConfig(tmp_path, url=url, token=None))
        with pytest.raises(TimeoutError):
            listener.accept()  # nobody dialed
    finally:
        listener.close()
