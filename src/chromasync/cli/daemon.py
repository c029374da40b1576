"""`chromasync daemon`: the warm search process (`owner.daemon`), which also runs the
console script's `search` command lines (`POST /daemon/run`, `run_line`), and its controls."""

from __future__ import annotations

import functools
import io
import json
import os
import sys
import threading
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .. import api
from ..errors import ConfigError
from ..owner import daemon as daemons
from ..owner.dial import ROLE, frozen, make_way
from ..owner.index import HOSTED, Hosted
from ..owner.locate import find_owner
from ..state.lock import READER_LEAVES_IN, someone_waits
from .common import (
    CALLER,
    reported_errors,
    settings_from_flags,
    stderr_console,
    store_options,
)

#: The most `--from-stdin` reads.
_MAX_STDIN = 1024 * 1024


@click.group("daemon")
def daemon_group() -> None:
    """The warm search process that `search` and `ask` start and talk to.

    It keeps the store and the model loaded, leaves when an ingest or `serve` needs the
    data dir, and exits after 10 minutes without a request (CHROMASYNC_DAEMON_IDLE
    seconds). CHROMASYNC_NO_DAEMON=1 or --no-daemon keeps a command in its own process.
    """


@daemon_group.command("run")
@store_options
@click.option(
    "--idle-timeout",
    type=click.FloatRange(0.2, 7 * 24 * 3600, clamp=True),
    default=600.0,
    envvar="CHROMASYNC_DAEMON_IDLE",
    help="Exit after this many seconds without a request [env CHROMASYNC_DAEMON_IDLE; "
    "default: 600].",
)
@click.option("--from-stdin", is_flag=True, hidden=True)
def run(idle_timeout: float, from_stdin: bool, **flags: Any) -> None:
    """Be the daemon, in the foreground (what `search` starts in the background)."""
    with reported_errors():
        if from_stdin:  # what `owner.dial.spawn` wrote: the command's settings as flags
            try:
                flags = dict(json.loads(sys.stdin.read(_MAX_STDIN))["flags"])
            except (ValueError, TypeError, KeyError) as exc:
                raise ConfigError(f"--from-stdin: not a JSON object of flags: {exc!r}") from exc
        serve_daemon(settings_from_flags(**flags), idle_timeout)


