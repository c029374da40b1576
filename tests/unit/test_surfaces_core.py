"""Pure parts of the surfaces: bearer checks, path text checks, debounce, jobs, the lock."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from chromasync.corpus.paths import check_path_text, relative_path
from chromasync.errors import ChromasyncError, LockError, SourceError
from chromasync.owner.jobs import JobRunner
from chromasync.rest import authorized, is_public
from chromasync.state.lock import StoreLock, lock_holder
from chromasync.watch import Debounce


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        (None, False),
        ("", False),
        ("Bearer s3cret", True),
        ("bearer s3cret", True),
        ("BEARER s3cret", True),
        ("Bearer  s3cret ", True),
        ("Bearer s3cretx", False),
        ("Bearer s3cre", False),
        ("Bearer ", False),
        ("Basic s3cret", False),
        ("s3cret", False),
        ("Bearer s3cret extra", False),
    ],
)
def test_authorized(header: str | None, ok: bool) -> None:
    assert authorized(header, "s3cret") is ok


def test_public_paths_are_only_the_shell() -> None:
    for path in ("/health", "/", "/docs", "/openapi.json", "/static/app.js", "/static/app.css"):
        assert is_public(path)
    for path in ("/status", "/search", "/static/../status", "/static/secret", "/healthz", "/file"):
        assert not is_public(path)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "  ",
        "../x.md",
        "a/../../x.md",
        "%2e%2e/x.md",
        "%252e%252e%252fx.md",
        "..%2fx.md",
        "a\\b.md",
        "a\x00b.md",
        "a\nb.md",
        "\uff0e\uff0e/x.md",
        "~/x.md",
        "file:///etc/passwd",
        "C:\\x",
        "c:",
        "a/" + "x" * 300 + ".md",
    ],
)
def test_check_path_text_refuses(raw: str) -> None:
    with pytest.raises(SourceError) as info:
        check_path_text(raw)
    assert str(info.value)  # a message that says why


@pytest.mark.parametrize(
    ("raw", "rel"),
    [
        ("ok/plain.md", "ok/plain.md"),
        ("./ok/plain.md", "ok/plain.md"),
        ("ok//plain.md", "ok/plain.md"),
        ("names/percent%2e%2e%2f.md", "names/percent%2e%2e%2f.md"),
        ("names/dots..md", "names/dots..md"),
        ("names/colon:name.md", "names/colon:name.md"),
    ],
)
def test_relative_path_keeps_literal_names(raw: str, rel: str) -> None:
    assert relative_path(raw) == rel


@pytest.mark.parametrize("raw", ["/etc/passwd", ".", "./"])
def test_relative_path_refuses_absolute_and_root(raw: str) -> None:
    with pytest.raises(SourceError):
        relative_path(raw)


def test_debounce_merges_a_burst_and_caps_the_delay() -> None:
    d = Debounce(debounce=0.3, max_delay=2.0)
    assert d.next_deadline() is None
    for t in (0.0, 0.1, 0.2, 0.25):
        d.note("notes", t)
    assert d.due(0.5) == []  # 0.25 s since the last event
    assert d.next_deadline() == pytest.approx(0.55)
    assert d.due(0.56) == ["notes"]
    assert d.due(10.0) == []  # forgotten until the next event
    # a source that never goes quiet still runs after max_delay
    for step in range(30):
        d.note("busy", 1.0 + step * 0.1)
        due = d.due(1.0 + step * 0.1)
        if due:
            assert due == ["busy"] and step * 0.1 >= 2.0 - 1e-9
            break
    else:
        pytest.fail("a busy source was never synced")


def test_job_runner_runs_in_order_and_merges_queued_duplicates() -> None:
    gate = threading.Event()
    ran: list[str] = []

    def work(label: str):  # type: ignore[no-untyped-def]
        def run(progress):  # type: ignore[no-untyped-def]
            gate.wait(10)
            progress("read", 1, 1)
            ran.append(label)
            if label == "bad":
                raise SourceError("the root is gone")
            return [{"source": label}]

        return run

    runner = JobRunner()
    try:
        first = runner.submit(["a"], work("a"), key="a")
        while runner.get(first.id)["status"] != "running":
            time.sleep(0.01)
        second = runner.submit(["b"], work("b"), key="b")
        again = runner.submit(["b"], work("b"), key="b")
        bad = runner.submit(["bad"], work("bad"))
        dropped = runner.submit(["gone"], work("gone"))
        runner.drop_queued("gone")
        assert again.id == second.id  # merged while queued
        gate.set()
        assert runner.wait(bad.id, 10)["status"] == "failed"
        done = runner.wait(second.id, 10)
        assert done["status"] == "done" and done["summaries"] == [{"source": "b"}]
        assert done["progress"] == {"phase": "read", "done": 1, "total": 1}
        assert runner.get(bad.id)["error"] == "the root is gone"
        assert runner.get(dropped.id)["status"] == "failed"
        assert ran == ["a", "b", "bad"]
        with pytest.raises(ChromasyncError):
            runner.get("job-999")
    finally:
        runner.close(10)


def test_store_lock_owner_shares_with_its_own_writers(tmp_path: Path) -> None:
    owner = StoreLock(tmp_path, owner=True, name="chromasync serve")
    owner.acquire()
    try:
        assert lock_holder(tmp_path) is not None
        with StoreLock(tmp_path):  # an ingest in the owner's process
            with pytest.raises(LockError, match="in this process"):
                StoreLock(tmp_path).acquire()  # a second writer is refused
            done = threading.Event()

            def waiter() -> None:
                with StoreLock(tmp_path, wait=True):
                    done.set()

            thread = threading.Thread(target=waiter)
            thread.start()
            assert not done.wait(0.2)  # waits for the first writer
        thread.join(5)
        assert done.is_set()
    finally:
        owner.release()
    assert lock_holder(tmp_path) is None
