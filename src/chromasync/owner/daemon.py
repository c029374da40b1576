"""The search daemon: a warm reader that owns a data dir between searches.

A fresh `chromasync search` pays for importing chromadb and loading the model before it
reads a single row; a process that stays up pays once. So `search`, `ask` and `get` start a
background *daemon* when no owner runs (the dmypy pattern) and send their requests through
its socket, as they do to `serve` or `watch` (see `locate`):

* It is the data dir's owner while it lives, as a *reader* (`state.lock`): it never writes,
  so it keeps the ingest fast path's snapshots, and whoever needs the lock (an ingest,
  `verify`, `serve`, `watch`, `mcp`) asks it to leave (SIGTERM), waits for the requests in
  flight, and takes over. Killing it at any moment loses nothing: it held no work.
* It answers for one set of settings: `settings_key` (every setting, the config files'
  bytes, this code's version; secrets enter only the hash) is advertised in `owner.json`. A
  command with other settings stops it and starts its own.
* It exits after `idle_timeout` seconds without a request (default 10 minutes,
  `CHROMASYNC_DAEMON_IDLE`). `CHROMASYNC_NO_DAEMON=1` or `--no-daemon` keeps a command in
  its own process.
* The console script's stdlib client (`fastsearch.daemon_search`) reaches it without
  importing chromasync's stages: it sends its command line's key (store options, folder,
  environment), which the daemon accepts once a full run of that command line with the same
  settings registered it (`OwnerClient.register`).

The daemon's process (`chromasync daemon run`) lives in `cli.daemon`; this module is the
clients' side: start, find, stop.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import __version__
from ..config.settings import Settings
from ..datadir import DAEMON_LOG, make_private_dir, open_private
from ..state.lock import READER_LEAVES_IN, lock_holder
from .dial import listening
from .locate import OwnerInfo, find_owner

ROLE = "daemon"
OFF_ENV = "CHROMASYNC_NO_DAEMON"
IDLE_ENV = "CHROMASYNC_DAEMON_IDLE"
IDLE_TIMEOUT = 600.0
#: How long a command waits for the daemon it started to listen before it searches itself.
START_TIMEOUT = 30.0
LOG_FILE = DAEMON_LOG
#: Command-line keys a daemon accepts from the stdlib client (oldest dropped first).
MAX_KEYS = 64


def daemon_off(environ: Mapping[str, str]) -> bool:
    """`CHROMASYNC_NO_DAEMON` is set to anything but "", "0", "false" or "no"."""
    return environ.get(OFF_ENV, "").strip().lower() not in ("", "0", "false", "no")


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
#: its own chat model; the config file counts by its bytes.
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


class KeyRing:
    """The stdlib client's command-line keys this daemon answers (bounded, newest kept)."""

    def __init__(self, limit: int = MAX_KEYS) -> None:
        self._keys: dict[str, None] = {}
        self._limit = limit
        self._lock = threading.Lock()

    def add(self, key: str) -> None:
        with self._lock:
            self._keys.pop(key, None)
            self._keys[key] = None
            while len(self._keys) > self._limit:
                del self._keys[next(iter(self._keys))]

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._keys


def find_daemon(data_dir: Path) -> OwnerInfo | None:
    """The data dir's live owner when it is a search daemon."""
    info = find_owner(data_dir)
    return info if info is not None and info.role == ROLE else None


def stop(data_dir: Path, timeout: float = READER_LEAVES_IN) -> OwnerInfo | None:
    """Ask the data dir's daemon to leave and wait until it has: the daemon, or None."""
    info = find_daemon(data_dir)
    if info is None:
        return None
    try:
        os.kill(info.pid, signal.SIGTERM)
    except OSError:
        return info
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and lock_holder(data_dir) is not None:
        time.sleep(0.02)
    return info


def spawn(settings: Settings, flags: Mapping[str, Any]) -> subprocess.Popen[bytes]:
    """Start `chromasync daemon run` in the background with this command's flags (on its
    stdin, so a token never shows in `ps`), folder and environment; its log in the data dir."""
    make_private_dir(settings.data_dir)
    with open_private(settings.data_dir / LOG_FILE, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "chromasync", "daemon", "run", "--flags-on-stdin"],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=log,
            start_new_session=True,  # not killed with the terminal's process group
            close_fds=True,
        )
    assert process.stdin is not None
    process.stdin.write(json.dumps(dict(flags)).encode())
    process.stdin.close()
    return process


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
    if info is not None and (info.role != ROLE or info.key == key):
        return info
    if info is not None:
        stop(settings.data_dir)  # another command's settings: make way for ours
    if on_start is not None:
        on_start()
    process = spawn(settings, flags)
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
    "LOG_FILE",
    "OFF_ENV",
    "ROLE",
    "Activity",
    "KeyRing",
    "daemon_off",
    "ensure",
    "find_daemon",
    "idle_timeout",
    "listening",
    "settings_key",
    "spawn",
    "stop",
]
