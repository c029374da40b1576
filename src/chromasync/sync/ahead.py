"""Planning ahead: a second process reads and chunks a run's files while this one embeds and
writes the waves planned before them.

Design notes: docs/internals.md, `sync/ahead.py`.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..corpus.documents import document_format
from ..corpus.read import read_file
from ..embed.tokens import TokenMeter, default_token_meter, load_token_meter
from ..errors import SourceError
from ..plan.triage import Triage
from ..records import Discovery, FileChange, FileState, Progress, SourceSpec
from .planning import FilePlanner, PlanSettings
from .waves import Tally

log = logging.getLogger(__name__)

#: The fewest files to read for which `auto` plans in a second process (starting it costs
#: about 0.2 s of one core).
AHEAD_MIN_FILES = 128
#: Frames the reading thread holds ahead of the writer (each up to `FRAME_RECORDS` records).
AHEAD_FRAMES = 16
FRAME_RECORDS = 64
FRAME_FILES = 32
PROGRESS_S = 0.2
#: The worker's niceness beside a model on this machine's cores (`plan_ahead: on`): it takes
#: the time the model leaves idle. Otherwise it runs at this process's priority: at nice 19
#: on a machine kept busy by other programs it starves (a cold ingest of 1,500 abstracts
#: took 131 s against 12 s planned in one process, with two busy loops beside it).
NICE = 19


@dataclass(frozen=True, slots=True)
class AheadJob:
    """What the worker needs to build the run's `FilePlanner` (picklable)."""

    spec: SourceSpec
    discovery: Discovery
    sorted_: Triage
    manifest: Mapping[str, FileState]
    run: Tally
    settings: PlanSettings
    tokenizer_path: str | None
    log_level: int
    nice: int = 0  # the worker's niceness (`NICE` beside a model on this machine's cores)


def use(
    mode: str, files_to_read: int, cpus: int | None = None, model_on_cores: bool = False
) -> bool:
    """Whether a run plans in a second process: `on`, or `auto` with a second core, at
    least `AHEAD_MIN_FILES` files to read, an interpreter to run it (not a frozen app), and
    an embedding model that does not run on this machine's cores (`model_on_cores`: the two
    would share them, and the model gains less than the worker costs)."""
    if mode == "on":
        return files_to_read > 0
    if mode != "auto" or model_on_cores or not sys.executable or getattr(sys, "frozen", False):
        return False
    return (cpus if cpus is not None else available_cpus()) >= 2 and (
        files_to_read >= AHEAD_MIN_FILES
    )


def command() -> list[str]:
    """The worker's command line (tests put a failing one here)."""
    return [sys.executable, "-m", "chromasync.sync.ahead"]


