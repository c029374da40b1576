"""Every file and folder chromasync keeps under a data dir, named once. The console
script's fast paths import this module: standard library only.

Design notes: docs/internals.md, `datadir.py`.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

CHROMA_DIR = "chroma"
STATE_FILE = "state.sqlite3"
CACHE_FILE = "embeddings.sqlite3"
MIRROR_FILE = "keyword-mirror.sqlite3"
LOCK_FILE = "lock"
WANT_FILE = "lock.want"
SNAPSHOT_DIR = "fastpath"
OWNER_FILE = "owner.json"
SOCKET_FILE = "owner.sock"
TOKEN_FILE = "api-token"  # noqa: S105 - a file name
DAEMON_LOG = "daemon.log"
REPOS_DIR = "repos"
SUMMARIES_FILE = "summaries.json"
MODELS_FILE = "models.json"
MODELS_DIR = "models"

#: How a reader owner (the search daemon) marks the lock file after "pid N: ": it writes
#: nothing, and leaves when someone waits for the lock (`state.lock.someone_waits`).
READER_MARK = "[reader] "
#: How a long-running owner (serve, watch, mcp) marks it, before its name and ": ".
OWNER_MARK = "[owner] "

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
    """`open(path, mode)` for writing, creating the file 0600: "w"/"wb" truncate it, "a"/"ab"
    append to it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC
    flags |= os.O_APPEND if "a" in mode else os.O_TRUNC
    fd = os.open(path, flags, FILE_MODE)
    return os.fdopen(fd, mode, encoding=encoding)


def replace_file(
    path: str | os.PathLike[str], data: bytes, *, mode: int = FILE_MODE, durable: bool = True
) -> None:
    """Put `data` at `path` whole: a reader sees the old file or the new one, never a part.
    It is written to a temporary file of its own in the same folder (hidden, `mode`: 0600
    unless said, whatever the umask), synced to disk when `durable` (a cache made again
    from what it saves need not be), then renamed over `path`; the temporary file is
    removed when anything fails."""
    folder, name = os.path.split(os.fspath(path))
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.lexists(temporary):  # ours alone: its name is this call's
            os.unlink(temporary)
        raise


#: The most `active_dir` reads of models.json.
MAX_MODELS_FILE = 256 * 1024


def active_profile(data_dir: str | os.PathLike[str]) -> str | None:
    """The name of the model profile `models.json` makes active in `data_dir`, or None (no
    file, no active profile, or a file that cannot be read: the data dir's own index).
    `json` is imported only when the file exists: the fast path of an unchanged re-run
    stays without it."""
    path = os.path.join(data_dir, MODELS_FILE)
    if not os.path.isfile(path):
        return None
    import json

    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read(MAX_MODELS_FILE))
    except (OSError, ValueError, RecursionError):
        return None
    name = data.get("active") if isinstance(data, dict) else None
    return name if isinstance(name, str) and name else None


def side_dir(data_dir: str | os.PathLike[str], name: str) -> str:
    """The folder of profile `name`'s side index (a data dir of its own)."""
    return os.path.join(data_dir, MODELS_DIR, name)


def cache_path(data_dir: str | os.PathLike[str]) -> str:
    """The embedding cache a data dir's ingests use: its own `embeddings.sqlite3`, except for
    a model profile's side index, which shares its data dir's (vectors are keyed by model
    and variant, so they never mix; a side build reuses what the cache already holds)."""
    folder = os.path.abspath(data_dir)
    parent = os.path.dirname(folder)
    home = os.path.dirname(parent)
    if os.path.basename(parent) == MODELS_DIR and os.path.isfile(os.path.join(home, MODELS_FILE)):
        return os.path.join(home, CACHE_FILE)
    return os.path.join(folder, CACHE_FILE)


def active_dir(data_dir: str) -> str:
    """The data dir searches and ingests of `data_dir` use: the active profile's side index
    when `models.json` names one, else `data_dir` itself."""
    name = active_profile(data_dir)
    return side_dir(data_dir, name) if name else data_dir


#: The most `read_owner_file` reads: an advertisement is a few hundred bytes.
MAX_OWNER_FILE = 64 * 1024


def read_owner_file(data_dir: str | os.PathLike[str]) -> dict[str, object] | None:
    """`owner.json` as a dict with an int `pid` and str `role` and `socket`, or None when it
    is missing, unreadable or malformed. The one reader of the file (`owner.locate` builds its
    `OwnerInfo` from it; the stdlib daemon client uses it as it is). A dict, not a record: the
    console script's fast paths import this module and nothing else of the owner."""
    import json

    try:
        with open(os.path.join(data_dir, OWNER_FILE), "rb") as handle:
            data = json.loads(handle.read(MAX_OWNER_FILE))
        if not isinstance(data, dict):
            return None
        data["pid"], data["role"], data["socket"] = (
            int(data["pid"]),
            str(data["role"]),
            str(data["socket"]),
        )
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    return data


CONFIG_ENV = "CHROMASYNC_CONFIG"
CONFIG_FILE_NAME = "chromasync.yaml"


def config_path(flag: str | None, environ: Mapping[str, str], cwd: str) -> tuple[str, bool]:
    """The config file a command reads, and whether it was named: `--config` (`flag`), else
    `CHROMASYNC_CONFIG`, else `chromasync.yaml` in `cwd` (which may be absent). The one
    finder: `config.resolve.find_config_file` checks what it finds."""
    named = flag or environ.get(CONFIG_ENV)
    return os.path.join(cwd, os.path.expanduser(named or CONFIG_FILE_NAME)), bool(named)


