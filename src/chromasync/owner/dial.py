"""The search daemon from outside, in the standard library only: find, check, start, ask.

The console script's client (`fastsearch.daemon_search`) runs before chromasync's stages
are imported, and the full CLI's side (`owner.daemon`) builds on the same parts, so there
is one of each, here:

* find: `daemon_pid` (owner.json, read by `datadir.read_owner_file`, names a daemon that
  holds the data dir's lock as a reader), `daemon_socket` (its socket, when the daemon is not
  frozen and the socket is safe to talk to);
* check: `frozen` (stopped by SIGSTOP: it would accept a connection and never answer),
  `safe_socket` (the socket and its folder are ours and nobody else may replace them:
  otherwise the token and the query would go to whoever did);
* start: `spawn` (`chromasync daemon run --from-stdin`: the command's settings flags on its
  stdin, so a `--chroma-token` never shows in `ps`; its log `daemon.log` appended, rotated
  at `LOG_LIMIT`), `nobody_owns`, and `start_daemon`, which waits until it listens;
* ask: `make_way` (a writer needs the lock: a frozen daemon is killed, it held no work; a
  live one is asked through the lock, `state.lock.ask_reader_to_leave`), `post` (one JSON
  POST over the socket, with a connect and a reply deadline).
"""

from __future__ import annotations

import os