def child_env(package_root: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The worker's environment: this one, with the folder this package was imported from
    first on PYTHONPATH when it is a source checkout (`src/`), so that the worker runs the
    same code. An installed package is found as it was here; a site-packages folder is
    never put before the standard library."""
    env = dict(environ)
    if package_root.name not in ("site-packages", "dist-packages"):
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(package_root), env.get("PYTHONPATH", "")) if p
        )
    return env


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


class AheadPlanner:
    """The run of `here` (a `FilePlanner`) in a second process, with the same face:
    `changes()`, then `touched`, `skipped` and the counts in `run`, as `here` would leave
    them. `here` plans itself when no process can be started."""

    def __init__(
        self, here: FilePlanner, tokenizer_path: str | None, progress: Progress, nice: int = 0
    ) -> None:
        self.job = AheadJob(
            spec=here.spec,
            discovery=here.discovery,
            sorted_=here.sorted_,
            manifest=readable_rows(here.manifest, here.sorted_),
            run=here.run,
            settings=here.settings,
            tokenizer_path=tokenizer_path,
            log_level=logging.getLogger("chromasync").getEffectiveLevel(),
            nice=nice,
        )
        self.manifest = here.manifest
        self.run = here.run
        self.touched: list[FileState] = []
        self.skipped: dict[str, FileState] = {}
        self._here = here
        self._progress = progress

    def changes(self) -> Iterator[FileChange]:
        run = self.run
        before = Counter(run.skipped)
        try:
            worker = _Worker(self.job)
        except OSError as exc:  # a sandbox without child processes, a missing interpreter
            yield from self._plan_here(f"cannot start the planning process ({exc})")
            return
        heard = False
        try:
            while True:
                frame = worker.next()
                kind = frame[0]
                if kind == "eof" and not heard:  # it could not even begin: nothing is lost
                    note = f"the planning process ended at its start ({worker.exit_note()})"
                    yield from self._plan_here(note)
                    return
                heard = True
                if kind == "changes":
                    run.read_ns = frame[1]
                    yield from frame[2]
                elif kind == "read":
                    self._progress("read", frame[1], frame[2])
                elif kind == "log":
                    record: logging.LogRecord = frame[1]
                    logging.getLogger(record.name).handle(record)
                elif kind == "done":
                    _, run.read_ns, touched, skipped, tally = frame
                    self.touched.extend(touched)
                    self.skipped.update(skipped)
                    merge_counts(run, before, tally)
                    return
                elif kind == "error":
                    raise frame[1]
                else:  # "eof" after some of its frames: the run fails, the next one heals
                    raise SourceError(  # its files could not be read: a SourceError
                        "the planning process ended without its result"
                        f" ({worker.exit_note()}); set CHROMASYNC_PLAN_AHEAD=off"
                        " to plan in this process"
                    )
        finally:
            worker.stop()

    def _plan_here(self, why: str) -> Iterator[FileChange]:
        log.warning("%s; planning in this one", why)
        self.touched, self.skipped = self._here.touched, self._here.skipped
        yield from self._here.changes()


def readable_rows(manifest: Mapping[str, FileState], sorted_: Triage) -> dict[str, FileState]:
    """The manifest rows a planner can look at: those of the files triage found changed, and
    of every document and sidecar (a sidecar group can bring any of them to be read, see
    `plan.sidecars`). The rest, most of a large source on a re-run, need not be sent."""
    changed = {f.rel_path for f in sorted_.to_read}
    return {
        path: state
        for path, state in manifest.items()
        if path in changed or state.asset or document_format(path) is not None
    }


def merge_counts(run: Tally, before: Counter[str], planned: Tally) -> None:
    """Bring the worker's counts into this run's tally. The worker started from a copy of
    `run` whose skips were `before`; since then this side only added skips (stored writes
    the store refused), and the worker owns files read, unchanged, and documents."""
    added_here = run.skipped - before
    run.skipped.clear()
    run.skipped.update(planned.skipped)
    run.skipped.update(added_here)
    run.files_unchanged = planned.files_unchanged
    run.documents = planned.documents
    run.pages = planned.pages
    run.warnings = planned.warnings


#: Workers not stopped yet: `_stop_all` stops them before the interpreter shuts down.
_LIVE: weakref.WeakSet[_Worker] = weakref.WeakSet()


def _stop_all() -> None:
    """At exit, every worker still running is stopped while threads can still run.

    A run that fails (a full disk) may leave its planner's generator in a reference cycle
    that only the last garbage collection ends, at interpreter shutdown: `stop` then ran
    while the reading thread, back from its read, could no longer take the interpreter and
    so held the pipe's lock for good, and closing the pipe aborted the process (exit 134,
    "_enter_buffered_busy ... daemon threads")."""
    for worker in list(_LIVE):
        worker.stop()


atexit.register(_stop_all)


class _Worker:
    """The process, and the thread that reads its frames into a bounded queue."""

    def __init__(self, job: AheadJob) -> None:
        env = child_env(Path(__file__).resolve().parents[2], os.environ)
        self.proc = subprocess.Popen(
            command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.frames: queue.Queue[tuple[Any, ...]] = queue.Queue(maxsize=AHEAD_FRAMES)
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._read, args=(self.proc.stdout,), name="chromasync-plan-ahead", daemon=True
        )
        self._thread.start()
        _LIVE.add(self)
        try:
            with self.proc.stdin as stdin:
                pickle.dump(job, stdin, protocol=pickle.HIGHEST_PROTOCOL)
        except OSError:  # it died at once: its exit is reported by the frames' end
            pass

    def next(self) -> tuple[Any, ...]:
        return self.frames.get()

    def exit_note(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "still running"
        return f"exit code {code}"

    def stop(self) -> None:
        _LIVE.discard(self)
        self._stopping.set()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._thread.join(timeout=5)
        # A thread still reading holds the pipe's lock: closing it then would abort the
        # interpreter at shutdown; the pipe goes with the process instead.
        if self.proc.stdout is not None and not self._thread.is_alive():
            self.proc.stdout.close()

    def _read(self, stream: IO[bytes]) -> None:
        while True:
            try:
                frame = pickle.load(stream)  # noqa: S301 - our own child, over a private pipe
            except Exception:  # noqa: BLE001 - EOF, or a frame cut short by its death
                self._put(("eof",))
                return
            if not self._put(frame) or frame[0] in ("done", "error"):
                return

    def _put(self, frame: tuple[Any, ...]) -> bool:
        while not self._stopping.is_set():
            try:
                self.frames.put(frame, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False


# -- the worker's side ---------------------------------------------------------------------


class _Frames:
    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def send(self, frame: tuple[Any, ...]) -> None:
        pickle.dump(frame, self._stream, protocol=pickle.HIGHEST_PROTOCOL)
        self._stream.flush()

    def drop(self) -> None:
        """Let go of a pipe nobody reads any more (what is left unsent is dropped)."""
        with contextlib.suppress(OSError):
            self._stream.close()


class _Forward(logging.Handler):
    """Sends the planner's log records to the parent, which handles them as its own."""

    def __init__(self, frames: _Frames) -> None:
        super().__init__()
        self._frames = frames

    def emit(self, record: logging.LogRecord) -> None:
        record.msg = record.getMessage()
        record.args = None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        self._frames.send(("log", record))


