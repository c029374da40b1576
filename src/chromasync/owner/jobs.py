"""Background jobs for a long-running owner: one worker thread, one write at a time.

`POST /reindex`, `POST /sources`, `DELETE /sources/{label}` and the watcher submit jobs;
`GET /jobs/{id}` reads their progress and summaries. Jobs run one after another on one
worker thread (one writer per store). A job submitted while an equal one (same `key`) is
still queued is merged into it, so a burst of requests or file events costs one run.
Finished jobs are kept (the last `keep`) for their summaries.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ChromasyncError, NotFound
from ..sync.ingest import Progress
from .queries import JobState

log = logging.getLogger(__name__)

#: What a job runs: given a progress callback, it returns JSON-ready summaries.
Work = Callable[[Progress], list[dict[str, Any]]]


@dataclass
class Job:
    """One ingest job: its work, and its state (a record replaced under the runner's lock)."""

    state: JobState
    work: Work = field(repr=False)
    key: object = field(repr=False, default=None)

    @property
    def id(self) -> str:
        return self.state.id

    def update(self, **changes: Any) -> None:
        self.state = dataclasses.replace(self.state, **changes)

    def as_json(self) -> dict[str, Any]:
        return self.state.as_json()


class JobRunner:
    """Runs submitted ingests on one worker thread, in order."""

    def __init__(
        self,
        *,
        keep: int = 100,
        clock: Callable[[], float] = time.time,
        on_finish: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self._on_finish = on_finish
        self._keep = keep
        self._clock = clock
        self._cond = threading.Condition()
        self._queue: deque[Job] = deque()
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._ids = itertools.count(1)
        self._closing = False
        self._thread = threading.Thread(target=self._work, name="chromasync-jobs", daemon=True)
        self._thread.start()

    def submit(
        self, labels: Sequence[str], work: Work, *, key: object = None, trigger: str = "api"
    ) -> Job:
        """Queue `work`; a queued job with an equal, non-None `key` is returned instead."""
        with self._cond:
            if self._closing:
                raise ChromasyncError("the service is shutting down; no new jobs are accepted")
            if key is not None:
                for queued in self._queue:
                    if queued.key == key:
                        return queued
            made = self._clock()
            state = JobState(f"job-{next(self._ids)}", "queued", tuple(labels), trigger, made)
            job = Job(state, work, key)
            self._queue.append(job)
            self._jobs[job.id] = job
            while len(self._jobs) > self._keep:
                oldest = next(iter(self._jobs.values()))
                if oldest.state.status in ("queued", "running"):
                    break
                self._jobs.popitem(last=False)
            self._cond.notify_all()
            return job

    def drop_queued(self, label: str) -> None:
        """Cancel the queued jobs of one source (it is being removed)."""
        with self._cond:
            for job in [j for j in self._queue if j.state.sources == (label,)]:
                self._queue.remove(job)
                error = f"cancelled: source {label!r} was removed"
                job.update(status="failed", error=error, finished=self._clock())
            self._cond.notify_all()

    def get(self, job_id: str) -> dict[str, Any]:
        with self._cond:
            job = self._jobs.get(job_id)
            if job is None:
                raise NotFound(f"no job {job_id!r} (jobs are kept until the service restarts)")
            return job.as_json()

    def list(self) -> list[dict[str, Any]]:
        with self._cond:
            return [j.as_json() for j in reversed(self._jobs.values())]

    def wait(self, job_id: str, timeout: float | None = None) -> dict[str, Any]:
        """Block until the job has finished (or `timeout` passed); return its state."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                job = self._jobs.get(job_id)
                if job is None:
                    raise NotFound(f"no job {job_id!r}")
                if job.state.status in ("done", "failed"):
                    return job.as_json()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return job.as_json()
                self._cond.wait(left)

    def idle(self) -> bool:
        with self._cond:
            return not self._queue and all(
                j.state.status in ("done", "failed") for j in self._jobs.values()
            )

    def close(self, timeout: float | None = None) -> None:
        """Finish the running job, drop queued ones, stop the worker."""
        with self._cond:
            self._closing = True
            for job in self._queue:
                job.update(status="failed", error="cancelled: the service stopped")
                job.update(finished=self._clock())
            self._queue.clear()
            self._cond.notify_all()
        self._thread.join(timeout)

    # -- worker ----------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if self._closing:
                    return
                job = self._queue.popleft()
                job.update(status="running", started=self._clock())
            self._execute(job)

    def _execute(self, job: Job) -> None:
        def progress(phase: str, done: int, total: int) -> None:
            with self._cond:
                job.update(phase=phase, done=done, total=total)

        try:
            summaries = job.work(progress)
        except ChromasyncError as exc:
            outcome: dict[str, Any] = {"status": "failed", "error": str(exc)}
        except Exception as exc:  # a job must not kill the worker
            log.exception("job %s failed", job.id)
            outcome = {"status": "failed", "error": f"internal error ({type(exc).__name__})"}
        else:
            outcome = {"status": "done", "summaries": tuple(summaries)}
        with self._cond:
            job.update(**outcome, finished=self._clock())
            finished = job.as_json()
            self._cond.notify_all()
        if self._on_finish is not None:
            try:
                self._on_finish(finished)
            except Exception:  # a listener must not kill the worker
                log.exception("job %s: a listener failed", job.id)


__all__ = ["Job", "JobRunner"]
