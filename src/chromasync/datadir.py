"""Every file and folder chromasync keeps under a data dir, named once.

    <data dir>/
      chroma/                   the embedded Chroma store (when no server is configured)
      state.sqlite3             manifest and keyword index (`state.manifest`)
      embeddings.sqlite3        vectors cached by content hash (`embed.cache`)
      keyword-mirror.sqlite3    keyword index rebuilt from a shared collection (`retrieve.mirror`)
      lock                      the one-writer kernel lock (`state.lock`)
      fastpath/                 snapshots of unchanged re-runs (`state.snapshots`)
      owner.json, owner.sock    the long-lived owner and its socket (`owner.locate`)
      repos/                    clones of git sources (`corpus.git`)

It is private to its user: it holds the indexed text (the keyword index, the embedding
cache, snapshots), so every folder chromasync creates in it is made with mode 0700 and
every file with 0600, whatever the umask. Chroma's own files lie in `chroma/`, a 0700
folder. A data dir that already exists keeps its mode (it may be a folder the user chose);
files chromasync creates in it are still 0600.
"""

from __future__ import annotations

import os

CHROMA_DIR = "chroma"
STATE_FILE = "state.sqlite3"
CACHE_FILE = "embeddings.sqlite3"
MIRROR_FILE = "keyword-mirror.sqlite3"
LOCK_FILE = "lock"
SNAPSHOT_DIR = "fastpath"
OWNER_FILE = "owner.json"
SOCKET_FILE = "owner.sock"
REPOS_DIR = "repos"

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


__all__ = [
    "CACHE_FILE",
    "CHROMA_DIR",
    "DIR_MODE",
    "FILE_MODE",
    "LOCK_FILE",
    "MIRROR_FILE",
    "OWNER_FILE",
    "REPOS_DIR",
    "SNAPSHOT_DIR",
    "SOCKET_FILE",
    "STATE_FILE",
    "create_private_file",
    "make_private_dir",
    "open_private",
]