from ..datadir import (
    DAEMON_LOG,
    DAEMON_LOG_OLD,
    LOCK_FILE,
    READER_MARK,
    STATE_FILE,
    make_private_dir,
    open_private,
    read_owner_file,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping
    from typing import IO

ROLE = "daemon"
OFF_ENV = "CHROMASYNC_NO_DAEMON"
#: What a command says (on stderr) when it starts the search daemon.
DAEMON_NOTICE = (
    "starting the search daemon for this data dir (it keeps the model warm and exits after "
    "10 minutes idle; `chromasync daemon stop`, CHROMASYNC_NO_DAEMON=1)"
)
#: The most a daemon's answer may hold (bytes): a search prints far less.
MAX_REPLY = 64 * 1024 * 1024
#: Seconds to connect to the daemon's socket, and for its whole answer (then the CLI searches
#: in its own process).
CONNECT_TIMEOUT = 2.0
REPLY_TIMEOUT = 30.0
#: How long a command waits for the daemon it started to listen (then it searches itself).
START_TIMEOUT = 30.0
#: `daemon.log` is moved to `daemon.log.1` when a start finds it this large (bytes).
LOG_LIMIT = 1024 * 1024


def daemon_off(environ: Mapping[str, str]) -> bool:
    """`CHROMASYNC_NO_DAEMON` is set to anything but "", "0", "false" or "no"."""
    return environ.get(OFF_ENV, "").strip().lower() not in ("", "0", "false", "no")


def nobody_owns(data_dir: str) -> bool:
    """The data dir holds an index and its lock is free (no writer, no owner of any role)."""
    import fcntl

    if not os.path.exists(os.path.join(data_dir, STATE_FILE)):
        return False  # nothing indexed here (or a server store): the CLI decides
    try:
        fd = os.open(os.path.join(data_dir, LOCK_FILE), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def listening(path: str, timeout: float = CONNECT_TIMEOUT) -> bool:
    """Something accepts connections on the Unix socket `path` (a dead owner's file does not)."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


#: Where Linux tells a process's state (`frozen`); elsewhere `ps` does (tests move it).
PROC = "/proc"


def frozen(pid: int) -> bool:
    """The process is stopped (SIGSTOP, a debugger): it holds its lock and its socket accepts
    connections, but it answers nothing until continued.

    Linux: its `/proc/PID/stat`; elsewhere (macOS, the BSDs) `ps -o stat= -p PID`, POSIX's
    way. Where neither can tell, False: a stopped daemon is then talked to, and the
    deadlines end the wait (this client's `REPLY_TIMEOUT`, the owner client's `CALL_S`;
    then the command says so, or searches in its own process)."""
    if os.path.isdir(os.path.join(PROC, "self")):
        try:
            with open(os.path.join(PROC, str(pid), "stat"), "rb") as handle:
                stat = handle.read(4096)
        except OSError:
            return False  # gone
        fields = stat.rpartition(b")")[2].split()
        return bool(fields) and fields[0] in (b"T", b"t")
    return _ps_state(pid)[:1] in ("T", "t")


def _ps_state(pid: int) -> str:
    """The state letters `ps` gives the process ("" when it cannot tell)."""
    import subprocess

    try:
        done = subprocess.run(
            ["ps", "-o", "stat=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=CONNECT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def safe_socket(path: str) -> bool:
    """The Unix socket at `path` is ours and sits in a folder that is ours and that nobody
    else may write to (a world-writable folder would let another user replace the socket)."""
    import stat

    uid = os.geteuid()
    try:
        own = os.lstat(path)
        folder = os.lstat(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return False
    return (
        stat.S_ISSOCK(own.st_mode)
        and own.st_uid == uid
        and stat.S_ISDIR(folder.st_mode)
        and folder.st_uid == uid
        and not folder.st_mode & stat.S_IWOTH
    )


def daemon_pid(data_dir: str) -> int | None:
    """The pid of the data dir's daemon, when owner.json names one and that pid holds the
    lock as a reader (a killed daemon's leftovers are ignored: its lock is free)."""
    import fcntl

    info = read_owner_file(data_dir)
    if info is None or info["role"] != ROLE:
        return None
    pid = int(str(info["pid"]))
    try:
        fd = os.open(os.path.join(data_dir, LOCK_FILE), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # held: by the daemon?
            text = os.read(fd, 400).decode("utf-8", "replace")
            return pid if text.startswith(f"pid {pid}: {READER_MARK}") else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None  # free: nobody runs
    finally:
        os.close(fd)


def daemon_socket(data_dir: str) -> str | None:
    """The socket of the data dir's daemon when it can answer: not frozen, its socket safe."""
    pid = daemon_pid(data_dir)
    if pid is None or frozen(pid):
        return None
    info = read_owner_file(data_dir)
    path = None if info is None else str(info["socket"])
    return path if path is not None and safe_socket(path) else None


def make_way(data_dir: str) -> bool:
    """A writer needs the lock the daemon holds: True when the daemon is gone. A frozen one
    is killed (a reader holds no work: killing it loses nothing); a live one is asked, and
    given `state.lock.READER_LEAVES_IN` to finish the requests in flight."""
    import signal
    import time

    from ..state.lock import ask_reader_to_leave

    pid = daemon_pid(data_dir)
    if pid is not None and frozen(pid):
        try:  # noqa: SIM105 - contextlib costs the console script ~10 ms to import
            os.kill(pid, signal.SIGKILL)
        except OSError:  # gone already
            pass
        deadline = time.monotonic() + 5.0
        while daemon_pid(data_dir) == pid and time.monotonic() < deadline:
            time.sleep(0.01)
    return ask_reader_to_leave(data_dir)


def open_log(data_dir: str) -> IO[bytes]:
    """`daemon.log` for appending (0600), moved to `daemon.log.1` first when it is over
    `LOG_LIMIT`: starts add to it, and none overwrites another's lines."""
    path = os.path.join(data_dir, DAEMON_LOG)
    try:
        if os.stat(path).st_size > LOG_LIMIT:
            os.replace(path, os.path.join(data_dir, DAEMON_LOG_OLD))
    except OSError:
        pass  # absent, or another start moved it first
    log: IO[bytes] = open_private(path, "ab")
    return log


def spawn(data_dir: str, flags: Mapping[str, object]) -> subprocess.Popen[bytes]:
    """Start `chromasync daemon run --from-stdin` in the background, in a session of its own
    (not killed with the terminal's process group), with the command's settings `flags` on
    its stdin as JSON: nothing of them is in its argv."""
    import json
    import subprocess
    import sys

    make_private_dir(data_dir)
    with open_log(data_dir) as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "chromasync", "daemon", "run", "--from-stdin"],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    assert process.stdin is not None
    try:
        process.stdin.write(json.dumps({"flags": dict(flags)}).encode())
        process.stdin.close()
    except OSError:
        pass  # it died at once: its log says why
    return process


def start_daemon(
    data_dir: str, flags: Mapping[str, object], timeout: float = START_TIMEOUT
) -> str | None:
    """Start the daemon (`spawn`), saying so on stderr, and wait until it listens: its
    socket, or None (the CLI then runs the command, and says what kept it from starting)."""
    import sys
    import time

    sys.stderr.write(DAEMON_NOTICE + "\n")
    sys.stderr.flush()
    try:
        process = spawn(data_dir, flags)
    except OSError:
        return None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = daemon_socket(data_dir)
        if found is not None and listening(found):
            return found
        if process.poll() is not None:  # it could not start, or another one won the lock
            break
        time.sleep(0.02)
    found = daemon_socket(data_dir)
    return found if found is not None and listening(found) else None


#: `json.dumps`'s escapes (ensure_ascii off): quotes, backslashes, control characters and
#: lone surrogates (a command line's undecodable bytes), made on first use.
_ESCAPES: dict[int, str] = {}


def json_text(value: object) -> str:
    """`value` (None, bool, int, float, str, list, tuple, dict with str keys) as JSON, as
    `json.dumps(value, ensure_ascii=False)` writes it but for spacing."""
    if isinstance(value, str):
        if not _ESCAPES:
            _ESCAPES.update({c: f"\\u{c:04x}" for c in (*range(32), *range(0xD800, 0xE000))})
            _ESCAPES.update({34: '\\"', 92: "\\\\", 8: "\\b", 9: "\\t", 10: "\\n"})
            _ESCAPES.update({12: "\\f", 13: "\\r"})
        return '"' + value.translate(_ESCAPES) + '"'
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json_text(str(k))}:{json_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(json_text(v) for v in value) + "]"
    raise TypeError(f"not JSON: {type(value).__name__}")


def post(
    socket_path: str, route: str, body: object, token: str | None, timeout: float = REPLY_TIMEOUT
) -> bytes | None:
    """POST `body` as JSON to `route` over the Unix socket (HTTP/1.1, closed after one
    answer): the body of a 200 answer, else None (no answer within `CONNECT_TIMEOUT`, then
    `timeout` in all). `_socket` and `json_text`: `socket` and `json` (with `re`) would cost
    a fresh search a third of its time to import."""
    import _socket
    import time

    data = json_text(body).encode("utf-8")
    head = [
        f"POST {route} HTTP/1.1",
        "Host: localhost",
        "Connection: close",
        "Content-Type: application/json",
        f"Content-Length: {len(data)}",
    ]
    if token:
        head.append(f"Authorization: Bearer {token}")
    request = ("\r\n".join(head) + "\r\n\r\n").encode("utf-8", "surrogateescape") + data
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + timeout
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)  # no `with`: `socket`'s
    try:
        conn.settimeout(min(CONNECT_TIMEOUT, timeout))
        conn.connect(socket_path)
        conn.sendall(request)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            conn.settimeout(left)
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_REPLY:
                return None
            chunks.append(chunk)
    except (OSError, UnicodeError):
        return None
    finally:
        conn.close()
    head_bytes, sep, reply = b"".join(chunks).partition(b"\r\n\r\n")
    status = head_bytes.split(b"\r\n", 1)[0].split(b" ")
    if not sep or len(status) < 2 or status[1] != b"200":
        return None
    if b"\r\ntransfer-encoding: chunked" in head_bytes.lower():
        return None  # the daemon's JSON answers carry a length; anything else: the CLI
    return reply
