"""A file that changes while it is read is retried, then skipped and counted; never torn."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

from chromasync.corpus.read import read_file
from chromasync.records import FileStat


def _stat(path: Path, rel: str) -> FileStat:
    st = path.stat()
    return FileStat(rel, str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def test_file_appended_during_read_is_skipped_or_consistent(tmp_path: Path) -> None:
    path = tmp_path / "growing.md"
    path.write_text("# Log\n\n" + "line of text\n" * 500_000)
    # Another process (not a thread: no GIL between them) appends without pause.
    script = (
        "import os, sys\n"
        "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
        "while True: os.write(fd, b'x\\n')\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", script, str(path)])
    try:
        time.sleep(0.2)
        outcomes = []
        deadline = time.monotonic() + 20  # on a loaded machine the writer may lag
        while time.monotonic() < deadline and not any(o.skip for o in outcomes[-1:]):
            outcomes.append(read_file(_stat(path, "growing.md")))
    finally:
        writer.kill()
        writer.wait()
    for outcome in outcomes:
        if outcome.skip is not None:
            assert outcome.skip.reason == "changed-during-read"
        else:  # a read that saw no change must be self-consistent
            assert outcome.document is not None
            assert outcome.stat.size == len(outcome.document.text.encode())
    assert any(o.skip is not None for o in outcomes)
    final = read_file(_stat(path, "growing.md"))
    assert final.document is not None
    assert final.file_hash == hashlib.sha256(path.read_bytes()).hexdigest()
