"""One owner per store: the long-running process that holds a data dir, and how to find it.

A long-running surface (`serve`, `watch`, `mcp`, the search daemon) holds the data dir's
lock for its whole life and advertises itself in `<data dir>/owner.json` (`OwnerInfo`: pid,
role, its Unix socket, `serve`'s URL), trusted only while that lock is held. The socket
(mode 0600) lies in the data dir or, when that path is too long, in a private
`chromasync-<uid>` folder under the temporary directory; clients talk to it only when it is
ours there (`dial.safe_socket`). Others find the owner with `find_owner` and go through its
socket (`client.OwnerClient`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..datadir import OWNER_FILE as OWNER_FILE
from ..datadir import SOCKET_FILE as SOCKET_FILE
from ..datadir import TOKEN_FILE, make_private_dir, read_owner_file, replace_file
from ..errors import ConfigError
from ..state.lock import lock_holder

log = logging.getLogger(__name__)

OWNER_SCHEMA = 1
#: Unix socket paths longer than this do not fit in `sockaddr_un` (108 bytes with the NUL).
_MAX_SOCKET_PATH = 100


@dataclass(frozen=True, slots=True)
class OwnerInfo:
    """The process that owns a data dir, as it advertised itself."""

    pid: int
    role: str
    socket: str
    url: str | None = None
    started: str = ""
    #: The search daemon's settings key (`owner.daemon.settings_key`); "" for other roles.
    key: str = ""

    def describe(self) -> str:
        where = f" at {self.url}" if self.url else ""
        return f"`chromasync {self.role}` (pid {self.pid}){where}"

    def as_json(self) -> dict[str, object]:
        return {
            "version": OWNER_SCHEMA,
            "pid": self.pid,
            "role": self.role,
            "url": self.url,
            "socket": self.socket,
            "started": self.started,
        } | ({"key": self.key} if self.key else {})


def socket_path(data_dir: Path) -> Path:
    """Where an owner of `data_dir` listens: in the data dir, or a short path under /tmp."""
    candidate = data_dir.resolve() / SOCKET_FILE
    if len(str(candidate).encode()) <= _MAX_SOCKET_PATH:
        return candidate
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
    return socket_folder() / f"{digest}.sock"


def socket_folder(tmp: str | None = None) -> Path:
    """`chromasync-<uid>` under the temporary directory when it is a private folder of ours
    (made so when absent); else, when someone else made it, made it world-writable or put a
    file or a link there, a fresh private folder beside it (never one another user controls)."""
    base = Path(tmp or tempfile.gettempdir())
    folder = base / f"chromasync-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:  # an unwritable temporary directory: mkdtemp says so below
        log.warning("cannot make %s: %s", folder, exc)
    if private_folder(folder):
        return folder
    log.warning("%s is not a private folder of this user; using a fresh one", folder)
    return Path(tempfile.mkdtemp(prefix=f"chromasync-{os.getuid()}-", dir=base))


def private_folder(folder: Path) -> bool:
    """`folder` is a real folder (not a link), owned by this user, that only it may enter."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


#: The most `service_token` reads of the token file.
_MAX_TOKEN = 4096


def service_token(data_dir: Path, *, create: bool = False) -> str | None:
    """The token `serve` and `mcp --http` require when no `CHROMASYNC_API_TOKEN` is set: made
    on first start (`create`), kept in `<data dir>/api-token` (0600, in the 0700 data dir),
    read by the CLI and other local clients. None when there is none (or it is unreadable, or
    not a private file of ours, or no token (`token_problem`): then it is not trusted, and a
    new one is not made over it). With `create`, such a file is a `ConfigError`: a service
    never runs without a token because its file is not right."""
    import secrets

    from ..config.settings import token_problem

    path = data_dir / TOKEN_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        if not create:
            return None
        make_private_dir(data_dir)
        token = secrets.token_urlsafe(32)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:  # another start made it first: use that one
            return service_token(data_dir)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(token + "\n")
        return token
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        private = stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
        private = private and not st.st_mode & 0o077
        text = handle.read(_MAX_TOKEN + 2).decode("utf-8", "replace").strip() if private else ""
    why = token_problem(text) if private else "is not a private file of this user (0600)"
    if why is None:
        return text
    if private:
        why = f"holds no token: a token {why.partition(' (')[0]}"
    if create:
        raise ConfigError(f"{path} {why}; remove it, and a new one is made on the next start")
    log.warning("%s %s: not used", path, why)
    return None


def new_owner(data_dir: Path, role: str, url: str | None, key: str = "") -> OwnerInfo:
    return OwnerInfo(
        key=key,
        pid=os.getpid(),
        role=role,
        socket=str(socket_path(data_dir)),
        url=url,
        started=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )


def write_owner(data_dir: Path, info: OwnerInfo) -> None:
    """Advertise `info` (whole: `datadir.replace_file`). The caller holds the lock."""
    replace_file(data_dir / OWNER_FILE, json.dumps(info.as_json()).encode("utf-8"))


def clear_owner(data_dir: Path, info: OwnerInfo) -> None:
    """Remove the advertisement if it is still ours."""
    current = read_owner(data_dir)
    if current is not None and current.pid == info.pid:
        (data_dir / OWNER_FILE).unlink(missing_ok=True)


def read_owner(data_dir: Path) -> OwnerInfo | None:
    """The advertisement as written (`datadir.read_owner_file`), live or not."""
    data = read_owner_file(data_dir)
    if data is None:
        return None
    url = data.get("url")
    return OwnerInfo(
        pid=int(str(data["pid"])),
        role=str(data["role"]),
        socket=str(data["socket"]),
        url=url if isinstance(url, str) else None,
        started=str(data.get("started", "")),
        key=str(data.get("key", "")),
    )


def find_owner(data_dir: Path) -> OwnerInfo | None:
    """The live owner of `data_dir` in another process, or None.

    Live means: `owner.json` names a pid, and that pid holds the data dir's lock now.
    """
    info = read_owner(data_dir)
    if info is None or info.pid == os.getpid():
        return None
    holder = lock_holder(data_dir)
    if holder is None or not holder.startswith(f"pid {info.pid}:"):
        return None
    return info


__all__ = [
    "OWNER_FILE",
    "OwnerInfo",
    "clear_owner",
    "find_owner",
    "new_owner",
    "private_folder",
    "read_owner",
    "service_token",
    "socket_folder",
    "socket_path",
    "write_owner",
]
