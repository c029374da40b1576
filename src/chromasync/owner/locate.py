"""One owner per store: the long-running process that holds a data dir, and how to find it.

Chroma's embedded PersistentClient is not safe for several processes, and a process that
keeps it open (a service) would not see another process's writes. So a long-running
surface (`chromasync serve`, `chromasync watch`) becomes the data dir's *owner*: it holds
the data dir's lock (`lock.StoreLock(owner=True)`) for its whole life, and advertises itself
in `<data dir>/owner.json`:

    {"version": 1, "pid": 4242, "role": "serve", "url": "http://127.0.0.1:8765",
     "socket": "/path/to/data/owner.sock", "started": "2026-05-01T10:00:00+00:00"}

`socket` is a Unix socket (mode 0600) on which the owner serves the REST API to local
clients; `url` is its TCP address (`serve` only). Other processes find the owner with
`find_owner` and talk to it through that socket (`client.OwnerClient`): the CLI's `search`
and `ingest`, and `chromasync mcp`. The file is trusted only while the lock is held, so a
file left behind by a killed owner is ignored.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..datadir import OWNER_FILE as OWNER_FILE
from ..datadir import SOCKET_FILE as SOCKET_FILE
from ..datadir import open_private
from ..state.lock import lock_holder

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
    folder = Path(tempfile.gettempdir()) / f"chromasync-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder / f"{digest}.sock"


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
    """Advertise `info` (atomically: temp file, fsync, rename). The caller holds the lock."""
    path = data_dir / OWNER_FILE
    tmp = path.with_name(f"{OWNER_FILE}.{os.getpid()}.tmp")
    with open_private(tmp, "w", encoding="utf-8") as out:
        json.dump(info.as_json(), out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def clear_owner(data_dir: Path, info: OwnerInfo) -> None:
    """Remove the advertisement if it is still ours."""
    current = read_owner(data_dir)
    if current is not None and current.pid == info.pid:
        (data_dir / OWNER_FILE).unlink(missing_ok=True)


def read_owner(data_dir: Path) -> OwnerInfo | None:
    try:
        data = json.loads((data_dir / OWNER_FILE).read_text(encoding="utf-8"))
        return OwnerInfo(
            pid=int(data["pid"]),
            role=str(data["role"]),
            socket=str(data["socket"]),
            url=data.get("url"),
            started=str(data.get("started", "")),
            key=str(data.get("key", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


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
    "read_owner",
    "socket_path",
    "write_owner",
]
