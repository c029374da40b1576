"""The owner runtime: what a long-running surface holds while it owns a data dir.

`Service` is the API-level object behind `chromasync serve`, `watch` and `mcp`: it takes the
data dir's lock for the life of the process (`lock.StoreLock(owner=True)`), advertises the
process in `owner.json` (see `owner`), keeps one embedder (so the model loads once), and runs
ingests on one background worker (`jobs.JobRunner`), one at a time. The surfaces stay thin:
they parse input, call `Service` or `api`, and render.

    with Service(settings, role="serve", url="http://127.0.0.1:8765") as service:
        job = service.reindex(["notes"])
        hits = service.search("grinder", k=5)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from . import __version__, api
from .config import Settings
from .embed import Embedder
from .errors import LockError, NotFound
from .ingest import IngestOptions, Progress
from .jobs import JobRunner
from .lock import StoreLock
from .owner import OwnerInfo, clear_owner, find_owner, new_owner, write_owner
from .records import Hit, IngestSummary, SourceSpec

log = logging.getLogger(__name__)


class Service:
    """This process owns `settings.data_dir` while the service is open."""

    def __init__(
        self,
        settings: Settings,
        role: str,
        *,
        url: str | None = None,
        embedder: Embedder | None = None,
        allow_roots: Sequence[Path] = (),
        environ: Mapping[str, str] | None = None,
        on_finish: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.settings = settings
        self._on_finish = on_finish
        self.source_listeners: list[Callable[[SourceSpec], None]] = []
        self.role = role
        self.url = url
        self.allow_roots = tuple(Path(r).expanduser().resolve() for r in allow_roots)
        self._environ = environ
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._lock = StoreLock(settings.data_dir, owner=True, name=f"chromasync {role}")
        self.info: OwnerInfo | None = None
        self.jobs: JobRunner | None = None

    # -- life --------------------------------------------------------------------------------

    def open(self) -> Service:
        try:
            self._lock.acquire()
        except LockError:
            owner = find_owner(self.settings.data_dir)
            if owner is None:
                raise
            raise LockError(
                f"the data dir {str(self.settings.data_dir)!r} is owned by {owner.describe()}; "
                "use that one (or stop it first)"
            ) from None
        self.info = new_owner(self.settings.data_dir, self.role, self.url)
        write_owner(self.settings.data_dir, self.info)
        self.jobs = JobRunner(self._run_ingest, on_finish=self._on_finish)
        return self

    def close(self) -> None:
        if self.jobs is not None:
            self.jobs.close(timeout=600)
            self.jobs = None
        if self.info is not None:
            clear_owner(self.settings.data_dir, self.info)
            self.info = None
        self._lock.release()

    def __enter__(self) -> Service:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def socket(self) -> str | None:
        return self.info.socket if self.info else None

    @property
    def embedder(self) -> Embedder:
        with self._embedder_lock:
            if self._embedder is None:
                self._embedder = api.make_embedder_for(self.settings)
            return self._embedder

    # -- what the surfaces call --------------------------------------------------------------

    def search(self, query: str, **params: Any) -> list[Hit]:
        return api.search(query, self.settings, embedder=self.embedder, **params)

    def status(self) -> dict[str, Any]:
        """The index (sources, files, chunks, last run), this owner, and its jobs."""
        rows = [r for r in api.status(self.settings) if r.collection == self.settings.collection]
        sources = []
        for row in rows:
            item = dataclasses.asdict(row)
            item["last_finished"] = _iso(row.last_finished_ns)
            sources.append(item)
        finished = [r.last_finished_ns for r in rows if r.last_finished_ns]
        jobs = self.jobs.list() if self.jobs else []
        return {
            "version": __version__,
            "collection": self.settings.collection,
            "owner": self.info.as_json() if self.info else None,
            "totals": {
                "sources": len(rows),
                "files": sum(r.files for r in rows),
                "chunks": sum(r.chunks for r in rows),
            },
            "last_run": _iso(max(finished)) if finished else None,
            "jobs": {
                "running": sum(j["status"] == "running" for j in jobs),
                "queued": sum(j["status"] == "queued" for j in jobs),
            },
            "sources": sources,
        }

    def ingest_now(
        self,
        specs: Sequence[SourceSpec],
        options: IngestOptions | None = None,
        progress: Progress | None = None,
    ) -> list[IngestSummary]:
        """Run an ingest in the calling thread (waits for a running job to finish first)."""
        return self._run_ingest(specs, options or self.default_options(), progress)

    def reindex(
        self,
        labels: Sequence[str] = (),
        options: IngestOptions | None = None,
        trigger: str = "api",
    ) -> dict[str, Any]:
        """Queue a delta ingest of the named sources (all known ones when none); the job."""
        assert self.jobs is not None, "the service is not open"
        specs = self.source_specs(labels)
        if not specs:
            raise NotFound("no source to reindex: add one first (POST /sources)")
        job = self.jobs.submit(specs, options or self.default_options(), trigger)
        return self.jobs.get(job.id)

    def submit(self, specs: Sequence[SourceSpec], trigger: str) -> str:
        assert self.jobs is not None, "the service is not open"
        return self.jobs.submit(specs, self.default_options(), trigger).id

    def add_source(self, spec: SourceSpec) -> dict[str, Any]:
        """Index a new source now (a job) and tell the listeners (the watcher) about it."""
        assert self.jobs is not None, "the service is not open"
        job = self.jobs.submit([spec], self.default_options(), "add-source")
        for listener in self.source_listeners:
            listener(spec)
        return self.jobs.get(job.id)

    def default_options(self) -> IngestOptions:
        return IngestOptions(max_file_bytes=self.settings.max_file_bytes)

    def source_specs(self, labels: Sequence[str] = ()) -> list[SourceSpec]:
        """The specs of known sources, all or those labelled (unknown labels: `NotFound`)."""
        known = {s.label: s for s in api.known_sources(self.settings)}
        if not labels:
            return list(known.values())
        missing = [label for label in labels if label not in known]
        if missing:
            names = ", ".join(sorted(known)) or "none yet"
            raise NotFound(f"no source labelled {missing[0]!r} (known: {names})")
        return [known[label] for label in dict.fromkeys(labels)]

    # -- the worker's ingest -------------------------------------------------------------------

    def _run_ingest(
        self, specs: Sequence[SourceSpec], options: IngestOptions, progress: Progress | None
    ) -> list[IngestSummary]:
        return api.ingest(
            specs,
            self.settings,
            options,
            embedder=self.embedder,
            environ=self._environ,
            progress=progress,
            wait=True,
        )


def _iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).isoformat(timespec="seconds")


__all__ = ["Service"]
