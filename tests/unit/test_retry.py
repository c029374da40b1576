"""The retry policy (pure) and the retrying transport against a real local HTTP server."""

from __future__ import annotations

import email.utils
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from chromasync.retry import (
    Failure,
    GaveUp,
    Refused,
    RetryingTransport,
    RetryPolicy,
    classify_error,
    parse_retry_after,
    retry_delay,
)

POLICY = RetryPolicy(attempts=5, base_s=1.0, cap_s=4.0, deadline_s=30.0, max_retry_after_s=10.0)


@pytest.mark.parametrize(
    ("attempt", "failure", "waited", "rand", "expected"),
    [
        (1, Failure(status=503), 0.0, 0.0, 0.5),  # half of base, no jitter
        (1, Failure(status=503), 0.0, 0.999, 0.9995),  # up to the full base
        (2, Failure(status=502), 0.0, 0.0, 1.0),
        (3, Failure(error="ConnectError"), 0.0, 0.0, 2.0),
        (4, Failure(status=500), 0.0, 0.0, 2.0),  # capped at cap_s (4 s) / 2
        (4, Failure(status=504), 0.0, 1.0, 4.0),
        (5, Failure(status=503), 0.0, 0.0, None),  # attempts exhausted
        (1, Failure(status=429, retry_after_s=7.0), 0.0, 0.0, 7.0),  # Retry-After as floor
        (1, Failure(status=429, retry_after_s=0.1), 0.0, 0.0, 0.5),
        (1, Failure(status=429, retry_after_s=11.0), 0.0, 0.0, None),  # too long: give up
        (2, Failure(status=503), 29.5, 0.0, None),  # would pass the deadline
        (1, Failure(status=401), 0.0, 0.0, None),  # auth: never retried
        (1, Failure(status=400), 0.0, 0.0, None),  # validation: never retried
        (1, Failure(status=422), 0.0, 0.0, None),
        (1, Failure(status=404), 0.0, 0.0, None),
        (1, Failure(error="ConnectError", final=True), 0.0, 0.0, None),  # TLS refused
    ],
)
def test_retry_delay(
    attempt: int, failure: Failure, waited: float, rand: float, expected: float | None
) -> None:
    got = retry_delay(POLICY, attempt, failure, waited, rand)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def test_backoff_grows_and_stays_bounded() -> None:
    policy = RetryPolicy(attempts=50, base_s=0.5, cap_s=8.0, deadline_s=1e9)
    delays = [retry_delay(policy, n, Failure(status=503), 0.0, 0.5) for n in range(1, 20)]
    assert all(d is not None for d in delays)
    values = [d for d in delays if d is not None]
    assert values == sorted(values)
    assert max(values) <= policy.cap_s


def test_total_wait_is_bounded_by_deadline() -> None:
    policy = RetryPolicy(attempts=1000, base_s=1.0, cap_s=5.0, deadline_s=20.0)
    waited, attempt = 0.0, 1
    while (delay := retry_delay(policy, attempt, Failure(status=503), waited, 0.99)) is not None:
        waited += delay
        attempt += 1
    assert waited <= policy.deadline_s
    assert attempt < 20


@pytest.mark.parametrize(
    ("value", "expected"),
    [("3", 3.0), (" 120 ", 120.0), ("", None), (None, None), ("soon", None), ("-1", None)],
)
def test_parse_retry_after_seconds(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, now=1_000.0) == expected


def test_parse_retry_after_http_date() -> None:
    now = 1_700_000_000.0
    header = email.utils.formatdate(now + 42, usegmt=True)
    assert parse_retry_after(header, now) == pytest.approx(42.0)
    past = email.utils.formatdate(now - 42, usegmt=True)
    assert parse_retry_after(past, now) == 0.0


def test_tls_errors_are_final() -> None:
    import ssl

    try:
        try:
            raise ssl.SSLCertVerificationError(1, "certificate verify failed")
        except ssl.SSLError as inner:
            raise httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED]") from inner
    except httpx.ConnectError as exc:
        failure = classify_error(exc)
    assert failure.final and not failure.transient
    assert classify_error(httpx.ReadTimeout("slow")).transient
    assert classify_error(httpx.RemoteProtocolError("dropped")).transient


# -- the transport, against a scripted local server ----------------------------------------


class Script:
    """Answers (status, headers) in order, then 200; or drops the connection for 'drop'."""

    def __init__(self) -> None:
        self.steps: list[tuple[int | str, dict[str, str]]] = []
        self.hits = 0


@pytest.fixture
def scripted() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            script.hits += 1
            step = script.steps.pop(0) if script.steps else (200, {})
            status, headers = step
            if status == "drop":
                self.close_connection = True
                return
            data = json.dumps({"echo": body.decode()}).encode()
            self.send_response(int(status))
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/x", script
    finally:
        server.shutdown()
        server.server_close()


def _client(policy: RetryPolicy, sleeps: list[float]) -> httpx.Client:
    transport = RetryingTransport(
        httpx.HTTPTransport(), policy, sleep=sleeps.append, clock=lambda: 0.0, random=lambda: 0.0
    )
    return httpx.Client(transport=transport, timeout=5)


def test_transport_retries_then_succeeds(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.steps = [(503, {}), ("drop", {}), (429, {"Retry-After": "3"}), (502, {})]
    sleeps: list[float] = []
    with _client(POLICY, sleeps) as client:
        response = client.post(url, content=b"payload")
    assert response.status_code == 200
    assert response.json() == {"echo": "payload"}  # the body was replayed intact
    assert script.hits == 5
    assert sleeps == [0.5, 1.0, 3.0, 2.0]  # backoff, Retry-After honoured as a floor


def test_transport_gives_up_bounded(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.steps = [(503, {})] * 10
    sleeps: list[float] = []
    with _client(POLICY, sleeps) as client, pytest.raises(GaveUp) as info:
        client.post(url, content=b"x")
    assert script.hits == POLICY.attempts
    assert len(sleeps) == POLICY.attempts - 1
    assert "gave up after 5 attempt(s)" in str(info.value) and "HTTP 503" in str(info.value)


@pytest.mark.parametrize("status", [401, 403])
def test_transport_auth_is_final(scripted: tuple[str, Script], status: int) -> None:
    url, script = scripted
    script.steps = [(status, {})]
    sleeps: list[float] = []
    with _client(POLICY, sleeps) as client, pytest.raises(Refused):
        client.post(url, content=b"x")
    assert script.hits == 1 and sleeps == []


@pytest.mark.parametrize("status", [400, 404, 422])
def test_transport_validation_is_returned_not_retried(
    scripted: tuple[str, Script], status: int
) -> None:
    url, script = scripted
    script.steps = [(status, {})]
    sleeps: list[float] = []
    with _client(POLICY, sleeps) as client:
        assert client.post(url, content=b"x").status_code == status
    assert script.hits == 1 and sleeps == []
