"""The search daemon as the console script's stdlib client reaches it (`fastsearch`).

`fastsearch.daemon_search` runs before chromasync's stages are imported, so everything here
uses the standard library only, imported where it is used, and the base's `datadir`: find
the data dir's daemon (`owner.json`, trusted only while the daemon holds the lock as a
reader), check that nothing owns the data dir before starting one, probe its socket, and
send one GET over it. The daemon itself and the full CLI's side are in `owner.daemon`.
"""

from __future__ import annotations

import os

from ..datadir import STATE_FILE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

#: The most a daemon's answer may hold (bytes): a search prints far less.
MAX_REPLY = 64 * 1024 * 1024


def nobody_owns(data_dir: str) -> bool:
    """The data dir holds an index and its lock is free (no writer, no owner of any role)."""
    import fcntl

    if not os.path.exists(os.path.join(data_dir, STATE_FILE)):
        return False  # nothing indexed here (or a server store): the CLI decides
    try:
        fd = os.open(os.path.join(data_dir, "lock"), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def listening(path: str) -> bool:
    """Something accepts connections on the Unix socket `path` (a dead owner's file does not)."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def daemon_socket(data_dir: str) -> str | None:
    """The socket of the data dir's daemon, when one advertises itself and holds the lock as
    a reader (a killed one's leftovers are ignored: its lock is free)."""
    import fcntl
    import json

    try:
        with open(os.path.join(data_dir, "owner.json"), "rb") as handle:
            info = json.loads(handle.read(64 * 1024))
        if info.get("role") != "daemon":
            return None
        pid, path = int(info["pid"]), str(info["socket"])
        fd = os.open(os.path.join(data_dir, "lock"), os.O_RDONLY | os.O_CLOEXEC)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # held: by the daemon?
            text = os.read(fd, 400).decode("utf-8", "replace")
            return path if text.startswith(f"pid {pid}: ") else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None  # free: nobody runs
    finally:
        os.close(fd)


def get(
    socket_path: str, route: str, params: Sequence[tuple[str, str]], key: str, token: str | None
) -> bytes | None:
    """GET `route` over the Unix socket (HTTP/1.1, closed after one answer): the body of a
    200 answer, else None."""
    import socket
    from urllib.parse import urlencode

    head = [
        f"GET {route}?{urlencode(list(params))} HTTP/1.1",
        "Host: localhost",
        "Connection: close",
        f"X-Chromasync-Key: {key}",
    ]
    if token:
        head.append(f"Authorization: Bearer {token}")
    request = ("\r\n".join(head) + "\r\n\r\n").encode("utf-8", "surrogateescape")
    chunks: list[bytes] = []
    size = 0
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(120.0)
            conn.connect(socket_path)
            conn.sendall(request)
            while True:
                chunk = conn.recv(1 << 16)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_REPLY:
                    return None
                chunks.append(chunk)
    except (OSError, UnicodeError):
        return None
    head_bytes, sep, body = b"".join(chunks).partition(b"\r\n\r\n")
    status = head_bytes.split(b"\r\n", 1)[0].split(b" ")
    if not sep or len(status) < 2 or status[1] != b"200":
        return None
    if b"\r\ntransfer-encoding: chunked" in head_bytes.lower():
        return None  # the daemon's JSON answers carry a length; anything else: the CLI
    return body
