"""The console script's entry, and the fast path of an unchanged re-run of `ingest`.

An unchanged re-run should cost about what walking and stat-ing the tree costs. The full
CLI spends ten times that importing click, rich, SQLite and its own ~60 modules before it
looks at a file, so the console script starts here, in a module that imports only the
standard library's built-in modules (`os`, `marshal`, `fcntl`, `_sha256`):

1. Only `ingest` with settings flags is eligible (paths, `--json`, `--quiet`, `--data-dir`,
   `--config`, `--source`...: `cmdline.INGEST`); any other command or flag goes straight to
   the CLI, and so does a run whose human output would go to a terminal (rich draws it).
2. The invocation's key is `cmdline.line_key` of its arguments: its folder, the
   `CHROMASYNC_*` environment, the config file's bytes, this code's version and location.
3. Under the data dir's lock, taken without waiting (a holder means the CLI must handle
   it), the snapshot that the last full run of the same key recorded is read (`snapshots`):
   the config files that run read, the state file's identity, and per source the listing its
   walk saw (`listing`: each folder's entries with inode, size, mtime_ns and ctime_ns,
   symlink verdicts, the folders an ignore rule pruned) and what a re-run over it reports.
4. If every config file and the state file are as recorded and every source's tree lists
   exactly the same, that report is printed with this run's own time, and the run is
   stamped for `status`. Anything else falls through to the full CLI.

A full run records a snapshot (`RecorderFactory`, handed to the CLI and fed by the ingest's
`SettledSource` reports) only when a re-run over the tree it walked would do nothing by the
full path's own triage: no new, changed, racily clean or gone file, the source marked clean.
Taking the data dir's lock deletes every snapshot (`snapshots.invalidate`), so any writer
(ingest, verify --repair, sources remove, reset, serve, watch) voids them before it changes
anything. `CHROMASYNC_NO_FASTPATH` set to anything but empty turns the fast path off.
"""

from __future__ import annotations

import os
import sys
import time

from .cmdline import OFF_ENV, Line, parse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from .state.snapshots import Recorder

CRASH_ENV = "CHROMASYNC_CRASH_AT"


def main() -> int | None:
    """The `chromasync` console script: the fast path when it applies, else the CLI."""
    argv = sys.argv[1:]
    code = quick_ingest(argv, os.environ)
    if code is None and argv[:1] == ["search"]:
        from .fastsearch import daemon_search, quick_search

        code = quick_search(argv, os.environ)
        if code is None:
            code = daemon_search(argv, os.environ)
    if code is not None:
        return code
    from .cli.main import main as cli_main

    # The CLI records a snapshot for this command line (and only for it): not a CLI called
    # from Python with other arguments.
    cli_main(obj=RecorderFactory(tuple(argv)))
    return None


# -- the invocation --------------------------------------------------------------------------


def parse_invocation(argv: Sequence[str], environ: Mapping[str, str]) -> Line | None:
    """The command line as an eligible `ingest`, or None when the CLI must run it."""
    if not argv or argv[0] != "ingest" or environ.get(OFF_ENV) or environ.get(CRASH_ENV):
        return None
    return parse(argv)


def invocation_key(invocation: Line, environ: Mapping[str, str], cwd: str) -> str:
    """What the outcome of a no-op run depends on, besides files (`cmdline.line_key`)."""
    return invocation.key("ingest", invocation.argv, environ, cwd)


def quick_ingest(argv: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """Answer an unchanged re-run from its snapshot: the exit code, or None for the CLI."""
    started = time.perf_counter_ns()
    invocation = parse_invocation(argv, environ)
    if invocation is None or not (invocation.given("--json") or not sys.stdout.isatty()):
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    data_dir = invocation.data_dir(environ, cwd)  # a wrong guess finds no snapshot of the key
    if data_dir is None:
        return None
    key = invocation_key(invocation, environ, cwd)
    from .state.snapshots import LOCK_FILE, snapshot_path  # an ingest's only: search needs none

    try:
        fd = os.open(os.path.join(data_dir, LOCK_FILE), os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    import fcntl

    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            if not _reader_left(fd, data_dir):
                return None  # held: the CLI says by whom, or waits, or goes through the owner
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}: chromasync {' '.join(argv)}"[:300].encode() + b"\n")
        try:
            text = _replay(snapshot_path(data_dir, key), key, started, invocation)
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock
    if text is None:
        return None
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0


def _reader_left(fd: int, data_dir: str) -> bool:
    """The lock's holder was a reader (the search daemon), and it left when asked."""
    from .datadir import READER_MARK

    text = os.pread(fd, 400, 0).decode("utf-8", "replace").strip()
    if not text.partition(": ")[2].startswith(READER_MARK):
        return False
    from .owner.dial import make_way

    return make_way(data_dir)


def _replay(path: str, key: str, started: int, invocation: Line) -> str | None:
    """The report of the recorded no-op run, when nothing it depends on changed."""
    from .corpus.listing import tree_listing
    from .state.snapshots import join_report, read_snapshot, stamp

    snapshot = read_snapshot(path, key)
    if snapshot is None or not snapshot.files_as_recorded():
        return None
    durations: list[int] = []
    for root, starts, pruned, gitignore, listing in snapshot.sources:
        if tree_listing(root, starts, frozenset(pruned), gitignore) != listing:
            return None
        now = time.perf_counter_ns()
        durations.append((now - started) // 1_000_000)
        started = now
    report = join_report(snapshot.json_parts, durations)
    stamp(path, report)
    if invocation.given("--json"):
        return report
    for summary, duration in zip(snapshot.summaries, durations, strict=True):
        summary["duration_ms"] = duration
    from .sync.summary import render_plain  # plain lines only: `--json` needs none of it

    return render_plain(snapshot.summaries)


# -- recording (the full path) ---------------------------------------------------------------


class RecorderFactory:
    """Makes the recorder of the process's own command line, when it is eligible."""

    __slots__ = ("argv",)

    def __init__(self, argv: tuple[str, ...]) -> None:
        self.argv = argv

    def __call__(
        self, environ: Mapping[str, str], render_json: Callable[[list[dict[str, object]]], str]
    ) -> Recorder | None:
        invocation = parse_invocation(self.argv, environ)
        if invocation is None:
            return None
        from .state.snapshots import Recorder

        return Recorder(invocation_key(invocation, environ, os.getcwd()), render_json)

    def search_key(self, environ: Mapping[str, str]) -> str | None:
        """The keyword fast path's snapshot key of this command line (`fastsearch`)."""
        from .fastsearch import search_recorder_key

        return search_recorder_key(self.argv, environ)
