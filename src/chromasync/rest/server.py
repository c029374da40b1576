"""Serving the app: listening sockets (TCP, or the owner's Unix socket) and uvicorn, in the
foreground (`run_server`) or on a daemon thread (`BackgroundServer`), with the connection
bounds of `connections` (a header deadline, a limit per client)."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import threading
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from .connections import server_config


def bind_tcp(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: any free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc


def bind_unix(path: str | None) -> socket.socket:
    """A listening Unix socket at `path` (mode 0600); a stale one is replaced.

    Only the data dir's owner calls this, while holding its lock: a socket left at `path`
    belongs to a dead owner (`path` None: a service not started, which is a bug).
    """
    if path is None:
        raise RuntimeError("the owner's socket path is unset: the service has not started")
    if os.path.lexists(path):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise ConfigError(f"{path} exists and is not a socket; remove it")
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


def make_server(config: Any) -> Any:
    """A uvicorn server that, stopped by SIGTERM or SIGINT, returns to its caller (which then
    removes `owner.json` and the socket, and exits 0) instead of raising the signal again
    once it has shut down, as uvicorn does (the process died of it: exit 143, files left)."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            with super().capture_signals():
                try:
                    yield
                finally:
                    captured = getattr(self, "_captured_signals", None)
                    if isinstance(captured, list):
                        captured.clear()

    return Server(config)


class StopSignals:
    """SIGINT and SIGTERM stop a service cleanly at any point of its start: each sets
    `asked` (and tells the server to exit, once there is one), never raising in an import
    or a finalizer (docs/reliability.md, 14). One the console script held before
    (`fastpath.hold_stop_signals`) counts; a second SIGINT raises, to stop waiting."""

    def __init__(self) -> None:
        self.asked = False
        self._server: Any = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        import signal

        if threading.current_thread() is not threading.main_thread():
            return self  # signals reach the main thread only: its own handlers stay
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._stop)
            self.asked = self.asked or bool(getattr(self._previous[sig], "seen", False))
        return self

    def __exit__(self, *exc: object) -> None:
        import signal

        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _stop(self, signum: int, frame: object) -> None:
        import signal

        if self.asked and signum == signal.SIGINT:
            raise KeyboardInterrupt  # Ctrl-C again: no more waiting for a job to end
        self.asked = True
        if self._server is not None:
            self._server.should_exit = True

    def server(self, app: Any, **options: Any) -> Any:
        """The uvicorn server of `app` (`make_server`; `server_config`'s `options`, a 5 s
        graceful shutdown by default), told to exit at once if a signal came already."""
        self._server = make_server(
            server_config(app, **{"timeout_graceful_shutdown": 5, **options})
        )
        self._server.should_exit = self.asked
        return self._server


def run_server(listeners: Sequence[socket.socket], server: Any) -> None:
    """Serve uvicorn's `server` (its app) on the given listening sockets until it exits
    (SIGINT/SIGTERM: `StopSignals`)."""
    unix_paths = [str(s.getsockname()) for s in listeners if s.family == socket.AF_UNIX]
    try:
        server.run(sockets=list(listeners))
    finally:
        for sock in listeners:
            sock.close()
        for path in unix_paths:
            with contextlib.suppress(OSError):
                os.unlink(path)


class BackgroundServer:
    """`app` served on listening sockets from a daemon thread (for `chromasync mcp`)."""

    def __init__(self, app: Any, listeners: Sequence[socket.socket]) -> None:
        import uvicorn

        self._server = uvicorn.Server(server_config(app))
        self._listeners = list(listeners)
        self._thread = threading.Thread(
            target=run_server, args=(self._listeners, self._server), daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
