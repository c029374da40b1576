"""The data dir's lock and its reader owner (`state.lock`): who it names after a wait, and
how a reader (the search daemon) makes way for a writer without losing the snapshots: the
writer says it waits (`lock.want`), the reader sees it and leaves; no pid, no signal."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chromasync.datadir import OWNER_MARK, READER_MARK
from chromasync.state import lock
from chromasync.state.lock import StoreLock, is_reader, lock_holder, someone_waits

HOLD = r"""
import fcntl, os, sys, time
sys.path.insert(0, sys.argv[5])
from chromasync.state.lock import someone_waits
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, f"pid {os.getpid()}: {sys.argv[2]}{'x' * 120}\n".encode())
print("held", flush=True)
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:  # leaves when someone waits, as the daemon does
    if sys.argv[4] == "listens" and someone_waits(os.path.dirname(sys.argv[1])):
        sys.exit(0)
    time.sleep(0.02)
"""
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _hold(data_dir: Path, mark: str, seconds: float, listens: bool = True) -> subprocess.Popen[str]:
    data_dir.mkdir(exist_ok=True)
    how = "listens" if listens else "deaf"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(data_dir / "lock"), mark, str(seconds), how, SRC],
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


def test_a_writer_asks_the_reader_to_leave_and_takes_the_lock(tmp_path: Path) -> None:
    reader = _hold(tmp_path, READER_MARK + "chromasync daemon run", 600)
    with StoreLock(tmp_path):  # no --wait: a reader never stands in a writer's way
        assert reader.wait(timeout=60) == 0  # it saw someone wait, and left
        assert (tmp_path / "lock").read_text().startswith(f"pid {os.getpid()}: ")
    assert not someone_waits(tmp_path)  # nobody waits once the writer has the lock


def test_a_holder_not_marked_as_a_reader_is_never_asked(tmp_path: Path) -> None:
    writer = _hold(tmp_path, "chromasync ingest ", 600)
    try:
        holder = lock_holder(tmp_path)
        assert holder is not None and not is_reader(holder)
        began = time.monotonic()
        with pytest.raises(lock.LockError, match="in use by"):
            StoreLock(tmp_path).acquire()
        assert time.monotonic() - began < 5  # refused at once, not after a reader's wait
        assert writer.poll() is None
    finally:
        writer.kill()
        writer.wait()


def test_a_reader_that_does_not_leave_is_named_after_a_bounded_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frozen or deaf reader: the writer is refused after `READER_LEAVES_IN`, not forever,
    and is not told that the data dir's owner "runs until stopped"."""
    monkeypatch.setattr(lock, "READER_LEAVES_IN", 0.5)
    monkeypatch.setattr(lock.ask_reader_to_leave, "__defaults__", (0.5,))
    reader = _hold(tmp_path, READER_MARK + "chromasync daemon run", 600, listens=False)
    try:
        began = time.monotonic()
        with pytest.raises(lock.LockError, match="did not leave") as refused:
            StoreLock(tmp_path).acquire()
        assert time.monotonic() - began < 10
        assert "runs until stopped" not in str(refused.value)
        assert "daemon stop" in str(refused.value)
    finally:
        reader.kill()
        reader.wait()


def test_a_long_running_owner_is_named_from_its_own_line(tmp_path: Path) -> None:
    owner = _hold(tmp_path, OWNER_MARK + "chromasync serve: python -m chromasync serve", 600)
    try:
        with pytest.raises(lock.LockError) as refused:
            StoreLock(tmp_path, wait=True).acquire()  # waiting would wait forever
        text = str(refused.value)
        assert f"owned by `chromasync serve` (pid {owner.pid})" in text
        assert "runs until stopped" in text
    finally:
        owner.kill()
        owner.wait()


def test_the_lock_knows_nothing_of_the_daemon() -> None:
    """No owner.json, no pid parsed to be signalled: that is the owner's business."""
    source = Path(lock.__file__).read_text(encoding="utf-8")
    for word in ("owner.json", "OWNER_FILE", "import signal", "os.kill", "import json"):
        assert word not in source, word


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
