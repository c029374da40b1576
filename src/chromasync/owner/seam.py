"""The index seam's declaration: every operation a surface asks of the index (`Index`).

`owner.index` opens one (`open_index`); `owner.wire` writes each call from this declaration.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from .. import api
from ..answer.records import Answer
from ..answer.summaries import SummariesReport
from ..records import Hit, IngestSummary
from ..retrieve.access import FileLines
from ..retrieve.links import LinksReport
from ..retrieve.tasks import EvalReport, SimilarResult, SuggestResult
from ..state.snapshots import Recorder
from ..sync.peers import ShareReport
from ..sync.registry import RemovedSource, SourceInfo
from ..sync.verify import SourceCheck
from . import queries as q


class Index(Protocol):
    """Every operation a surface asks of the index, wherever it runs: records in and out.

    Implemented by the index in this process (`owner.local.LocalIndex`), by the data dir's
    owner (`owner.service.Service`) and by the owner's client (`owner.client.OwnerClient`),
    which sends each call's record as JSON (`owner.wire`) and reads back the record the
    owner's `Service` returned: the same call gives the same record either way.
    """

    def search(self, args: api.SearchArgs) -> api.SearchResult:
        """A search request as the surface received it (`retrieve.request.SearchArgs`),
        parsed once where it runs: here, or in the owner (its JSON is the owner's wire)."""
        ...

    def ask(
        self,
        args: api.SearchArgs,
        *,
        fallback: bool | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> Answer:
        """Search, then answer `args.query` with the caller's chat settings (through an
        owner: searched there, answered by its client)."""
        ...

    def get_document(self, path: str, source: str | None = None) -> list[Hit]:
        """A file's indexed chunks, in line order."""
        ...

    def get(self, spec: str, source: str | None = None) -> FileLines:
        """`PATH[:START[-END]]`'s current lines."""
        ...

    def multi_get(
        self, pattern: str, max_bytes: int = api.DEFAULT_MAX_BYTES, source: str | None = None
    ) -> q.FileSet:
        """The current text of every indexed file matching a glob."""
        ...

    def links(self, query: q.LinksQuery) -> LinksReport:
        """Reverse links to a target, or what one file links to."""
        ...

    def similar(self, query: q.CompareQuery) -> SimilarResult:
        """The indexed documents nearest to a file (indexed or not)."""
        ...

    def suggest(self, query: q.CompareQuery) -> SuggestResult:
        """Triage: the groups nearest to a file, and its near-duplicates."""
        ...

    def summaries(self, query: q.SummariesQuery) -> SummariesReport:
        """One summary per group."""
        ...

    def evaluate(
        self, request: q.EvalRequest, *, progress: Callable[[str, int, int], None] | None = None
    ) -> EvalReport:
        """nDCG, recall and MRR per mode over judged queries (`progress`: in process)."""
        ...

    def status(self) -> q.IndexStatus:
        """Each source's figures, the state's health, the owner and its jobs."""
        ...

    def sources(self) -> list[SourceInfo]:
        """The sources as configured and as indexed."""
        ...

    def remove_source(self, request: q.RemoveRequest) -> RemovedSource:
        """One source's records and state deleted (its declaration too, unless kept)."""
        ...

    def verify(self, request: q.VerifyRequest) -> list[SourceCheck]:
        """Manifest, keyword index, collection and disk compared for each source (healed
        with `repair`: in process only, `owner.routes`)."""
        ...

    def share(self, request: q.ShareRequest) -> ShareReport:
        """The collections configured for peers (in process only: `owner.routes`)."""
        ...

    def reindex(
        self,
        labels: Sequence[str] = (),
        *,
        checksum: bool = False,
        allow_mass_delete: bool = False,
    ) -> q.JobState:
        """A delta ingest of the known sources (those labelled; all without): its job."""
        ...

    def wait(self, job_id: str, timeout: float | None = None) -> q.JobState:
        """A job once it has finished (or `timeout` passed)."""
        ...

    def ingest(
        self,
        request: q.IngestRequest,
        *,
        progress: Callable[[str, int, int], None] | None = None,
        recorder: Recorder | None = None,
        confirm: Callable[[Sequence[str]], None] | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> list[IngestSummary]:
        """An ingest as asked (`chromasync ingest`): in process, all of it; through the
        owner, the part it serves (`owner.routes`: the rest is refused, named). Hooks, in
        process: `progress`; `recorder`, the fast path's; `confirm`, told the collections a
        reset is about to drop (it raises to stop it); `notice`, a line for the user."""
        ...


#: The seam's operations, by name.
OPERATIONS = frozenset(n for n, v in vars(Index).items() if callable(v) and n[0] != "_")


__all__ = ["OPERATIONS", "Index"]
