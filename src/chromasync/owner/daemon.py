"""The search daemon: a warm reader that owns a data dir between searches.

A fresh `chromasync search` pays for importing chromadb and loading the model before it
reads a single row; a process that stays up pays once. So `search` and `ask` start a
background *daemon* when no owner runs (the dmypy pattern) and send their requests through
its socket, as they do to `serve` or `watch` (see `locate`); the other readers (`get`,
`status`, `links`...) use one that runs with their settings:

* It is the data dir's owner while it lives, as a *reader* (`state.lock`): it never writes,
  so it keeps the ingest fast path's snapshots, and whoever needs the lock (an ingest,
  `verify`, `serve`, `watch`, `mcp`) says so through the lock (`lock.want`); the daemon
  sees it, finishes the requests in flight and leaves. Killing it at any moment loses
  nothing: it held no work, so a frozen one (SIGSTOP) is killed when a writer needs the
  lock (`dial.make_way`) and when `daemon stop` is asked (`stop`).
* It answers for one set of settings: `settings_key` (every setting, the config files'
  bytes, this code's version; secrets enter only the hash) is advertised in `owner.json`. A
  command with other settings stops it and starts its own.
* It exits after `idle_timeout` seconds without a request (default 10 minutes,
  `CHROMASYNC_DAEMON_IDLE`). `CHROMASYNC_NO_DAEMON=1` or `--no-daemon` keeps a command in
  its own process: no daemon is started, asked or used (`owner.index.open_index`).
* The console script's stdlib client (`fastsearch.daemon_search`) reaches it without
  importing chromasync's stages: it sends its `search` command line, folder and
  environment; the daemon runs the CLI's own `search` on them and answers only when they
  resolve to its settings (`cli.daemon.run_line`).

The daemon's process (`chromasync daemon run` and its routes) lives in `cli.daemon`; this
module and `dial` (its standard-library parts: find, check, spawn, ask) are the clients'.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import __version__
from ..config.settings import Settings
from ..datadir import DAEMON_LOG
from ..state.lock import READER_LEAVES_IN
from .dial import (
    OFF_ENV,
    ROLE,
    START_TIMEOUT,
    daemon_off,
    daemon_pid,
    frozen,
    listening,
    make_way,
    safe_socket,
    spawn,
)
from .locate import OwnerInfo, find_owner

IDLE_ENV = "CHROMASYNC_DAEMON_IDLE"
IDLE_TIMEOUT = 600.0
LOG_FILE = DAEMON_LOG


def idle_timeout(environ: Mapping[str, str]) -> float:
    """Seconds without a request after which the daemon exits (`CHROMASYNC_DAEMON_IDLE`)."""
    raw = environ.get(IDLE_ENV, "").strip()
    if not raw:
        return IDLE_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        return IDLE_TIMEOUT
    return min(max(value, 0.2), 7 * 24 * 3600.0)


#: Settings a daemon's searches do not depend on: `ask` answers in its own process, with
#: its own chat model; the config file counts by its bytes. A daemon does not hold them, so
#: the operations that use them run in the command's process (`IN_PROCESS`).
_NOT_KEYED = frozenset(
    {
        "config_file",
        "origins",
        "llm_url",
        "llm_model",
        "llm_api_key",
        "llm_timeout",
        "llm_retries",
        "answer_context_tokens",
        "answer_fallback",
    }
)


#: `Index` operations that use the chat settings (`_NOT_KEYED`): never sent to a daemon,
#: whose answer could differ (`owner.index.open_index`).
IN_PROCESS = frozenset({"ask", "summaries"})


def settings_key(settings: Settings) -> str:
    """What a daemon's answers depend on besides the request: every setting (secrets only
    hashed), the config files read, this code. Two commands with one key may share a daemon."""
    fields = {
        f.name: getattr(settings, f.name)
        for f in dataclasses.fields(settings)
        if f.name not in _NOT_KEYED
    }
    inputs = settings.config_file.inputs if settings.config_file is not None else ()
    material = repr((__version__, sorted((k, repr(v)) for k, v in fields.items()), inputs))
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


class Activity:
    """Requests in flight and when the last one ended: the daemon's idle clock."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._active = 0
        self._last = clock()

    def restart(self) -> None:
        """Count idleness from now (the daemon starts its clock once it listens)."""
        with self._lock:
            self._last = self._clock()

    def begin(self) -> None:
        with self._lock:
            self._active += 1

    def end(self) -> None:
        with self._lock:
            self._active -= 1
            self._last = self._clock()

    def idle_for(self) -> float:
        """Seconds since the last request ended; 0 while one is in flight."""
        with self._lock:
            return 0.0 if self._active else self._clock() - self._last