def config_bytes(flag: str | None, environ: Mapping[str, str], cwd: str) -> bytes | None:
    """The bytes of the config file a command reads (`config_path`), None when absent."""
    try:
        with open(config_path(flag, environ, cwd)[0], "rb") as handle:
            return handle.read()
    except OSError:
        return None


def guess_from(
    options: Mapping[str, str], environ: Mapping[str, str], cwd: str, text: bytes | None
) -> str | None:
    """The data dir of a command line with these `options` (`--data-dir`, `--config`),
    given its config file's bytes (`config_bytes`), without the config file's parser; None
    when this reading is not sure (the CLI then resolves it). The active model profile's
    side index when the data dir has one (`active_dir`)."""
    value = options.get("--data-dir") or environ.get("CHROMASYNC_DATA_DIR")
    if value:
        return active_dir(os.path.join(cwd, os.path.expanduser(value)))
    config, named = config_path(options.get("--config"), environ, cwd)
    if text is None:
        return None if named else active_dir(os.path.join(cwd, ".chromasync"))
    if b"data_dir" not in text:
        return active_dir(os.path.join(cwd, ".chromasync"))
    raw = _file_data_dir(text.decode("utf-8", "replace"), config.endswith(".toml"))
    if raw is None:
        return None
    base = os.path.realpath(os.path.dirname(config))
    return active_dir(os.path.normpath(os.path.join(base, os.path.expanduser(raw))))


#: The tables a config file's `data_dir` may sit in (`config.settings`: its `file` keys).
_TABLES = ("store", "server", "chromasync")
#: Plain YAML scalars that are no string.
_NOT_TEXT = {"", "~", "null", "true", "false", "yes", "no", "on", "off"}


def _file_data_dir(text: str, toml: bool) -> str | None:
    """The config file's one `data_dir` value, when it is written in a form this reads
    exactly: one mention of `data_dir`, as a key of `store`, `server` or `chromasync` (a
    block or a one-line flow mapping in YAML, a table in TOML), a plain or quoted string
    without escapes. None for anything else."""
    lines = [x for x in text.splitlines() if x.strip() and not x.lstrip().startswith("#")]
    found = [i for i, line in enumerate(lines) if "data_dir" in line]
    if len(found) != 1 or text.count("data_dir") != 1:
        return None
    at = found[0]
    head, _, after = lines[at].partition("data_dir")
    if toml:
        tables = [x.strip() for x in lines[:at] if x.lstrip().startswith("[")]
        if head.strip() or not tables or tables[-1].strip("[]") not in _TABLES:
            return None
        value = after.lstrip()[1:].split(" #", 1)[0].strip()
        return _yaml_text(value) if after.lstrip()[:1] == "=" and value[:1] in "'\"" else None
    if after[:1] != ":" or (after[1:2] and not after[1:2].isspace()):
        return None
    table, brace, rest = head.partition(": {")
    if brace:  # `store: {data_dir: x, ...}` on one line
        if table not in _TABLES or any(c in rest for c in "{}[]'\"#"):
            return None
        if rest and not rest.rstrip().endswith(","):
            return None
        value = after[1:].split(",", 1)[0].split("}", 1)[0]
        return None if "}" not in after or "#" in value else _yaml_text(value.strip())
    tops = [i for i in range(at) if not lines[i][:1].isspace()]
    if not tops or lines[tops[-1]].split(" #")[0].rstrip() not in [f"{t}:" for t in _TABLES]:
        return None
    indent = len(head)
    first = lines[tops[-1] + 1]
    if head.strip() or not indent or len(first) - len(first.lstrip(" ")) != indent:
        return None
    return _yaml_text(after[1:].split(" #", 1)[0].strip())


def _yaml_text(value: str) -> str | None:
    """A YAML scalar as its string: plain (not a number, bool or null), or quoted without
    escapes; None for anything else."""
    if value[:1] in ("'", '"'):
        inner = value[1:-1]
        return (
            inner
            if len(value) > 1
            and value[-1] == value[0]
            and not any(c in inner for c in (value[0], "\\"))
            else None
        )
    if value.lower() in _NOT_TEXT or value[:1] in "&*!|>%@`{[,#?:-" or ": " in value:
        return None
    try:
        float(value)
    except ValueError:
        return value
    return None


__all__ = [
    "CACHE_FILE",
    "CHROMA_DIR",
    "CONFIG_ENV",
    "CONFIG_FILE_NAME",
    "DAEMON_LOG",
    "DIR_MODE",
    "FILE_MODE",
    "LOCK_FILE",
    "MAX_MODELS_FILE",
    "MIRROR_FILE",
    "MODELS_DIR",
    "MODELS_FILE",
    "OWNER_FILE",
    "OWNER_MARK",
    "READER_MARK",
    "REPOS_DIR",
    "SNAPSHOT_DIR",
    "SOCKET_FILE",
    "STATE_FILE",
    "SUMMARIES_FILE",
    "TOKEN_FILE",
    "WANT_FILE",
    "active_dir",
    "active_profile",
    "cache_path",
    "config_bytes",
    "config_path",
    "create_private_file",
    "guess_from",
    "make_private_dir",
    "open_private",
    "read_owner_file",
    "replace_file",
    "side_dir",
]
