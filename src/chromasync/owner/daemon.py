"""The search daemon: a warm reader that owns a data dir between searches (dmypy's pattern).

`search` and `ask` start it when no owner runs and send it their requests; it owns the data
dir as a reader, answers for one set of settings (`settings_key`), leaves when a writer
waits for the lock, and exits after `idle_timeout`. docs/peers.md ("The search daemon")
tells the whole design; its process is `cli.daemon`, its stdlib parts `dial`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import signal
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
    wait_listening,
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


#: Settings a daemon's searches do not depend on (the chat model's: `ask` answers in its
#: own process, `IN_PROCESS`; the config file counts by its bytes).
_NOT_KEYED = frozenset(
    {"config_file", "origins", "llm_url", "llm_model", "llm_api_key", "llm_timeout"}
    | {"llm_retries", "answer_context_tokens", "answer_fallback"}
)
#: `Index` operations that use the chat settings: never sent to a daemon.
IN_PROCESS = frozenset({"ask", "summaries"})


def settings_key(settings: Settings) -> str:
    """What a daemon's answers depend on besides the request: every setting but
    `_NOT_KEYED`, the config files read, this code (a digest: secrets only hashed)."""
    fields = {
        f.name: getattr(settings, f.name)
        for f in dataclasses.fields(settings)
        if f.name not in _NOT_KEYED
    }
    inputs = settings.config_file.inputs if settings.config_file is not None else ()
    material = repr((__version__, sorted((k, repr(v)) for k, v in fields.items()), inputs))
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


def exit_when_idle(
    server: Any,
    timeout: float,
    leave: Callable[[], bool],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Stop the uvicorn `server` after `timeout` seconds without a request (counted from
    when it listens; never while one is in flight), or at once when `leave()` says so."""
    step = min(0.05, max(timeout / 10, 0.01))
    while not server.should_exit and not server.started:
        sleep(step)
    seen: tuple[int, int] | None = None
    last = clock()
    while not server.should_exit:
        state = server.server_state
        now = (state.total_requests, len(state.tasks))
        if now != seen or now[1]:
            seen, last = now, clock()
        if clock() - last >= timeout or leave():
            server.should_exit = True
            return
        sleep(step)


def find_daemon(data_dir: Path) -> OwnerInfo | None:
    """The data dir's live owner when it is a search daemon."""
    info = find_owner(data_dir)
    return info if info is not None and info.role == ROLE else None


def answers(info: OwnerInfo) -> bool:
    """The owner can answer a request: not frozen (SIGSTOP), its socket safe to talk to."""
    return not frozen(info.pid) and safe_socket(info.socket)


@dataclasses.dataclass(frozen=True, slots=True)
class Stopped:
    """What `stop` did: the daemon it found, whether it is gone, whether it was killed."""

    info: OwnerInfo
    gone: bool
    killed: bool


def stop(data_dir: Path, timeout: float = READER_LEAVES_IN) -> Stopped | None:
    """Ask the data dir's daemon to leave (SIGTERM) and wait; a frozen one, or one still
    there after `timeout`, is killed. None when no daemon runs."""
    info = find_daemon(data_dir)
    if info is None:
        return None
    killed = frozen(info.pid)  # a stopped process never handles SIGTERM
    if not killed:
        _signal(info.pid, signal.SIGTERM)
        killed = not _gone(data_dir, info.pid, timeout)
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
    """The owner to send this command's requests to: the running owner (serve, watch, mcp,
    or a daemon with these settings), else a new daemon (one of other settings is stopped
    first); None when it did not come up in `timeout` seconds or cannot answer."""
    key = settings_key(settings)
    info = find_owner(settings.data_dir)
    if info is not None and not answers(info):
        return None  # frozen, or an unsafe socket: this command runs in its own process
    if info is not None and (info.role != ROLE or info.key == key):
        return info
    if info is not None:
        stop(settings.data_dir)
    if on_start is not None:
        on_start()
    data_dir = str(settings.data_dir)
    wait_listening(data_dir, spawn(data_dir, flags), timeout)
    info = find_owner(settings.data_dir)
    return info if info is not None and (info.role != ROLE or info.key == key) else None


__all__ = [
    "IDLE_ENV",
    "IDLE_TIMEOUT",
    "IN_PROCESS",
    "LOG_FILE",
    "OFF_ENV",
    "ROLE",
    "Stopped",
    "answers",
    "daemon_off",
    "ensure",
    "exit_when_idle",
    "find_daemon",
    "idle_timeout",
    "listening",
    "make_way",
    "settings_key",
    "spawn",
    "stop",
]
