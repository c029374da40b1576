"""The search daemon from outside, in the standard library only: find, check, start, ask
(docs/peers.md, "The search daemon", says why each check is there)."""

from __future__ import annotations

import os

from ..datadir import (
    DAEMON_LOG,
    LOCK_FILE,
    READER_MARK,
    SOCKET_FILE,
    STATE_FILE,
    make_private_dir,
    open_private,
    read_owner_file,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping

ROLE = "daemon"
OFF_ENV = "CHROMASYNC_NO_DAEMON"
#: What a command says (on stderr) when it starts the search daemon.
DAEMON_NOTICE = (
    "starting the search daemon for this data dir (it keeps the model warm and exits after "
    "10 minutes idle; `chromasync daemon stop`, CHROMASYNC_NO_DAEMON=1)"
)
#: The most a daemon's answer may hold (bytes): a search prints far less.
MAX_REPLY = 64 * 1024 * 1024
#: Seconds to connect to the daemon's socket, and for its whole answer.
CONNECT_TIMEOUT = 2.0
REPLY_TIMEOUT = 30.0
#: How long a command waits for the daemon it started to listen (then it searches itself).
START_TIMEOUT = 30.0
#: Where Linux tells a process's state (`frozen`; tests move it).
PROC = "/proc"
#: `owner.locate.socket_path`'s bound: a longer socket path lies elsewhere (owner.json says).
_MAX_SOCKET_PATH = 100


def daemon_off(environ: Mapping[str, str]) -> bool:
    """`CHROMASYNC_NO_DAEMON` is set to anything but "", "0", "false" or "no"."""
    return environ.get(OFF_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _lock_state(data_dir: str) -> tuple[bool, str] | None:
    """(held, the lock file's text) of the data dir's lock; None when it has none."""
    import fcntl

    try:
        fd = os.open(os.path.join(data_dir, LOCK_FILE), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True, os.read(fd, 400).decode("utf-8", "replace")
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False, ""
    finally:
        os.close(fd)


def nobody_owns(data_dir: str) -> bool:
    """The data dir holds an index and its lock is free (no writer, no owner of any role)."""
    if not os.path.exists(os.path.join(data_dir, STATE_FILE)):
        return False  # nothing indexed here (or a server store): the CLI decides
    return _lock_state(data_dir) == (False, "")


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


def frozen(pid: int) -> bool:
    """The process is stopped (SIGSTOP, a debugger): it would accept a connection and never
    answer. False where /proc does not tell (macOS: the deadlines then end the wait)."""
    try:
        with open(os.path.join(PROC, str(pid), "stat"), "rb") as handle:
            fields = handle.read(4096).rpartition(b")")[2].split()
    except OSError:
        return False  # gone, or no /proc
    return fields[:1] in ([b"T"], [b"t"])


def safe_socket(path: str) -> bool:
    """The Unix socket at `path` is ours, in a folder of ours that nobody else may write to
    (else another user could have put it there, and get the token and the query)."""
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
    """The pid of the data dir's daemon: the reader that holds its lock (`state.lock` marks
    it so; a killed daemon's lock is free)."""
    state = _lock_state(data_dir)
    if state is None or not state[0]:
        return None
    head, _, rest = state[1].partition(": ")
    pid = head.removeprefix("pid ")
    return int(pid) if pid.isdigit() and rest.startswith(READER_MARK) else None


def daemon_socket(data_dir: str) -> str | None:
    """The socket of the data dir's daemon when it can answer: not frozen, its socket safe.
    It is `owner.locate.socket_path`'s, read from owner.json only when that is elsewhere."""
    pid = daemon_pid(data_dir)
    if pid is None or frozen(pid):
        return None
    path = os.path.join(os.path.realpath(data_dir), SOCKET_FILE)
    if len(path.encode()) > _MAX_SOCKET_PATH:
        info = read_owner_file(data_dir)
        path = "" if info is None or info["pid"] != pid else str(info["socket"])
    return path if path and safe_socket(path) else None


def make_way(data_dir: str) -> bool:
    """Make the daemon that holds the data dir's lock leave: True once it is gone, False when
    no reader holds the lock or it did not leave. A frozen one is killed (it held no work);
    a live one is asked (`state.lock.ask_reader_to_leave`), and finishes its requests."""
    import signal
    import time

    from ..state.lock import ask_reader_to_leave

    pid = daemon_pid(data_dir)
    if pid is None:
        return False
    if frozen(pid):
        try:  # noqa: SIM105 - contextlib costs the console script ~10 ms to import
            os.kill(pid, signal.SIGKILL)
        except OSError:  # gone already
            pass
        deadline = time.monotonic() + 5.0
        while daemon_pid(data_dir) == pid and time.monotonic() < deadline:
            time.sleep(0.01)
    return ask_reader_to_leave(data_dir)


def spawn(data_dir: str, flags: Mapping[str, object]) -> subprocess.Popen[bytes]:
    """Start `chromasync daemon run --from-stdin` in a session of its own, its settings
    `flags` on its stdin as JSON (never in its argv, where `ps` shows a token)."""
    import subprocess
    import sys

    make_private_dir(data_dir)
    with open_private(os.path.join(data_dir, DAEMON_LOG), "ab") as log:
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
        process.stdin.write(json_text({"flags": dict(flags)}).encode("utf-8", "surrogatepass"))
        process.stdin.close()
    except OSError:
        pass  # it died at once: its log says why
    return process


def wait_listening(
    data_dir: str, process: subprocess.Popen[bytes], timeout: float = START_TIMEOUT
) -> str | None:
    """The socket of the daemon `process` (or one that won the race), once it listens;
    None when none does within `timeout` or `process` ended first."""
    import time

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


def start_daemon(data_dir: str, flags: Mapping[str, object]) -> str | None:
    """Start the daemon, saying so on stderr, and wait until it listens: its socket, or
    None (the CLI then runs the command, and says what kept it from starting)."""
    import sys

    sys.stderr.write(DAEMON_NOTICE + "\n")
    sys.stderr.flush()
    try:
        return wait_listening(data_dir, spawn(data_dir, flags))
    except OSError:
        return None


#: `json.dumps`'s escapes (ensure_ascii off) of the characters under 32, `"` and `\`, made
#: on first use.
_ESCAPES: dict[int, str] = {}


def json_text(value: object) -> str:
    """`value` (None, bool, int, float, str, list, tuple, dict with str keys) as
    `json.dumps(value, ensure_ascii=False)` writes it but for spacing and a lone surrogate
    (an undecodable byte of a command line), written as its escape: `json` imports `re`."""
    if isinstance(value, str):
        if not _ESCAPES:
            _ESCAPES.update({c: f"\\u{c:04x}" for c in range(32)})
            _ESCAPES.update({34: '\\"', 92: "\\\\", 8: "\\b", 9: "\\t", 10: "\\n"})
            _ESCAPES.update({12: "\\f", 13: "\\r"})
        text = value.translate(_ESCAPES)
        if not text.isascii():  # each lone surrogate escaped as well
            text = "".join(f"\\u{ord(c):04x}" if "\ud800" <= c <= "\udfff" else c for c in text)
        return '"' + text + '"'
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
    """POST `body` as JSON to `route` over the Unix socket (HTTP/1.1, one answer): the body
    of a 200 answer, else None (no connection within `CONNECT_TIMEOUT`, no answer within
    `timeout`). Through `_socket`: `socket` imports `enum` and `selectors`."""
    import _socket
    import time

    data = json_text(body).encode("utf-8")
    head = f"POST {route} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
    head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    head += f"Authorization: Bearer {token}\r\n\r\n" if token else "\r\n"
    request = head.encode("utf-8", "surrogateescape") + data
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + timeout
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(min(CONNECT_TIMEOUT, timeout))
        conn.connect(socket_path)
        conn.sendall(request)
        while size <= MAX_REPLY:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            conn.settimeout(left)
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            size += len(chunk)
            chunks.append(chunk)
    except (OSError, UnicodeError):
        return None
    finally:
        conn.close()
    head_bytes, sep, reply = b"".join(chunks).partition(b"\r\n\r\n")
    status = head_bytes.split(b"\r\n", 1)[0].split(b" ")
    if size > MAX_REPLY or not sep or len(status) < 2 or status[1] != b"200":
        return None
    if b"\r\ntransfer-encoding: chunked" in head_bytes.lower():
        return None  # the daemon's answers carry a length; anything else: the CLI
    return reply
