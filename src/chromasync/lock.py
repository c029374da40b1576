"""One writer per data dir: a kernel lock (`fcntl.flock`) on `<data dir>/lock`.

The kernel drops the lock when its holder dies, even by SIGKILL, so there is no stale-lock
cleanup. The file holds the holder's pid and command line, to name it in the refusal.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path
from types import TracebackType

from .errors import LockError

LOCK_FILE = "lock"


class StoreLock:
    def __init__(self, data_dir: Path, wait: bool = False, timeout: float | None = None) -> None:
        self.path = data_dir / LOCK_FILE
        self.wait = wait
        self.timeout = timeout
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not self.wait or (deadline is not None and time.monotonic() > deadline):
                    holder = _read_holder(fd)
                    os.close(fd)
                    raise LockError(
                        f"the data dir {str(self.path.parent)!r} is in use by {holder}; "
                        "wait for it to finish, or pass --wait"
                    ) from None
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}: {' '.join(sys.argv)[:300]}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 400).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return f"another process ({text})" if text else "another process"