@daemon_group.command("status")
@click.option("--data-dir", type=click.Path(file_okay=False), help="The data dir.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def status(data_dir: str | None, as_json: bool) -> None:
    """Whether a daemon (or another owner) holds the data dir; exit 1 when none runs."""
    with reported_errors():
        settings = settings_from_flags(data_dir=data_dir)
        info = find_owner(settings.data_dir)
    if as_json:
        click.echo(json.dumps({"owner": info.as_json() if info else None}, indent=2))
    elif info is None:
        click.echo(f"no daemon runs for {settings.data_dir}")
    else:
        click.echo(f"{info.describe()} owns {settings.data_dir} since {info.started}")
    if info is None:
        sys.exit(1)


@daemon_group.command("stop")
@click.option("--data-dir", type=click.Path(file_okay=False), help="The data dir.")
def stop(data_dir: str | None) -> None:
    """Stop the data dir's daemon (after the requests in flight); not serve/watch/mcp."""
    with reported_errors():
        settings = settings_from_flags(data_dir=data_dir)
        info = find_owner(settings.data_dir)
    if info is None or info.role != ROLE:
        where = f" ({info.describe()} owns it: stop that one yourself)" if info else ""
        click.echo(f"no daemon runs for {settings.data_dir}{where}")
        return
    how = " (killed: it was frozen)" if frozen(info.pid) else ""
    if not make_way(str(settings.data_dir)):
        raise click.ClickException(
            f"{info.describe()} did not leave within {READER_LEAVES_IN:g}s; see `ps -p {info.pid}`"
        )
    click.echo(f"stopped {info.describe()}{how}")


if TYPE_CHECKING:
    from ..rest.bodies import CommandLine


def serve_daemon(settings: api.Settings, idle_timeout: float) -> None:
    """Own the data dir as a reader and serve its socket until idle, SIGTERM or SIGINT."""
    from .. import rest
    from ..owner.service import Service
    from ..store.connect import import_chromadb

    # C extensions imported from two threads at once fail (numpy: "partially initialized
    # module"): import chromadb (numpy with it) here, once, before any thread runs
    import_chromadb()
    key = daemons.settings_key(settings)
    cli = click.get_current_context().find_root().command
    with (
        rest.StopSignals() as stop,  # SIGTERM before uvicorn takes over: leave cleanly too
        Service(settings, ROLE, reader=True, key=key) as service,
    ):
        assert service.socket is not None
        unix = rest.bind_unix(service.socket)
        app = rest.create_app(service, token=settings.api_token)
        sys.stdout, sys.stderr = _Streams(sys.stdout, 0), _Streams(sys.stderr, 1)

        rest.add_run_route(app, lambda line: run_line(cli, line, Hosted(key, service)))

        server = stop.server(app)
        service.embedder.prefetch()  # the model's extensions imported here too (local model)
        threading.Thread(target=_warm, args=(service,), daemon=True).start()
        leave = functools.partial(someone_waits, settings.data_dir)  # a writer waits
        args = (server, idle_timeout, leave)
        threading.Thread(target=daemons.exit_when_idle, args=args, daemon=True).start()
        stderr_console().print(
            f"chromasync daemon: pid {os.getpid()} owns {settings.data_dir} as a reader; "
            f"exits after {idle_timeout:g}s idle"
        )
        rest.run_server([unix], server)
    stderr_console().print("chromasync daemon: stopped")


class _Captured(io.StringIO):
    """A command line's stdout or stderr, a terminal when the client's is."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


#: The captured stdout and stderr of the command line this thread runs (`run_line`).
_CAPTURE: ContextVar[tuple[_Captured, _Captured] | None] = ContextVar("capture", default=None)


class _Streams:
    """The daemon's `sys.stdout`/`sys.stderr`: the captured stream of the command line this
    thread runs, else the process's own (its log)."""

    def __init__(self, own: Any, which: int) -> None:
        self._own = own
        self._which = which

    def __getattr__(self, name: str) -> Any:
        captured = _CAPTURE.get()
        return getattr(self._own if captured is None else captured[self._which], name)


def run_line(cli: click.Command, line: CommandLine, hosted: Hosted) -> tuple[str, str] | None:
    """Run the client's `search` command line with the CLI itself (`cli`), in the client's
    folder and environment, against this daemon's index: its stdout and stderr, or None
    when it is not this daemon's to answer (other settings, anything but exit 0)."""
    if line.argv[:1] != ["search"] or not os.path.isabs(line.cwd):
        return None
    out, err = _Captured(line.tty[0]), _Captured(line.tty[1])
    tokens = (
        _CAPTURE.set((out, err)),
        HOSTED.set(hosted),
        CALLER.set((line.env, Path(line.cwd))),
    )
    code: object = 0
    try:
        cli.main(args=list(line.argv), prog_name="chromasync", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
    except Exception:  # noqa: BLE001 - the client runs it, and reports what it meets
        return None
    finally:
        _CAPTURE.reset(tokens[0])
        HOSTED.reset(tokens[1])
        CALLER.reset(tokens[2])
    return (out.getvalue(), err.getvalue()) if hosted.used and code in (0, None) else None


def _warm(service: Any) -> None:
    """Load the model, the store and the keyword index before the first request needs them."""
    try:
        service.embedder.embed_query("warm up")
        service.search(api.SearchArgs.of("warm up", k=1))
    except Exception as exc:  # noqa: BLE001 - an empty index, a bad model: a request says so
        stderr_console().print(f"chromasync daemon: warm-up: {exc}")


__all__ = ["daemon_group", "serve_daemon"]
