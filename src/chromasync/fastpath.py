"""The `chromasync` console script: an unchanged `ingest` from its snapshot, a `search`
through the warm daemon, else the CLI (docs/architecture.md, "The console script")."""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from .cmdline import Line
    from .state.snapshots import Recorder

CRASH_ENV = "CHROMASYNC_CRASH_AT"


def main() -> int | None:
    """The console script: the fast path when it applies, else the CLI."""
    argv = sys.argv[1:]
    code = None
    if (
        argv[:1] in (["serve"], ["watch"], ["nats"])
        or argv[:2] == ["daemon", "run"]
        or (argv[:1] == ["mcp"] and "--http" in argv)
    ):
        hold_stop_signals()
    if argv[:1] == ["ingest"]:
        code = quick_ingest(argv, os.environ)
    elif argv[:1] == ["search"]:
        code = daemon_search(argv, os.environ)
    if code is not None:
        return code
    from functools import partial

    from .cli.main import main as cli_main

    # the CLI records a snapshot for this command line only (not a CLI called from Python)
    cli_main(obj=partial(recorder, tuple(argv)))
    return None


class _Remembered:
    """A signal handler that only remembers that it ran (`seen`)."""

    seen = False

    def __call__(self, signum: int, frame: object) -> None:
        self.seen = True


def hold_stop_signals() -> None:
    """SIGINT and SIGTERM to a service that takes them over (`rest.StopSignals`, which
    reads `seen`) are remembered until it does, from the console script's first line, so
    that it stops cleanly at any point of its start, never raising in an import."""
    import _signal  # `signal` imports `enum`

    handler = _Remembered()
    for sig in (_signal.SIGINT, _signal.SIGTERM):
        _signal.signal(sig, handler)


# -- an unchanged ingest ---------------------------------------------------------------------


def parse_invocation(argv: Sequence[str], environ: Mapping[str, str]) -> Line | None:
    """The command line as an eligible `ingest`, or None when the CLI must run it."""
    from .cmdline import OFF_ENV, parse

    if environ.get(OFF_ENV) or environ.get(CRASH_ENV):
        return None
    return parse(argv)


