"""`LocalIndex`: the index seam (`owner.index.Index`) in this process, over `api`.

When no owner runs, `open_index` yields one of these (the data dir's lock rules apply to
what it writes). The owner's `Service` is one too: it runs the same operations with its
own embedder, warm sessions and jobs (the hooks `_embedder` and `_retrieve`), so that an
operation means the same in process and through the owner.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from .. import api
from ..answer.records import Answer
from ..answer.summaries import SummariesReport
from ..config.settings import Settings
from ..embed import Embedder
from ..errors import ConfigError
from ..records import Hit, IngestSummary
from ..retrieve.access import FileLines, get_file, get_files, indexed_file_location
from ..retrieve.links import LinksReport
from ..retrieve.tasks import EvalReport, SimilarResult, SuggestResult
from ..state.snapshots import Recorder
from ..sync.peers import ShareReport
from ..sync.registry import RemovedSource, SourceInfo
from ..sync.verify import SourceCheck
from .queries import (
    CompareQuery,
    EvalRequest,
    FileSet,
    IndexStatus,
    IngestRequest,
    JobState,
    LinksQuery,
    RemoveRequest,
    ShareRequest,
    SummariesQuery,
    VerifyRequest,
)

#: (request, result, the state's identity before it ran): a search that ran in this process.
Progress = Callable[[str, int, int], None]
OnToken = Callable[[str], None]


class LocalIndex:
    """The index in this process, when no owner runs (the data dir's lock rules apply)."""

    settings: Settings

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._jobs: dict[str, JobState] = {}

    # -- hooks the owner's `Service` sets -------------------------------------------------------

    def _shared_embedder(self) -> Embedder | None:
        return None  # the settings' (made per call)

    def _retrieve(self, request: api.SearchRequest) -> api.SearchResult:
        return api.retrieve(request, self.settings)

    #: Whether a compared file may be any path on this machine (the CLI in process), or only
    #: an indexed file or given bytes (the owner: it reads no path a client names).
    reads_paths = True

    # -- searching -------------------------------------------------------------------------------

    def search(self, args: api.SearchArgs) -> api.SearchResult:
        """Parsed and run here; each hit's editor link made by these settings (`editor_uri`)."""
        from ..retrieve.editor import linked

        return linked(self.found(args), self.settings)

    def found(self, args: api.SearchArgs) -> api.SearchResult:
        """`search` without the editor links: for a caller elsewhere, which makes them with
        its own settings (`owner.client`), or one that shows none (`ask`)."""
        return self._retrieve(api.search_request(args, self.settings))

    def ask(
        self,
        args: api.SearchArgs,
        *,
        fallback: bool | None = None,
        on_token: OnToken | None = None,
    ) -> Answer:
        return api.ask(args, self.settings, search=self.found, on_token=on_token, fallback=fallback)

    # -- reading files ---------------------------------------------------------------------------

    def get_document(self, path: str, source: str | None = None) -> list[Hit]:
        return api.get_document(self.settings, path, source)

    def get(self, spec: str, source: str | None = None) -> FileLines:
        return get_file(self.settings, spec, source)

    def multi_get(
        self, pattern: str, max_bytes: int = api.DEFAULT_MAX_BYTES, source: str | None = None
    ) -> FileSet:
        files, left_out = get_files(self.settings, pattern, max_bytes, source)
        return FileSet(tuple(files), left_out)

    def links(self, query: LinksQuery) -> LinksReport:
        return api.links(
            query.target,
            self.settings,
            from_path=query.from_path,
            source=query.source,
            collections=query.collections,
            all_collections=query.all_collections,
            limit=query.limit,
            on_disk=query.on_disk and self.reads_paths,
        )

    # -- comparing files -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _compared(self, query: CompareQuery) -> Iterator[Path]:
        """The file a query compares: an indexed one (with `source`), its bytes in a private
        temporary file (`content`), or, in process only, a path on disk."""
        if query.source is not None:
            yield indexed_file_location(self.settings, query.source, query.path)
            return
        if query.content is None:
            if not self.reads_paths:
                raise ConfigError(
                    f"{query.path!r}: give the file's source (an indexed file) or its content"
                )
            yield Path(query.path)
            return
        try:
            data = bytes.fromhex(query.content)
        except ValueError as exc:
            raise ConfigError(f"{query.path!r}: content is not hex") from exc
        name = Path(query.path).name or "file"
        with tempfile.TemporaryDirectory(prefix="chromasync-compare-") as folder:
            file = Path(folder) / name
            file.write_bytes(data)
            yield file

    def similar(self, query: CompareQuery) -> SimilarResult:
        with self._compared(query) as file:
            found = api.similar(
                file,
                self.settings,
                k=query.k or 10,
                threshold=query.threshold,
                collections=query.collections,
                all_collections=query.all_collections,
                embedder=self._shared_embedder(),
                group_by=query.group_by,
            )
        return _named(found, query) if query.content is not None else found

    def suggest(self, query: CompareQuery) -> SuggestResult:
        if not query.group_by:
            raise ConfigError("suggest needs a group_by: a field, `source` or `path:N`")
        with self._compared(query) as file:
            found = api.suggest(
                file if query.source is None else query.path,
                self.settings,
                group_by=query.group_by,
                k=query.k or 3,
                threshold=query.threshold,
                collections=query.collections,
                all_collections=query.all_collections,
                embedder=self._shared_embedder(),
                source=query.source,
            )
        if query.content is not None:
            found = dataclasses.replace(
                found, path=query.path, similar=_named(found.similar, query)
            )
        return found

    def summaries(self, query: SummariesQuery) -> SummariesReport:
        """Written with this side's chat model, unless the query names its caller's."""
        return api.summaries(
            self.settings,
            group_by=query.group_by,
            limit=query.limit,
            collections=query.collections,
            all_collections=query.all_collections,
            model=query.caller_model,
        )

    def evaluate(self, request: EvalRequest, *, progress: Progress | None = None) -> EvalReport:
        return api.evaluate(
            list(request.queries),
            self.settings,
            modes=request.modes or api.MODES,
            k=request.k,
            sources=request.sources,
            collections=request.collections,
            all_collections=request.all_collections,
            feedback=request.feedback,
            embedder=self._shared_embedder(),
            progress=progress,
        )

    # -- the index as a whole --------------------------------------------------------------------

    def status(self) -> IndexStatus:
        rows = api.status(self.settings)
        configured = (
            {
                (self.settings.collection_for(e.kind, e.collection), e.label): e.kind
                for e in api.selected_sources(self.settings)
            }
            if self.settings.config_file
            else {}
        )
        missing = tuple(
            (c, label, kind)
            for (c, label), kind in configured.items()
            if not any(r.collection == c and r.source == label for r in rows)
        )
        return IndexStatus(
            health=api.health(self.settings),
            sources=tuple(rows),
            configured_not_indexed=missing,
            store=self.settings.store_location(),
        )

    def sources(self) -> list[SourceInfo]:
        return api.list_sources(self.settings)

    def remove_source(self, request: RemoveRequest) -> RemovedSource:
        return api.remove_source(
            self.settings,
            request.label,
            keep_declaration=request.keep_declaration,
            wait=request.wait,
        )

    def verify(self, request: VerifyRequest) -> list[SourceCheck]:
        return api.verify(
            self.settings,
            request.labels,
            request.repair,
            embedder=self._shared_embedder(),
            wait=request.wait,
        )

    def share(self, request: ShareRequest) -> ShareReport:
        return api.share(
            self.settings, embedder=self._shared_embedder(), place_model=not request.no_model
        )

    def reindex(
        self,
        labels: Sequence[str] = (),
        *,
        checksum: bool = False,
        allow_mass_delete: bool = False,
    ) -> JobState:
        """A delta ingest of the known sources (those labelled; all without): in process it
        runs now, and its job is done (or failed) when this returns; the owner queues it."""
        options = api.default_options(
            self.settings, checksum=checksum, allow_mass_delete=allow_mass_delete
        )
        return self._reindex(tuple(labels), options)

    def _reindex(self, labels: Sequence[str], options: api.IngestOptions) -> JobState:
        import time

        began = time.time()
        summaries = api.ingest(api.KnownSources(tuple(labels)), self.settings, options, wait=True)
        job = JobState(
            id=f"local-{len(self._jobs) + 1}",
            status="done",
            sources=tuple(labels),
            trigger="api",
            created=began,
            started=began,
            finished=time.time(),
            summaries=tuple(s.as_json() for s in summaries),
        )
        self._jobs[job.id] = job
        return job

    def ingest(
        self,
        request: IngestRequest,
        *,
        progress: Progress | None = None,
        recorder: Recorder | None = None,
        confirm: Callable[[Sequence[str]], None] | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> list[IngestSummary]:
        """Every field of the request, in this process (the data dir's lock rules apply)."""
        from .routes import configured_sources

        settings = self.settings
        options = api.default_options(
            settings,
            dry_run=request.dry_run,
            checksum=request.checksum,
            reembed=request.reembed,
            allow_mass_delete=request.allow_mass_delete,
            gc=not request.no_gc,
            gc_only=request.gc_only,
            limit=request.limit,
        )
        if request.commit_sha is not None:
            extra = {**options.extra_metadata, "indexed_commit_sha": request.commit_sha.lower()}
            options = dataclasses.replace(options, extra_metadata=extra)
        specs = list(request.specs)
        if specs:
            collections = [api.collection_of(s, settings) for s in specs]
        else:
            entries = configured_sources(request, settings)
            collections = [settings.collection_for(e.kind, e.collection) for e in entries]
            if any(e.repo for e in entries):
                recorder = None  # a repository is fetched on every run
        if request.reset:
            names = sorted(set(collections))
            if confirm is not None:
                confirm(names)
            dropped = api.reset_collections(settings, names, wait=request.wait)
            if notice is not None:
                notice(f"dropped: {', '.join(dropped) or 'nothing (none existed)'}")
        if request.output_manifest:
            jobs = (
                [(s, options) for s in specs]
                if specs
                else api.configured_jobs(settings, request.labels, options)
            )
            with open(request.output_manifest, "w", encoding="utf-8") as handle:
                count = api.export_manifest(
                    settings, jobs, handle, include_text=request.include_text
                )
            if notice is not None:
                notice(f"wrote {count} desired records to {request.output_manifest}")
        sources = specs or api.ConfiguredSources(tuple(request.labels))
        return api.ingest(
            sources, settings, options, progress=progress, wait=request.wait, recorder=recorder
        )

    def wait(self, job_id: str, timeout: float | None = None) -> JobState:
        from ..errors import NotFound

        if job_id not in self._jobs:
            raise NotFound(f"no job {job_id!r} ran in this process")
        return self._jobs[job_id]


def _named(found: SimilarResult, query: CompareQuery) -> SimilarResult:
    """A result over a file's bytes, named as the caller named the file."""
    return dataclasses.replace(found, path=query.path)


__all__ = ["LocalIndex"]