def plan(job: AheadJob, frames: _Frames) -> None:
    """Run the job's planner, sending its changes in frames of a few dozen records."""
    root = logging.getLogger("chromasync")
    root.setLevel(job.log_level)
    root.addHandler(_Forward(frames))
    root.propagate = False
    meter: list[TokenMeter] = []

    def open_meter() -> TokenMeter:
        if not meter:
            path = job.tokenizer_path
            meter.append(load_token_meter(path) if path else default_token_meter())
        return meter[0]

    last = [0.0]

    def progress(phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_S:
            last[0] = now
            frames.send((phase, done, total))

    planner = FilePlanner(
        job.spec,
        job.discovery,
        job.sorted_,
        job.manifest,
        job.run,
        job.settings,
        meter=open_meter,
        read=read_file,
        clock=time.monotonic,
        progress=progress,
    )
    batch: list[FileChange] = []
    records = 0
    for change in planner.changes():
        batch.append(change)
        records += len(change.to_embed) + len(change.to_rewrite)
        if records >= FRAME_RECORDS or len(batch) >= FRAME_FILES:
            frames.send(("changes", job.run.read_ns, batch))
            batch, records = [], 0
    if batch:
        frames.send(("changes", job.run.read_ns, batch))
    frames.send(("done", job.run.read_ns, planner.touched, planner.skipped, job.run))


def portable(exc: BaseException) -> BaseException:
    """`exc` if it survives pickling, else a RuntimeError that names it."""
    try:
        pickle.loads(pickle.dumps(exc))  # noqa: S301 - made just above
    except Exception:  # noqa: BLE001 - any failure to round-trip
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops this
    frames = _Frames(os.fdopen(os.dup(1), "wb"))
    os.dup2(2, 1)  # nothing but frames goes down the pipe
    sys.stdout = sys.stderr
    try:
        job = pickle.load(sys.stdin.buffer)  # noqa: S301 - from the parent, over a private pipe
        if job.nice:
            with contextlib.suppress(AttributeError, OSError):  # not on Windows
                os.nice(job.nice)
        plan(job, frames)
    except BrokenPipeError:  # the parent is gone
        frames.drop()
    except Exception as exc:  # noqa: BLE001 - whatever it is, the parent raises it
        try:
            frames.send(("error", portable(exc)))
        except BrokenPipeError:
            frames.drop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
