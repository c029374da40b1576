"""The records the index seam takes and returns besides the search's (`owner.index.Index`).

Each operation of the seam takes one of these (or plain values) and returns a record, in
process or through the data dir's owner, where they travel as JSON (`owner.wire`). What an
operation returns elsewhere in the code (`retrieve`, `answer`, `sync.registry`) is used as
it is; the records here are only those the seam adds: the queries of the operations that
take several options, a `multi_get`'s files, the index's status, and a job's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..records import IngestSummary, SourceSpec
from ..retrieve.access import FileLines
from ..retrieve.evaluate import EvalQuery
from ..sync.registry import SourceStatus, StateHealth

#: The most bytes of a file `similar`/`suggest` send to the owner to compare (a file the
#: index does not hold: the owner reads no path it is given, only an indexed file's).
MAX_COMPARE_BYTES = 16 * 1024 * 1024
#: `links`: the linking chunks given by default, and at most, on every surface (so that one
#: answer stays within the owner's answer cap, `owner.client.MAX_ANSWER_BYTES`).
LINKS_LIMIT, MAX_LINKS_LIMIT = 1_000, 10_000
#: `summaries`: the groups summarised by default, and at most, on every surface.
SUMMARIES_LIMIT, MAX_SUMMARIES_LIMIT = 100, 1_000


@dataclass(frozen=True, slots=True)
class LinksQuery:
    """Reverse links to `target`; or, with `from_path`, what that file links to."""

    target: str | None = None
    from_path: str | None = None
    source: str | None = None
    collections: tuple[str, ...] = ()
    all_collections: bool = False
    limit: int = LINKS_LIMIT
    #: `from_path` may be a file on disk (the CLI); else only a path as hits cite it.
    on_disk: bool = False

    def __post_init__(self) -> None:
        _check_limit(self.limit, MAX_LINKS_LIMIT)


@dataclass(frozen=True, slots=True)
class CompareQuery:
    """A file to compare with the index (`similar`, `suggest`).

    `path` is, with `source`, an indexed file as hits cite it (the owner reads it from its
    source's root, as `get` does); without `source`, a file's name, and `content` its bytes
    (hex) when the index does not hold it, so that the owner reads nothing it is not given.
    """

    path: str
    source: str | None = None
    content: str | None = None  # hex of the file's bytes
    k: int | None = None  # documents (similar: 10) or groups (suggest: 3)
    threshold: float | None = None
    collections: tuple[str, ...] = ()
    all_collections: bool = False
    group_by: str | None = None  # suggest: required; similar: the documents grouped


@dataclass(frozen=True, slots=True)
class SummariesQuery:
    """One summary per group. `caller_model`: set by a caller that writes the summaries
    with its own chat settings (the owner's client): its model ("" for none: extractive),
    the groups it must write coming back as drafts (`answer.summaries.write_drafts`);
    None: written where the query runs, with that side's chat settings."""

    group_by: str
    limit: int = SUMMARIES_LIMIT
    collections: tuple[str, ...] = ()
    all_collections: bool = False
    caller_model: str | None = None

    def __post_init__(self) -> None:
        _check_limit(self.limit, MAX_SUMMARIES_LIMIT)


def _check_limit(limit: int, most: int) -> None:
    """The seam's own check of a record's `limit` (each surface bounds it first, by the
    same constant: click, FastAPI, pydantic)."""
    if not 1 <= limit <= most:
        raise ConfigError(f"limit: {limit} is not between 1 and {most}")


@dataclass(frozen=True, slots=True)
class EvalRequest:
    """Judged queries to measure retrieval on (`chromasync eval`)."""

    queries: tuple[EvalQuery, ...]
    modes: tuple[str, ...] = ()  # () = every mode
    k: int = 10
    sources: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()
    all_collections: bool = False
    feedback: bool = False  # also measure `hybrid+feedback` (`search --feedback`)


@dataclass(frozen=True, slots=True)
class IngestRequest:
    """An ingest as its caller asked for it (`chromasync ingest`'s flags, by their names):
    which sources, and how. In process every field applies (`LocalIndex.ingest`); through
    the data dir's owner only those `owner.routes.OWNER_INGESTS` names (the owner reindexes
    the sources it knows; the rest needs the store to itself), and a request asking more is
    refused, naming what it asked."""

    specs: tuple[SourceSpec, ...] = ()  # sources by PATH; none: the configured ones
    labels: tuple[str, ...] = ()  # without specs: only these configured sources
    checksum: bool = False
    allow_mass_delete: bool = False
    wait: bool = False  # wait for another writer (an owner queues the run anyway)
    dry_run: bool = False
    reembed: bool = False
    limit: int | None = None
    gc_only: bool = False
    no_gc: bool = False
    commit_sha: str | None = None  # records written carry indexed_commit_sha
    reset: bool = False  # drop and recreate the sources' collections first
    output_manifest: str | None = None  # with dry_run: the desired records, as JSON Lines
    include_text: bool = False


@dataclass(frozen=True, slots=True)
class RemoveRequest:
    """`chromasync sources remove`: one source's records and state to delete (and its
    declaration, unless `keep_declaration`: `--keep-entry`). Through the data dir's owner
    it is the owner's `DELETE /sources/{label}` (which waits for a running job itself)."""

    label: str
    keep_declaration: bool = False
    wait: bool = False  # wait for another writer (an owner runs it after its job anyway)


@dataclass(frozen=True, slots=True)
class VerifyRequest:
    """`chromasync verify`'s flags, by their names: which sources, and whether to heal
    them. Through the data dir's owner only the report (`repair` needs the store to
    itself: refused, named, by `owner.routes`)."""

    labels: tuple[str, ...] = ()  # () = every source
    repair: bool = False
    wait: bool = False


@dataclass(frozen=True, slots=True)
class ShareRequest:
    """`chromasync share`: configure the collections for peers (and place Chroma's model
    unless `no_model`). It rewrites collections: never through an owner (`owner.routes`)."""

    no_model: bool = False


@dataclass(frozen=True, slots=True)
class FileSet:
    """`multi_get`: the current text of the indexed files a glob matched."""

    files: tuple[FileLines, ...]
    left_out: int = 0

    def as_json(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {"files": [asdict(f) for f in self.files], "left_out": self.left_out}


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """The index: each source's figures, the state's health, the owner and its jobs."""

    health: StateHealth
    sources: tuple[SourceStatus, ...]
    configured_not_indexed: tuple[tuple[str, str, str], ...] = ()  # (collection, source, kind)
    store: str = ""
    owner: Mapping[str, Any] | None = None  # `OwnerInfo.as_json()` of the owner answering
    jobs_running: int = 0
    jobs_queued: int = 0


@dataclass(frozen=True, slots=True)
class JobState:
    """A reindex job as it stands (`owner.jobs.Job`, read under the runner's lock)."""

    id: str
    status: str  # queued -> running -> done | failed
    sources: tuple[str, ...]
    trigger: str
    created: float
    started: float | None = None
    finished: float | None = None
    phase: str = ""
    done: int = 0
    total: int = 0
    summaries: tuple[Mapping[str, Any], ...] = ()
    error: str | None = None

    @classmethod
    def of(cls, job: Mapping[str, Any]) -> JobState:
        """From a job's JSON (`Job.as_json`)."""
        progress = job.get("progress") or {}
        return cls(
            id=str(job["id"]),
            status=str(job["status"]),
            sources=tuple(job.get("sources") or ()),
            trigger=str(job.get("trigger", "")),
            created=float(job.get("created") or 0.0),
            started=job.get("started"),
            finished=job.get("finished"),
            phase=str(progress.get("phase", "")),
            done=int(progress.get("done", 0)),
            total=int(progress.get("total", 0)),
            summaries=tuple(job.get("summaries") or ()),
            error=job.get("error"),
        )

    def as_json(self) -> dict[str, Any]:
        """As `Job.as_json` (REST's `/jobs/{id}`)."""
        return {
            "id": self.id,
            "status": self.status,
            "sources": list(self.sources),
            "trigger": self.trigger,
            "created": self.created,
            "started": self.started,
            "finished": self.finished,
            "progress": {"phase": self.phase, "done": self.done, "total": self.total},
            "summaries": [dict(s) for s in self.summaries],
            "error": self.error,
        }

    def ingest_summaries(self) -> list[IngestSummary]:
        fields = set(IngestSummary.__dataclass_fields__)
        return [
            IngestSummary(**{k: v for k, v in s.items() if k in fields}) for s in self.summaries
        ]


__all__ = [
    "LINKS_LIMIT",
    "MAX_COMPARE_BYTES",
    "MAX_LINKS_LIMIT",
    "MAX_SUMMARIES_LIMIT",
    "SUMMARIES_LIMIT",
    "CompareQuery",
    "EvalRequest",
    "FileSet",
    "IndexStatus",
    "IngestRequest",
    "JobState",
    "LinksQuery",
    "RemoveRequest",
    "ShareRequest",
    "SummariesQuery",
    "VerifyRequest",
]
