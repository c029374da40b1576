"""`datadir.replace_file`, the one way chromasync replaces a file whole: the models file,
the owner file, the summaries cache, the fast paths' snapshots, the sources file and the
bf16 check's record."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from chromasync.datadir import replace_file


def test_the_file_is_private_whatever_the_umask(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    old = os.umask(0)
    try:
        replace_file(target, b"one")
    finally:
        os.umask(old)
    assert target.read_bytes() == b"one" and target.stat().st_mode & 0o777 == 0o600
    replace_file(target, b"two", mode=0o664, durable=False)  # a mode said is kept exactly
    assert target.read_bytes() == b"two" and target.stat().st_mode & 0o777 == 0o664
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_a_failed_replace_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()  # a folder where the file should go: the rename fails
    with pytest.raises(OSError):
        replace_file(tmp_path / "taken", b"data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    with pytest.raises(FileNotFoundError):  # no folder: nothing is made
        replace_file(tmp_path / "gone" / "f", b"data")


def test_writers_at_once_each_write_whole(tmp_path: Path) -> None:
    """Threads of one process (a service) each have their own temporary file: the file is
    always one writer's bytes, whole (a name made of the pid alone was shared)."""
    target = tmp_path / "cache.json"
    payloads = [bytes([65 + n]) * 200_000 for n in range(8)]
    errors: list[BaseException] = []

    def write(data: bytes) -> None:
        try:
            for _ in range(20):
                replace_file(target, data, durable=False)
        except BaseException as exc:  # the test's own report
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert target.read_bytes() in payloads
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache.json"]
