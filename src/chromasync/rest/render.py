"""What the service answers with: hits and search results as JSON (citations, snippets,
editor links), and an answer as server-sent events.

Design notes: docs/internals.md, `rest/render.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import threading
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from fastapi.responses import StreamingResponse

from .. import __version__, api
from ..errors import ChromasyncError
from ..owner.queries import IndexStatus
from ..records import Hit
from ..sync.registry import SourceInfo
from .guard import status_for

if TYPE_CHECKING:
    from ..owner.service import Service

log = logging.getLogger("chromasync.rest")  # the package's logger, as before the split


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


class Dropped(Exception):
    """Raised in the worker by its token callback once the client has gone."""


async def answer_events(work: Any, cancel: threading.Event) -> AsyncIterator[bytes]:
    """Server-sent events of `work(on_token) -> Answer`, run on a thread: a `token` event
    per piece, then `answer` (the answer's JSON), or `error` ({error, detail, status}).
    Setting `cancel` stops the worker at its next token."""
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def put(event: str, data: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody listens
            loop.call_soon_threadsafe(pieces.put_nowait, (event, data))

    def on_token(piece: str) -> None:
        if cancel.is_set():
            raise Dropped
        put("token", {"text": piece})

    def run() -> None:
        try:
            found = work(on_token)
            put("answer", found.as_json())
        except Dropped:
            log.debug("POST /ask/stream: the client went away; the answer is cancelled")
        except ChromasyncError as exc:
            body = {"error": type(exc).__name__, "detail": str(exc), "status": status_for(exc)}
            put("error", body)
        except Exception:
            log.exception("POST /ask/stream: internal error")
            body = {"error": "InternalError", "detail": "internal error; see the service's log"}
            put("error", body | {"status": 500})

    threading.Thread(target=run, daemon=True, name="chromasync-ask").start()
    try:
        while True:
            event, data = await pieces.get()
            yield _sse(event, data)
            if event != "token":
                return
    finally:
        cancel.set()


def answer_stream(service: Service, args: api.SearchArgs, fallback: bool | None) -> AnswerStream:
    """The answer to `args.query` as server-sent events (`/ask/stream`); bad
    input and a failed search are a plain 4xx/5xx, before the stream starts."""
    from ..answer.ask import check_question

    check_question(args.query)
    result = service.found(args)  # an answer shows no editor links

    def work(on_token: Any) -> Any:
        return api.answer(
            args.query, result, service.settings, on_token=on_token, fallback=fallback
        )

    return AnswerStream(work, {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


class AnswerStream(StreamingResponse):
    """`answer_events` as a response that watches for the client's disconnect while it
    streams (whatever the server's ASGI version) and cancels the answer when it ends."""

    def __init__(self, work: Any, headers: dict[str, str] | None = None) -> None:
        self.cancel = threading.Event()
        events = answer_events(work, self.cancel)
        super().__init__(events, headers=headers, media_type="text/event-stream")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import anyio

        try:
            async with anyio.create_task_group() as tasks:

                async def stream() -> None:
                    with contextlib.suppress(OSError):
                        await self.stream_response(send)
                    tasks.cancel_scope.cancel()

                tasks.start_soon(stream)
                await self.listen_for_disconnect(receive)
                tasks.cancel_scope.cancel()
        finally:
            self.cancel.set()


def iso(ns: int | None) -> str | None:
    """Nanoseconds since the epoch as ISO 8601 (UTC, seconds); None stays None."""
    import datetime as dt

    if ns is None:
        return None
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).isoformat(timespec="seconds")


def status_json(status: IndexStatus) -> dict[str, Any]:
    """`GET /status`: the index, the owner answering, its jobs."""
    sources = []
    for row in status.sources:
        item = dataclasses.asdict(row)
        item.pop("last_summary", None)
        item["last_finished"] = iso(row.last_finished_ns)
        sources.append(item)
    finished = [r.last_finished_ns for r in status.sources if r.last_finished_ns]
    return {
        "version": __version__,
        "store": status.store,
        "owner": dict(status.owner) if status.owner is not None else None,
        "totals": {
            "sources": len(status.sources),
            "files": sum(r.files for r in status.sources),
            "chunks": sum(r.chunks for r in status.sources),
        },
        "last_run": iso(max(finished)) if finished else None,
        "jobs": {"running": status.jobs_running, "queued": status.jobs_queued},
        "sources": sources,
    }


def sources_json(sources: Sequence[SourceInfo]) -> list[dict[str, Any]]:
    """`GET /sources`: each source's fields and its last run in ISO 8601."""
    out = []
    for info in sources:
        item = dataclasses.asdict(info)
        item["last_finished"] = iso(info.last_finished_ns)
        out.append(item)
    return out


def hit_json(hit: Hit) -> dict[str, Any]:
    data = hit.as_json()
    data["citation"] = hit.citation
    return data


def result_json(result: api.SearchResult) -> dict[str, Any]:
    """A search result as `chromasync search --json` prints it (with each hit's `open_url`
    when `editor_uri` is set); each hit also has its `citation` and a `snippet` (text
    around the first match, with the matched spans)."""
    data = result.as_json()
    for item, hit in zip(data["hits"], result.hits, strict=True):  # type: ignore[call-overload]
        item["citation"] = hit.citation
        spans = api.highlight(hit.text, result.query, result.filters.phrases)
        text, shifted = api.snippet(hit.text, spans, width=420)
        item["snippet"] = {"text": text, "spans": [list(span) for span in shifted]}
    return data
