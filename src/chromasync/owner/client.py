"""Talk to the process that owns a data dir, over its Unix socket (see `owner.locate`).

Each operation of the index seam crosses as its call on `POST /index/{operation}`
(`owner.wire`; `CHROMASYNC_API_TOKEN` sent when set); the answer is read back as the
operation's result record, an error response as chromasync's exception. Every call has a
total deadline and its answer a size cap (`CALL_S`, `SLOW_CALL_S`, `MAX_ANSWER_BYTES`;
docs/reliability.md, "Outbound calls"): an owner that holds a call or drips its answer is
cut off with a `StoreError` that says so. What follows the caller's settings is done
here: `ask`'s answer and `summaries`' model calls (its chat model and key), and each hit's
editor link (docs/reliability.md, "Settings a long-running process does not hold").
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

import httpx

from ..answer.records import Answer
from ..answer.summaries import SummariesReport
from ..config.settings import Settings
from ..errors import ConfigError, SourceError, StoreError, error_class
from ..records import IngestSummary
from ..retrieve.links import LinksReport
from ..retrieve.request import SearchArgs
from ..retrieve.results import SearchResult
from ..retrieve.tasks import SimilarResult, SuggestResult
from ..retry import Deadline, read_capped
from ..sync.registry import RemovedSource
from ..sync.verify import SourceCheck
from .locate import OwnerInfo
from .queries import (
    MAX_COMPARE_BYTES,
    CompareQuery,
    IngestRequest,
    JobState,
    LinksQuery,
    SummariesQuery,
)
from .routes import check_owner_serves, ingest_through_owner
from .seam import OPERATIONS
from .seam import Index as Seam
from .wire import call_to_wire, from_wire, signature

if TYPE_CHECKING:
    from ..sync.peers import ShareReport
    from .queries import RemoveRequest, ShareRequest, VerifyRequest

#: Seconds to connect to the owner's socket (a running owner accepts at once).
CONNECT_S = 2.0
#: The deadline of one call, its answer read whole (as the console script's daemon client).
CALL_S = 30.0
#: The deadline of `evaluate` and `summaries`, which may run a model per query or group.
SLOW_CALL_S = 600.0
#: The most bytes of one answer (as `dial.MAX_REPLY`).
MAX_ANSWER_BYTES = 64 * 1024 * 1024
#: The operations that may run a model per query or group (`SLOW_CALL_S`).
SLOW_OPERATIONS = frozenset({"evaluate", "summaries"})
#: The longest one `wait` call asks the owner to wait (well within `CALL_S`).
WAIT_S = 10.0


class NoAnswer(Exception):
    """The cause of a call's `StoreError` when the owner took it and gave no answer within
    its deadline (it may be hung): `no_answer(error)` tells it."""


def no_answer(error: BaseException) -> bool:
    """Whether `error` is a call the owner took and did not answer in time."""
    return isinstance(error.__cause__, NoAnswer)


class OwnerClient:
    """A client of the owner's REST API over its Unix socket."""

    def __init__(
        self,
        owner: OwnerInfo,
        token: str | None = None,
        deadline_s: float | None = None,
        http: httpx.Client | None = None,
        settings: Settings | None = None,
    ) -> None:
        """`http`: another client to send through (tests: an ASGI app in process);
        `settings`: the caller's (its date fields go with a request that names none; a
        file it compares is looked up in its data dir's state); `deadline_s`: of each
        call, `CALL_S` by default."""
        self.owner = owner
        self.deadline_s = CALL_S if deadline_s is None else deadline_s
        self.settings = settings
        self.date_fields = tuple(settings.date_field_names) if settings else ()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = http or httpx.Client(
            # a new connection each call: the deadline learns it as it opens
            transport=httpx.HTTPTransport(
                uds=owner.socket, limits=httpx.Limits(max_keepalive_connections=0)
            ),
            base_url="http://localhost",
            headers=headers,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OwnerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _post(self, operation: str, body: Any, seconds: float) -> Any:
        """One call on `POST /index/{operation}` within `seconds`, over a new connection: its
        answer's JSON, read in pieces up to `MAX_ANSWER_BYTES`, or its error raised."""
        with Deadline(seconds) as deadline:
            try:
                # (connect, read, write, pool) as a plain tuple: any httpx-like client takes
                # it (a test's may be another package's, e.g. starlette's TestClient on httpx2)
                timeout = (min(CONNECT_S, seconds), seconds, seconds, seconds)
                request = self._http.build_request(
                    "POST",
                    f"/index/{operation}",
                    json=body,
                    timeout=timeout,
                    extensions=deadline.extensions,
                )
                response = self._http.send(request, stream=True)
                deadline.watch(response)
                try:
                    data = read_capped(response.iter_raw(), MAX_ANSWER_BYTES)
                finally:
                    response.close()
                if deadline.expired:  # an answer read until its connection was shut
                    raise httpx.ReadError("shut at the deadline")
            except httpx.HTTPError as exc:
                self._fail(exc, deadline)
        if data is None:
            raise StoreError(
                f"{self.owner.describe()}: its answer is over {MAX_ANSWER_BYTES} bytes"
            )
        answer = _json(data)
        self._raise_for(response, answer)
        return answer

    def _fail(self, exc: httpx.HTTPError, deadline: Deadline) -> NoReturn:
        where = f"{self.owner.describe()}, which owns this data dir, at {self.owner.socket}"
        if deadline.expired or isinstance(exc, httpx.TimeoutException):
            raise StoreError(
                f"{where} did not answer within {deadline.seconds:g} s; it may be hung: "
                "restart it (`chromasync daemon stop` for the search daemon)"
            ) from NoAnswer(str(exc))
        raise StoreError(f"cannot reach {where}: {exc}") from exc

    def _raise_for(self, response: httpx.Response, body: Any) -> None:
        """The error of a response (status >= 400) as chromasync's exception; else None."""
        if response.status_code == 401:
            raise ConfigError(
                f"{self.owner.describe()} owns this data dir and requires its API token; "
                "set CHROMASYNC_API_TOKEN"
            )
        if response.status_code < 400:
            return
        detail = body.get("detail") if isinstance(body, dict) else None
        cls = error_class(str(body.get("error")) if isinstance(body, dict) else "")
        if cls is None:
            cls = SourceError if response.status_code < 500 else StoreError
        raise cls(f"{self.owner.describe()}: {detail or response.reason_phrase}")

    def call(self, operation: str, *args: Any, **kwargs: Any) -> Any:
        """An operation of the index seam (`owner.index.Index`) through the owner: its call
        on `POST /index/{operation}` as JSON, its result record read back (`owner.wire`)."""
        declared = getattr(Seam, operation)
        body = call_to_wire(declared, *args, **kwargs)
        seconds = SLOW_CALL_S if operation in SLOW_OPERATIONS else self.deadline_s
        data = self._post(operation, body, seconds)
        return from_wire(signature(declared)[1], data)

    def __getattr__(self, operation: str) -> Callable[..., Any]:
        """The seam's other operations, as they are declared: each one `call`."""
        if operation not in OPERATIONS:
            raise AttributeError(operation)
        return lambda *args, **kwargs: self.call(operation, *args, **kwargs)

    def search(self, args: SearchArgs) -> SearchResult:
        """The request record, parsed once, in the owner; each hit's editor link made here,
        by this caller's `editor_uri` (the owner's is not the caller's)."""
        if self.settings is None:
            return self.found(args)
        from ..retrieve.editor import linked

        return linked(self.found(args), self.settings)

    def found(self, args: SearchArgs) -> SearchResult:
        """`search` without the editor links (as `LocalIndex.found`); no date fields means
        this caller's (as in process)."""
        if not args.date_fields and self.date_fields:
            args = dataclasses.replace(args, date_fields=self.date_fields)
        return cast(SearchResult, self.call("search", args))

    def ask(
        self,
        args: SearchArgs,
        *,
        fallback: bool | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> Answer:
        """Searched through the owner, answered here with this caller's chat model and key
        (the owner's settings are not the caller's; `api.ask`, as `summaries`)."""
        from ..answer.ask import ask

        if self.settings is None:
            raise ConfigError("an answer through the owner needs the caller's settings")
        return ask(args, self.settings, search=self.found, on_token=on_token, fallback=fallback)

    def links(self, query: LinksQuery) -> LinksReport:
        """What a file on this machine links to (`on_disk`) is read here: the owner reads
        only indexed files, as hits cite them."""
        if query.on_disk and query.from_path is not None:
            located = self._indexed(Path(query.from_path).expanduser())
            if located is not None:
                source, rel = located
                query = dataclasses.replace(query, from_path=rel, source=source)
        return cast(LinksReport, self.call("links", dataclasses.replace(query, on_disk=False)))

    def summaries(self, query: SummariesQuery) -> SummariesReport:
        """Gathered by the owner; written here, with this caller's chat model and key (the
        owner's settings are not the caller's): its drafts come back to `write_drafts`."""
        from ..answer.chat import chat_client
        from ..answer.summaries import write_drafts

        if self.settings is None:  # no caller's settings: the owner's
            return cast(SummariesReport, self.call("summaries", query))
        client = chat_client(self.settings)
        model = client.model if client is not None else ""
        drafts = self.call("summaries", dataclasses.replace(query, caller_model=model))
        return write_drafts(drafts, client, self.settings.data_dir)

    def similar(self, query: CompareQuery) -> SimilarResult:
        found = cast(SimilarResult, self.call("similar", self._comparable(query)))
        return dataclasses.replace(found, path=self._named(query, found.path))

    def suggest(self, query: CompareQuery) -> SuggestResult:
        found = cast(SuggestResult, self.call("suggest", self._comparable(query)))
        path = self._named(query, found.path)
        named = dataclasses.replace(found.similar, path=path)
        return dataclasses.replace(found, path=path, similar=named)

    @staticmethod
    def _named(query: CompareQuery, path: str) -> str:
        """A file on this machine named as in process (`Path(PATH)`), not as the owner
        named what it was sent (the file in its source root, or its bytes)."""
        plain = query.source is None and query.content is None
        return str(Path(query.path)) if plain else path

    def _comparable(self, query: CompareQuery) -> CompareQuery:
        """A file on this machine as the owner may compare it: an indexed file by its
        source and path, any other by its bytes (the owner reads no path it is given)."""
        if query.source is not None or query.content is not None:
            return query
        file = Path(query.path).expanduser()
        located = self._indexed(file)
        if located is not None:
            return dataclasses.replace(query, source=located[0], path=located[1])
        try:
            size = file.stat().st_size
            if size > MAX_COMPARE_BYTES:
                raise SourceError(
                    f"{file} holds {size} bytes; at most {MAX_COMPARE_BYTES} can be compared "
                    f"through {self.owner.describe()}"
                )
            data = file.read_bytes()
        except OSError as exc:
            raise SourceError(f"cannot read {file}: {exc.strerror or exc}") from exc
        return dataclasses.replace(query, content=data.hex())

    def _indexed(self, file: Path) -> tuple[str, str] | None:
        """(source, path as hits cite it) of a file here that the index holds."""
        if self.settings is None or not file.is_file():
            return None
        from ..retrieve.session import indexed_as

        return indexed_as(file, self.settings)

    def remove_source(self, request: RemoveRequest) -> RemovedSource:
        """Through the owner (it waits for its running job itself)."""
        check_owner_serves(request, self.owner.describe())
        return cast(RemovedSource, self.call("remove_source", request))

    def verify(self, request: VerifyRequest) -> list[SourceCheck]:
        """The owner's report (`repair`: refused here, `owner.routes`)."""
        check_owner_serves(request, self.owner.describe())
        return cast(list[SourceCheck], self.call("verify", request))

    def share(self, request: ShareRequest) -> ShareReport:
        """Refused (`owner.routes`): it rewrites every collection the owner holds."""
        check_owner_serves(request, self.owner.describe())
        raise AssertionError("unreachable: `owner.routes` refuses share")

    def ingest(
        self, request: IngestRequest, *, notice: Callable[[str], None] | None = None, **hooks: Any
    ) -> list[IngestSummary]:
        """The owner's reindex of the same known sources, when the request asks nothing
        else (`owner.routes`); else `LockError` naming what it asked. The other hooks of an
        in-process run are not called (the owner reports no progress meanwhile)."""
        describe = self.owner.describe()
        return ingest_through_owner(cast(Seam, self), request, describe, self.settings, notice)

    def wait(self, job_id: str, timeout: float | None = None) -> JobState:
        """A job once it has finished (or `timeout` passed): asked of the owner a
        `WAIT_S` at a time, each call within its deadline."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            left = WAIT_S if end is None else max(0.0, min(WAIT_S, end - time.monotonic()))
            job: JobState = self.call("wait", job_id, left)
            if job.status in ("done", "failed") or (end is not None and time.monotonic() >= end):
                return job


def _json(data: bytes | None) -> Any:
    try:
        return json.loads(data) if data else {}
    except ValueError:
        return {}


__all__ = [
    "CALL_S",
    "MAX_ANSWER_BYTES",
    "NoAnswer",
    "OwnerClient",
    "no_answer",
]
