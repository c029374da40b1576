"""Every file and folder chromasync keeps under a data dir, named once.

    <data dir>/
      chroma/                   the embedded Chroma store (when no server is configured)
      state.sqlite3             manifest and keyword index (`state.manifest`)
      embeddings.sqlite3        vectors cached by content hash (`embed.cache`)
      keyword-mirror.sqlite3    keyword index rebuilt from a shared collection (`retrieve.mirror`)
      lock                      the one-writer kernel lock (`state.lock`)
      fastpath/                 snapshots of unchanged re-runs (`state.snapshots`)
      owner.json, owner.sock    the long-lived owner and its socket (`owner.locate`)
      daemon.log                the search daemon's output (`owner.daemon`)
      repos/                    clones of git sources (`corpus.git`)
      summaries.json            summaries per group, by their chunks' hashes (`answer.summaries`)

It is private to its user: it holds the indexed text (the keyword index, the embedding
cache, snapshots), so every folder chromasync creates in it is made with mode 0700 and
every file with 0600, whatever the umask. Chroma's own files lie in `chroma/`, a 0700
folder. A data dir that already exists keeps its mode (it may be a folder the user chose);
files chromasync creates in it are still 0600.

Constants, `guess` (where a command line's data dir most likely is, read without the
config file's parser) and `split_argv` (a command line's options, read without click).
The console script's fast paths import this module.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Mapping, Sequence

CHROMA_DIR = "chroma"
STATE_FILE = "state.sqlite3"
CACHE_FILE = "embeddings.sqlite3"
MIRROR_FILE = "keyword-mirror.sqlite3"
LOCK_FILE = "lock"
SNAPSHOT_DIR = "fastpath"
OWNER_FILE = "owner.json"
SOCKET_FILE = "owner.sock"
DAEMON_LOG = "daemon.log"
#: What a command says (on stderr) when it starts the search daemon.
DAEMON_NOTICE = (
    "starting the search daemon for this data dir (it keeps the model warm and exits after "
    "10 minutes idle; `chromasync daemon stop`, CHROMASYNC_NO_DAEMON=1)"
)
REPOS_DIR = "repos"
SUMMARIES_FILE = "summaries.json"

#: How the search daemon marks the lock file after "pid N: ": it holds the lock as a reader,
#: which writes nothing (`state.lock.yield_reader`).
READER_MARK = "[reader] "

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


def guess(options: Mapping[str, str], environ: Mapping[str, str], cwd: str) -> str | None:
    """Where the data dir of a command line with these `options` most likely is, without
    parsing the config file (`--data-dir`, `CHROMASYNC_DATA_DIR`, the config's `data_dir`)."""
    value = options.get("--data-dir") or environ.get("CHROMASYNC_DATA_DIR")
    if value:
        return os.path.join(cwd, os.path.expanduser(value))
    named = options.get("--config") or environ.get("CHROMASYNC_CONFIG")
    config = os.path.join(cwd, os.path.expanduser(named or "chromasync.yaml"))
    try:
        with open(config, "rb") as handle:
            text = handle.read()
    except OSError:
        return None if named else os.path.join(cwd, ".chromasync")
    if b"data_dir" not in text:
        return os.path.join(cwd, ".chromasync")
    for line in text.decode("utf-8", "replace").splitlines():
        _, found, after = line.partition("data_dir")
        if found and after.lstrip()[:1] in (":", "="):
            raw = after.lstrip()[1:]
            for stop in ",}#":
                raw = raw.split(stop, 1)[0]
            raw = raw.strip().strip("'\"")
            base = os.path.dirname(os.path.realpath(config))
            return os.path.normpath(os.path.join(base, os.path.expanduser(raw))) if raw else None
    return None


def split_argv(
    argv: Sequence[str], flags: Collection[str], values: Collection[str]
) -> list[tuple[int, str, str | None]] | None:
    """A fast path's command line after its command word, in order: (index, option, value)
    for each option (value None for one of `flags`) and (index, "", text) for each argument;
    None when the CLI must run it (an unknown option, a flag given a value, a value missing)."""
    out: list[tuple[int, str, str | None]] = []
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg.startswith("-") and arg != "-":
            name, eq, value = arg.partition("=")
            if name in flags and not eq:
                out.append((index, name, None))
            elif name in values and name not in flags:
                if not eq:
                    index += 1
                    if index == len(argv):
                        return None
                    value = argv[index]
                out.append((index, name, value))
            else:
                return None  # --help, --group-by, --rerank, --, anything unknown
        else:
            out.append((index, "", arg))
        index += 1
    return out


__all__ = [
    "CACHE_FILE",
    "CHROMA_DIR",
    "DAEMON_LOG",
    "DAEMON_NOTICE",
    "DIR_MODE",
    "FILE_MODE",
    "LOCK_FILE",
    "MIRROR_FILE",
    "OWNER_FILE",
    "READER_MARK",
    "REPOS_DIR",
    "SNAPSHOT_DIR",
    "SOCKET_FILE",
    "STATE_FILE",
    "SUMMARIES_FILE",
    "create_private_file",
    "guess",
    "make_private_dir",
    "open_private",
    "split_argv",
]
