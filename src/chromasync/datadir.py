"""The data dir is private to its user: folders 0700, files 0600.

The data dir holds the indexed text (the keyword index, the embedding cache, snapshots), so
every folder chromasync creates in it is made with mode 0700 and every file with 0600,
whatever the umask. Chroma's own files lie in `chroma/`, a 0700 folder. A data dir that
already exists keeps its mode (it may be a folder the user chose); files chromasync
creates in it are still 0600.
"""

from __future__ import annotations

import os

DIR_MODE = 0o700
FILE_MODE = 0o600


def make_private_dir(path: str | os.PathLike[str]) -> None:
    """Create `path` (and its missing parents) with mode 0700; an existing folder is kept."""
    folder = os.fspath(path)
    if os.path.isdir(folder):
        return
    missing = []
    probe = os.path.abspath(folder)
    while not os.path.exists(probe) and probe != os.path.dirname(probe):
        missing.append(probe)
        probe = os.path.dirname(probe)
    for item in reversed(missing):
        try:
            os.mkdir(item, DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(item, DIR_MODE)


def create_private_file(path: str | os.PathLike[str]) -> None:
    """Create `path` empty with mode 0600 when it does not exist (before SQLite opens it:
    SQLite gives its journal and WAL files the mode of the database file)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)


def open_private(path: str | os.PathLike[str], mode: str = "w", encoding: str | None = None):  # type: ignore[no-untyped-def]
    """`open(path, mode)` for writing, creating the file 0600."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    fd = os.open(path, flags, FILE_MODE)
    return os.fdopen(fd, mode, encoding=encoding)


__all__ = ["DIR_MODE", "FILE_MODE", "create_private_file", "make_private_dir", "open_private"]
