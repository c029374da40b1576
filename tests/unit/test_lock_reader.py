"""The data dir's lock and its reader owner (`state.lock`): who it names after a wait, and
how a reader (the search daemon) makes way for a writer without losing the snapshots."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from chromasync.datadir import READER_MARK
from chromasync.state.lock import StoreLock, lock_holder, yield_reader

HOLD = r"""
import fcntl, os, signal, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, f"pid {os.getpid()}: {sys.argv[2]}{'x' * 120}\n".encode())
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))  # leaves when asked, as the daemon
print("held", flush=True)
time.sleep(float(sys.argv[3]))
"""


def _hold(data_dir: Path, mark: str, seconds: float) -> subprocess.Popen[str]:
    data_dir.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(data_dir / "lock"), mark, str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    with proc.stdout:
        assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_lock_taken_after_waiting_names_its_new_holder_from_the_first_byte(
    tmp_path: Path,
) -> None:
    holder = _hold(tmp_path, "chromasync ingest ", 0.5)
    with StoreLock(tmp_path, wait=True, timeout=60):
        text = (tmp_path / "lock").read_bytes()
    holder.wait(timeout=60)
    assert text.startswith(f"pid {os.getpid()}: ".encode())  # no NUL hole before it
    assert b"\0" not in text


def test_a_writer_asks_the_reader_daemon_to_leave_and_takes_the_lock(tmp_path: Path) -> None:
    reader = _hold(tmp_path, READER_MARK + "chromasync daemon run", 600)
    (tmp_path / "owner.json").write_text(json.dumps({"pid": reader.pid, "role": "daemon"}))
    with StoreLock(tmp_path):  # no --wait: a reader never stands in a writer's way
        assert reader.wait(timeout=60) == 0  # it was asked (SIGTERM) and left
        assert (tmp_path / "lock").read_text().startswith(f"pid {os.getpid()}: ")


def test_only_a_reader_named_by_owner_json_as_the_daemon_is_asked_to_leave(
    tmp_path: Path,
) -> None:
    writer = _hold(tmp_path, "chromasync ingest ", 600)
    try:
        (tmp_path / "owner.json").write_text(json.dumps({"pid": writer.pid, "role": "daemon"}))
        holder = lock_holder(tmp_path)
        assert holder is not None
        assert not yield_reader(tmp_path, holder)  # not marked as a reader: never signalled
        reader = _hold(tmp_path / "other", READER_MARK + "chromasync daemon run", 600)
        try:
            (tmp_path / "other" / "owner.json").write_text(
                json.dumps({"pid": reader.pid + 100_000, "role": "daemon"})
            )
            text = lock_holder(tmp_path / "other")
            assert text is not None
            assert not yield_reader(tmp_path / "other", text)  # owner.json names another pid
            assert reader.poll() is None
        finally:
            reader.kill()
            reader.wait()
        assert writer.poll() is None
    finally:
        writer.kill()
        writer.wait()


def test_a_reader_lock_keeps_the_snapshots_and_a_writer_lock_voids_them(tmp_path: Path) -> None:
    snapshots = tmp_path / "fastpath"
    snapshots.mkdir(parents=True)
    (snapshots / "a.snap").write_bytes(b"x")
    with StoreLock(tmp_path, owner=True, reader=True):
        text = (tmp_path / "lock").read_text()
    assert text.partition(": ")[2].startswith(READER_MARK)
    assert (snapshots / "a.snap").exists()
    with StoreLock(tmp_path):
        pass
    assert not (snapshots / "a.snap").exists()
