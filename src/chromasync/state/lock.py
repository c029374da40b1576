"""One writer per data dir: a kernel lock (`fcntl.flock`) on `<data dir>/lock`.

Design notes: docs/internals.md, `state/lock.py`.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..datadir import FILE_MODE, OWNER_MARK, READER_MARK, WANT_FILE, make_private_dir
from ..errors import LockError
from .snapshots import LOCK_FILE, invalidate


@dataclass
class _Held:
    """This process's hold on one data dir."""

    fd: int | None = None
    refs: int = 0
    writer: threading.Lock = field(default_factory=threading.Lock)
    writer_name: str = ""


_GUARD = threading.Lock()
_HELD: dict[str, _Held] = {}


class StoreLock:
    """The data dir's lock. `owner=True` holds it for the process without taking the writer."""

    def __init__(
        self,
        data_dir: Path,
        wait: bool = False,
        timeout: float | None = None,
        *,
        owner: bool = False,
        reader: bool = False,
        name: str = "",
    ) -> None:
        """`reader`: an owner that never writes (keeps the snapshots; yields to anyone)."""
        self.path = data_dir / LOCK_FILE
        self.wait = wait
        self.timeout = timeout
        self.owner = owner
        self.reader = reader and owner
        self.name = name or "an ingest"
        self._key = ""
        self._acquired = False
        self._writing = False

    def acquire(self) -> None:
        make_private_dir(self.path.parent)
        self._key = str(self.path.resolve())
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        with _GUARD:
            held = _HELD.setdefault(self._key, _Held())
        if not self.owner:
            self._take_writer(held, deadline)
        try:
            with _GUARD:
                if held.fd is None:
                    held.fd = self._take_kernel_lock(deadline)
                held.refs += 1
        except BaseException:
            if self._writing:
                held.writer.release()
                self._writing = False
            raise
        self._acquired = True

    def _take_writer(self, held: _Held, deadline: float | None) -> None:
        if self.wait:
            left = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
            got = held.writer.acquire(timeout=left)
        else:
            got = held.writer.acquire(blocking=False)
        if not got:
            raise LockError(
                f"the data dir {str(self.path.parent)!r} is in use by {held.writer_name} "
                "in this process; wait for it to finish, or pass --wait"
            )
        held.writer_name = self.name
        self._writing = True

    def _take_kernel_lock(self, deadline: float | None) -> int:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        asked = 0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = _read_holder(fd)
                if not self.reader and is_reader(holder) and asked < 3:
                    asked += 1  # a reader started again meanwhile: ask once more, not forever
                    if ask_reader_to_leave(self.path.parent):
                        continue  # it left: the lock is free (or taken again)
                    os.close(fd)
                    raise LockError(
                        f"the data dir {str(self.path.parent)!r} is held by a reader "
                        f"({holder}) that did not leave within {READER_LEAVES_IN:g}s of being "
                        "asked; if it is the search daemon, `chromasync daemon stop` ends it"
                    ) from None
                owner = _long_running_owner(holder)
                if owner:  # it runs until stopped: waiting would wait forever
                    os.close(fd)
                    raise LockError(
                        f"the data dir {str(self.path.parent)!r} is owned by {owner}, which "
                        "runs until stopped; go through it (its REST API, or the CLI's "
                        "search and ingest, which use it) or stop it first"
                    ) from None
                if not self.wait or (deadline is not None and time.monotonic() > deadline):
                    os.close(fd)
                    raise LockError(
                        f"the data dir {str(self.path.parent)!r} is in use by {holder}; "
                        "wait for it to finish, or pass --wait"
                    ) from None
                time.sleep(0.1)
        if not self.reader:
            invalidate(str(self.path.parent))
        os.ftruncate(fd, 0)
        if self.reader:
            mark = READER_MARK
        elif self.owner:
            mark = f"{OWNER_MARK}{self.name}: "
        else:
            mark = ""
        text = f"pid {os.getpid()}: {mark}{' '.join(sys.argv)[:300]}\n"
        os.pwrite(fd, text.encode(), 0)  # at 0: reading the holder moved the file offset
        return fd

    def release(self) -> None:
        if not self._acquired:
            return
        self._acquired = False
        with _GUARD:
            held = _HELD[self._key]
            held.refs -= 1
            if held.refs == 0 and held.fd is not None:
                os.ftruncate(held.fd, 0)
                fcntl.flock(held.fd, fcntl.LOCK_UN)
                os.close(held.fd)
                held.fd = None
        if self._writing:
            self._writing = False
            held.writer.release()

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_holder(data_dir: Path) -> str | None:
    """Who holds the data dir's lock in another process ("pid N: command"), or None if free."""
    path = data_dir / LOCK_FILE
    if not path.exists():
        return None
    with _GUARD:
        held = _HELD.get(str(path.resolve()))
        if held is not None and held.fd is not None:
            return f"pid {os.getpid()} (this process)"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 400).decode("utf-8", "replace").strip()
            return text or "another process"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


#: How long a reader may take to leave once asked (it finishes the requests in flight).
READER_LEAVES_IN = 10.0


def is_reader(holder: str) -> bool:
    """The lock's holder, as `lock_holder` or a refusal names it, is marked as a reader."""
    text = holder.removeprefix("another process (").removesuffix(")")
    head, colon, rest = text.partition(": ")
    return bool(colon) and head.startswith("pid ") and rest.startswith(READER_MARK)


def ask_reader_to_leave(data_dir: Path | str, timeout: float = READER_LEAVES_IN) -> bool:
    """Say that someone waits for the lock (hold `lock.want` shared) and wait until the reader
    holding it has left: True when the lock is free, False when it was not in `timeout`."""
    try:
        want = os.open(
            os.path.join(data_dir, WANT_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE
        )
    except OSError:
        return False
    try:
        fcntl.flock(want, fcntl.LOCK_SH)  # a reader only tests it, for an instant
        deadline = time.monotonic() + timeout
        while True:
            if not _taken(Path(data_dir) / LOCK_FILE, os.O_RDONLY, fcntl.LOCK_SH):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
    finally:
        os.close(want)  # drops the shared hold


def someone_waits(data_dir: Path | str) -> bool:
    """A reader's check: does anyone wait for the lock it holds (`ask_reader_to_leave`)?"""
    return bool(_taken(os.path.join(data_dir, WANT_FILE), os.O_RDWR | os.O_CREAT, fcntl.LOCK_EX))


def _taken(path: Path | str, flags: int, lock: int) -> bool | None:
    """Another holds the kernel lock on `path` against a try of `lock` (None: `path` does not
    open; callers may hold `_GUARD`: no `lock_holder`)."""
    try:
        fd = os.open(path, flags | os.O_CLOEXEC, FILE_MODE)
    except OSError:
        return None
    try:
        fcntl.flock(fd, lock | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the hold taken above
    return False


def _long_running_owner(holder: str) -> str | None:
    """The holder as "`chromasync serve` (pid N)" when its line marks a long-running owner."""
    text = holder.removeprefix("another process (").removesuffix(")")
    head, colon, rest = text.partition(": ")
    if not colon or not head.startswith("pid ") or not rest.startswith(OWNER_MARK):
        return None
    name = rest.removeprefix(OWNER_MARK).partition(": ")[0]
    return f"`{name}` ({head})"


def _read_holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 400).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return f"another process ({text})" if text else "another process"