def quick_ingest(argv: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """Answer an unchanged re-run from its snapshot: the exit code, or None for the CLI."""
    started = time.perf_counter_ns()
    line = parse_invocation(argv, environ)
    if line is None or not (line.given("--json") or not sys.stdout.isatty()):
        return None  # a terminal's report is rich's
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    data_dir = line.data_dir(environ, cwd)  # a wrong guess finds no snapshot of the key
    if data_dir is None:
        return None
    key = line.key(environ, cwd)
    from .state.snapshots import LOCK_FILE, snapshot_path

    try:
        fd = os.open(os.path.join(data_dir, LOCK_FILE), os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    import fcntl

    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            from .owner.dial import make_way

            if not make_way(data_dir):  # held by a writer: the CLI says by whom, or waits
                return None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}: chromasync {' '.join(argv)}"[:300].encode() + b"\n")
        try:
            text = _replay(snapshot_path(data_dir, key), key, started, line)
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock
    if text is None:
        return None
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0


def _replay(path: str, key: str, started: int, line: Line) -> str | None:
    """The report of the recorded no-op run, when nothing it depends on changed."""
    from .corpus.listing import tree_listing
    from .state.snapshots import join_report, read_snapshot, stamp

    snapshot = read_snapshot(path, key)
    if snapshot is None:
        return None
    sources, parts, summaries = snapshot
    durations: list[int] = []
    for root, starts, pruned, gitignore, listing in sources:
        if tree_listing(root, starts, frozenset(pruned), gitignore) != listing:
            return None
        now = time.perf_counter_ns()
        durations.append((now - started) // 1_000_000)
        started = now
    report = join_report(parts, durations)
    stamp(path, report)
    if line.given("--json"):
        return report
    for summary, duration in zip(summaries, durations, strict=True):
        summary["duration_ms"] = duration
    from .sync.summary import render_plain

    return render_plain(summaries)


def recorder(
    argv: tuple[str, ...],
    environ: Mapping[str, str],
    render_json: Callable[[list[dict[str, object]]], str],
) -> Recorder | None:
    """The snapshot recorder of the process's own command line, when it is eligible."""
    line = parse_invocation(argv, environ)
    if line is None:
        return None
    from .state.snapshots import Recorder

    return Recorder(line.key(environ, os.getcwd()), render_json)


# -- a search through the warm daemon --------------------------------------------------------

#: What the client sends of its environment besides `CHROMASYNC_*`: what settings read
#: (`HOME`, `CHROMA_API_KEY`) and what rich reads to draw for a terminal.
_SENT = frozenset(
    {"HOME", "CHROMA_API_KEY", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "COLUMNS"}
    | {"LINES", "TTY_COMPATIBLE", "TTY_INTERACTIVE"}
)
#: `search`'s settings options the client passes to a daemon it starts (as `daemon run`'s
#: flags); with any in `LATE` it starts none, the CLI does (`tests/unit/test_cmdline.py`).
EARLY = {"--data-dir": "data_dir", "--config": "config_path"}
LATE = frozenset(
    {"--provider", "--model", "--embedding-url", "--chroma-url", "--tenant", "--database"}
    | {"--sources-file", "--embed-option", "--chroma-token", "--allow-root-slash", "--rerank"}
)


def daemon_search(argv: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """Send a `search` command line, with its folder and environment, to the data dir's
    warm daemon (started when none runs), which runs it with the CLI itself: the exit
    code, or None for the CLI (no daemon, not the daemon's settings, anything unclean)."""
    from .owner.dial import daemon_off, daemon_socket, nobody_owns, post, start_daemon

    if argv[:1] != ["search"] or "--no-daemon" in argv or daemon_off(environ):
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    from .datadir import config_bytes, guess_from

    named, names = _named(argv)
    data_dir = guess_from(named, environ, cwd, config_bytes(named.get("--config"), environ, cwd))
    if data_dir is None:
        return None
    socket_path = daemon_socket(data_dir)
    if socket_path is None and nobody_owns(data_dir) and not LATE & names:
        socket_path = start_daemon(data_dir, {EARLY[k]: v for k, v in named.items()})
    if socket_path is None:
        return None
    env = {k: v for k, v in environ.items() if k.startswith("CHROMASYNC_") or k in _SENT}
    for fd in (0, 1, 2):  # rich's own order: the first terminal's width, unless COLUMNS
        if "COLUMNS" in env:
            break
        try:  # noqa: SIM105 - contextlib costs the console script ~10 ms to import
            env["COLUMNS"] = str(os.get_terminal_size(fd).columns)
        except (OSError, ValueError):
            pass
    tty = [sys.stdout.isatty(), sys.stderr.isatty()]
    body = {"argv": list(argv), "cwd": cwd, "env": env, "tty": tty}
    reply = post(socket_path, "/daemon/run", body, environ.get("CHROMASYNC_API_TOKEN"))
    size, _, rest = (reply or b"").partition(b"\n")  # len(stderr), stderr, stdout
    if reply is None or not size.isdigit() or int(size) > len(rest):
        return None
    sys.stderr.write(rest[: int(size)].decode("utf-8", "surrogatepass"))
    sys.stderr.flush()
    sys.stdout.write(rest[int(size) :].decode("utf-8", "surrogatepass"))
    sys.stdout.flush()
    return 0


def _named(argv: Sequence[str]) -> tuple[dict[str, str], set[str]]:
    """`--data-dir` and `--config` as given, and every option name given, before `--` (a
    wrong guess finds no daemon, or one of other settings that says so)."""
    found: dict[str, str] = {}
    names = set()
    for index, arg in enumerate(argv):
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        names.add(name)
        if name in EARLY and (eq or index + 1 < len(argv)):
            found[name] = value if eq else argv[index + 1]
    return found, names


__all__ = ["EARLY", "LATE", "daemon_search", "main", "quick_ingest", "recorder"]
