"""The owner runtime: what a long-running surface holds while it owns a data dir.

`Service` is the `Index` behind `chromasync serve`, `watch`, `mcp` and `nats`: it holds the
data dir's lock for the life of the process and advertises it in `owner.json`
(`owner.locate`), keeps one embedder (query vectors in a bounded LRU, `embed.querycache`)
and warm sessions, and runs every write on one background worker (`jobs.JobRunner`).

    with Service(settings, role="serve", url="http://127.0.0.1:8765") as service:
        job = service.reindex(["notes"])
        result = service.search(api.SearchArgs("grinder", k=5))
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import api
from ..answer.summaries import SummariesReport
from ..config.file import load_config_file
from ..config.settings import Settings
from ..embed import Embedder
from ..embed.querycache import QueryCache
from ..errors import ConfigError, LockError
from ..records import IngestSummary, SourceSpec
from ..state.lock import StoreLock
from ..sync.ingest import IngestOptions, Progress
from ..sync.peers import ShareReport
from ..sync.registry import RemovedSource, SourceInfo
from ..sync.verify import SourceCheck
from .daemon import settings_key
from .jobs import Job, JobRunner
from .local import LocalIndex
from .locate import OwnerInfo, clear_owner, find_owner, new_owner, write_owner
from .queries import (
    IndexStatus,
    IngestRequest,
    JobState,
    RemoveRequest,
    ShareRequest,
    SummariesQuery,
    VerifyRequest,
)
from .routes import check_owner_serves, ingest_through_owner

log = logging.getLogger(__name__)
RUN_TIMEOUT = 3600.0


class Service(LocalIndex):
    """This process owns `settings.data_dir` while the service is open; it is an `Index`
    (the operations of `LocalIndex`, with its embedder, warm sessions and jobs)."""

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
        reload: Callable[[], Settings] | None = None,
        reader: bool = False,
        key: str = "",
    ) -> None:
        """`reader`: the search daemon (`owner.daemon`), which holds the data dir without ever
        writing and leaves when a writer needs it; `key`: its settings key, advertised
        (another role's: `daemon.settings_key(owner=True)`, which its callers must match)."""
        self.settings = settings
        self._jobs = {}
        self.role = role
        self.url = url
        self.allow_roots = tuple(Path(r).expanduser().resolve() for r in allow_roots)
        self.source_listeners: list[Callable[[SourceSpec], None]] = []
        self.removal_listeners: list[Callable[[str], None]] = []
        self._environ = environ
        self._embedder = QueryCache(embedder) if embedder is not None else None
        self._embedder_lock = threading.Lock()
        self._on_finish = on_finish
        self._reload = reload
        self.reader = reader
        self.key = key or ("" if reader else settings_key(settings, owner=True))
        self._lock = StoreLock(
            settings.data_dir, owner=True, reader=reader, name=f"chromasync {role}"
        )
        self.info: OwnerInfo | None = None
        self.jobs: JobRunner | None = None
        # label -> resolved root of each source added through this service: the clash
        # check and the claim are one step, so two racing requests cannot both win
        self._claims: dict[str, Path] = {}
        self._claims_lock = threading.Lock()
        self._summaries_lock = threading.Lock()
        # the store and the state stay open between searches (each commit to the state
        # opens them anew): what makes a warm search fast
        self.sessions = api.WarmSessions(settings, lambda: self.embedder)

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
        self.info = new_owner(self.settings.data_dir, self.role, self.url, self.key)
        write_owner(self.settings.data_dir, self.info)
        self.jobs = JobRunner(on_finish=self._on_finish)
        return self

    def close(self) -> None:
        if self.jobs is not None:
            self.jobs.close(timeout=RUN_TIMEOUT)
            self.jobs = None
        self.sessions.close()
        if self.info is not None:
            clear_owner(self.settings.data_dir, self.info)
            _remove_socket(self.info.socket)  # also when stopped before it served
            self.info = None
        self._lock.release()

    def __enter__(self) -> Service:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def socket(self) -> str | None:
        return self.info.socket if self.info else None

    @property
    def embedder(self) -> Embedder:
        with self._embedder_lock:
            if self._embedder is None:
                self._embedder = QueryCache(api.make_embedder_for(self.settings))
            return self._embedder

    def _runner(self) -> JobRunner:
        if self.jobs is None:
            raise LockError("the service is not running")
        if self.reader:
            raise LockError(
                "the search daemon only reads: run the command itself (it stops the daemon, "
                "which the next search starts again)"
            )
        return self.jobs

    # -- reading: the operations of the index seam (`owner.local.LocalIndex`) ------------------

    reads_paths = False  # a compared file: an indexed one, or bytes a client sent

    def _shared_embedder(self) -> Embedder:
        return self.embedder

    def _retrieve(self, request: api.SearchRequest) -> api.SearchResult:
        return api.retrieve(request, self.settings, sessions=self.sessions)

    def summaries(self, query: SummariesQuery) -> SummariesReport:
        with self._summaries_lock:  # one writer of the summaries cache at a time
            return LocalIndex.summaries(self, query)

    def status(self) -> IndexStatus:
        """The index (sources, files, chunks, last run), this owner, and its jobs."""
        jobs = self.jobs.list() if self.jobs else []
        return dataclasses.replace(
            LocalIndex.status(self),
            owner=self.info.as_json() if self.info else None,
            jobs_running=sum(j["status"] == "running" for j in jobs),
            jobs_queued=sum(j["status"] == "queued" for j in jobs),
        )

    def sources(self) -> list[SourceInfo]:
        """The sources registry (configured and indexed; the config read again)."""
        self._reload_settings()
        return api.list_sources(self.settings)

    def source_specs(self, labels: Sequence[str] = ()) -> list[SourceSpec]:
        """Specs of the known sources (all, or those labelled) whose folders can be watched."""
        return api.known_specs(self.settings, labels)

    # -- writing (every write is a job on the one worker) -----------------------------------------

    def default_options(self) -> IngestOptions:
        return api.default_options(self.settings)

    def _reindex(self, labels: Sequence[str], options: IngestOptions) -> JobState:
        """The seam's reindex: a delta ingest of known sources queued; the job's state."""
        return JobState.of(self.queue_reindex(labels, options))

    def wait(self, job_id: str, timeout: float | None = None) -> JobState:
        """Block until a job has finished (or `timeout` passed)."""
        return JobState.of(self._runner().wait(job_id, timeout=timeout))

    def ingest(
        self, request: IngestRequest, *, notice: Callable[[str], None] | None = None, **hooks: Any
    ) -> list[IngestSummary]:
        """As through this owner's client: a reindex job of the known sources, when the
        request asks nothing else (`owner.routes`), waited for."""
        return ingest_through_owner(self, request, self._described(), self.settings, notice)

    def _described(self) -> str:
        return self.info.describe() if self.info else f"chromasync {self.role}"

    def verify(self, request: VerifyRequest) -> list[SourceCheck]:
        """The report, as through this owner's client (`owner.routes`: `repair` refused,
        named as its wire spells it: `POST /index/verify`), once a running job finished."""
        check_owner_serves(request, self._described(), spell=str)
        return api.verify(self.settings, request.labels, wait=True)

    def share(self, request: ShareRequest) -> ShareReport:
        """Refused, as through this owner's client (`owner.routes`)."""
        check_owner_serves(request, self._described())
        raise AssertionError("unreachable: `owner.routes` refuses share")

    def queue_reindex(
        self,
        labels: Sequence[str] = (),
        options: IngestOptions | None = None,
        trigger: str = "api",
    ) -> dict[str, Any]:
        """Queue a delta ingest of known sources by label (all when none); the job's state.

        The config file is read again first, so sources declared meanwhile (`chromasync
        sources add`) are known.
        """
        self._reload_settings()
        labels = tuple(dict.fromkeys(labels))
        api.select_known(self.settings, labels)  # unknown labels fail now, not in the job
        options = options or self.default_options()
        shown = labels or tuple(s.label for s in self.source_specs())
        key = ("known", labels, options)
        job = self._queue(api.KnownSources(labels), shown, key, options, trigger)
        return self._runner().get(job.id)

    def submit(self, specs: Sequence[SourceSpec], trigger: str) -> str:
        """Queue a delta ingest of these specs (the watcher's sources); the job id."""
        specs = list(specs)
        labels = [s.label for s in specs]
        return self._queue(specs, labels, ("specs", specs), self.default_options(), trigger).id

    def _queue(
        self,
        sources: api.KnownSources | list[SourceSpec],
        shown: Sequence[str],
        key: Any,
        options: IngestOptions,
        trigger: str,
    ) -> Job:
        """A delta ingest of `sources` as a job on the one worker (`key`: its duplicates)."""

        def work(progress: Progress) -> list[dict[str, Any]]:
            summaries = api.ingest(
                sources,
                self.settings,
                options,
                embedder=self.embedder,
                environ=self._environ,
                progress=progress,
                wait=True,
            )
            return [s.as_json() for s in summaries]

        return self._runner().submit(shown, work, key=key, trigger=trigger)

    def add_source(self, root: Path, label: str | None, kind: str) -> dict[str, Any]:
        """Add a folder as a source and index it (a job).

        With a config file the source is declared there (`api.add_source`); without one it
        is indexed as an undeclared source, which the state then remembers.
        """
        self._runner()  # the search daemon refuses before the config file changes
        with self._claims_lock:
            if self.settings.config_file is not None:
                entry = api.add_source(self.settings, root, label=label, kind=kind)
                self._reload_settings()
                [spec] = api.known_specs(self.settings, [entry.label])
                self._claims[spec.label] = spec.root.resolve()
                job = self.queue_reindex([entry.label], trigger="add-source")
            else:
                spec = api.source_for(root, label, kind=kind)
                known = {s.label: s.root.resolve() for s in api.known_specs(self.settings)}
                taken = self._claims.get(spec.label) or known.get(spec.label)
                if taken is not None and taken != spec.root.resolve():
                    raise ConfigError(
                        f"source label {spec.label!r} already belongs to {taken}; refusing "
                        f"to add {spec.root.resolve()} under it (its records would be "
                        "deleted): choose another label"
                    )
                self._claims[spec.label] = spec.root.resolve()
                job = self._runner().get(self.submit([spec], "add-source"))
        for listener in self.source_listeners:
            listener(spec)
        return {"source": {"label": spec.label, "root": str(spec.root), "kind": spec.kind}} | {
            "job": job
        }

    def remove_source(self, request: RemoveRequest) -> RemovedSource:
        """Delete one source's records and state (and its declaration, unless kept).

        The watcher stops watching it first and its queued runs are dropped; the removal
        then waits for a running job (the in-process writer lock) and runs here.
        """
        check_owner_serves(request, self._described())
        label = request.label
        for listener in self.removal_listeners:
            listener(label)
        self._runner().drop_queued(label)
        with self._claims_lock:
            self._claims.pop(label, None)
        removed = api.remove_source(
            self.settings, label, keep_declaration=request.keep_declaration, wait=True
        )
        self._reload_settings()
        return removed

    def _reload_settings(self) -> None:
        """Re-read the sources after a declaration changed (the rest of the settings stay)."""
        if self._reload is not None:
            self.settings = self._reload()
        else:
            current = self.settings.config_file
            if current is not None and current.found_by != "--sources-file":
                fresh = load_config_file(current.path, found_by=current.found_by)
                self.settings = dataclasses.replace(self.settings, config_file=fresh)
        stale, self.sessions = self.sessions, api.WarmSessions(self.settings, lambda: self.embedder)
        stale.close()  # the default collections may have changed with the sources


def _remove_socket(path: str) -> None:
    """Remove this owner's Unix socket (it held the lock: nobody else's is there)."""
    import os
    import stat

    try:
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)
    except OSError:
        pass  # gone already (the server removed it)


__all__ = ["Service"]