def find_daemon(data_dir: Path) -> OwnerInfo | None:
    """The data dir's live owner when it is a search daemon."""
    info = find_owner(data_dir)
    return info if info is not None and info.role == ROLE else None


def answers(info: OwnerInfo) -> bool:
    """The owner can answer a request: not frozen (SIGSTOP), its socket safe to talk to."""
    return not frozen(info.pid) and safe_socket(info.socket)


@dataclasses.dataclass(frozen=True, slots=True)
class Stopped:
    """What `stop` did: the daemon it found, whether it is gone, and whether it was killed
    (frozen, or not gone `timeout` seconds after SIGTERM)."""

    info: OwnerInfo
    gone: bool
    killed: bool


def stop(data_dir: Path, timeout: float = READER_LEAVES_IN) -> Stopped | None:
    """Ask the data dir's daemon to leave (SIGTERM) and wait until it has; a frozen one, or
    one still there after `timeout`, is killed. None when no daemon runs."""
    info = find_daemon(data_dir)
    if info is None:
        return None
    killed = frozen(info.pid)  # a stopped process never handles SIGTERM
    if not killed:
        _signal(info.pid, signal.SIGTERM)
        if not _gone(data_dir, info.pid, timeout):
            killed = True
    if killed:
        _signal(info.pid, signal.SIGKILL)
    return Stopped(info, _gone(data_dir, info.pid, 5.0), killed)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(OSError):  # gone already
        os.kill(pid, sig)


def _gone(data_dir: Path, pid: int, timeout: float) -> bool:
    """The daemon `pid` no longer holds the data dir (and no longer runs) within `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        if daemon_pid(str(data_dir)) != pid and not _alive(pid):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    try:  # a zombie (exited, not yet reaped by its parent) is gone
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read(4096).rpartition(b")")[2].split()[:1] != [b"Z"]
    except OSError:
        return True


def ensure(
    settings: Settings,
    flags: Mapping[str, Any],
    timeout: float = START_TIMEOUT,
    on_start: Callable[[], None] | None = None,
) -> OwnerInfo | None:
    """The owner to send this command's requests to, starting a daemon when none runs: the
    running owner (serve, watch, mcp, or a daemon with these settings), a new daemon, or None
    when it did not come up in `timeout` seconds (the command then runs in its own process)."""
    key = settings_key(settings)
    info = find_owner(settings.data_dir)
    if info is not None and not answers(info):
        return None  # frozen, or an unsafe socket: this command runs in its own process
    if info is not None and (info.role != ROLE or info.key == key):
        return info
    if info is not None:
        stop(settings.data_dir)  # another command's settings: make way for ours
    if on_start is not None:
        on_start()
    process = spawn(str(settings.data_dir), flags)  # the flags on its stdin: never in `ps`
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = find_owner(settings.data_dir)
        if info is not None and listening(info.socket):
            return info if info.role != ROLE or info.key == key else None
        if process.poll() is not None:  # it could not start (see daemon.log), or lost a race
            info = find_owner(settings.data_dir)
            return info if info is not None and (info.role != ROLE or info.key == key) else None
        time.sleep(0.02)
    return None


__all__ = [
    "IDLE_ENV",
    "IDLE_TIMEOUT",
    "IN_PROCESS",
    "LOG_FILE",
    "OFF_ENV",
    "ROLE",
    "Activity",
    "Stopped",
    "answers",
    "daemon_off",
    "ensure",
    "find_daemon",
    "idle_timeout",
    "listening",
    "make_way",
    "settings_key",
    "spawn",
    "stop",
]
