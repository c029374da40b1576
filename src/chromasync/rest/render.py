"""What the service answers with: hits and search results as JSON (citations, snippets,
editor links), and an answer as server-sent events."""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from .. import __version__, api
from ..errors import ChromasyncError
from ..owner.queries import IndexStatus
from ..records import Hit
from ..sync.registry import SourceInfo
from .guard import status_for

log = logging.getLogger("chromasync.rest")  # the package's logger, as before the split


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def answer_events(work: Any) -> Iterator[bytes]:
    """Server-sent events of `work(on_token) -> Answer`, run on a thread: a `token` event
    per piece, then `answer` (the answer's JSON), or `error` ({error, detail, status})."""
    pieces: queue.Queue[tuple[str, Any]] = queue.Queue()

    def run() -> None:
        try:
            found = work(lambda piece: pieces.put(("token", {"text": piece})))
            pieces.put(("answer", found.as_json()))
        except ChromasyncError as exc:
            body = {"error": type(exc).__name__, "detail": str(exc), "status": status_for(exc)}
            pieces.put(("error", body))
        except Exception:
            log.exception("POST /ask/stream: internal error")
            body = {"error": "InternalError", "detail": "internal error; see the service's log"}
            pieces.put(("error", body | {"status": 500}))

    threading.Thread(target=run, daemon=True, name="chromasync-ask").start()
    while True:
        event, data = pieces.get()
        yield _sse(event, data)
        if event != "token":
            return


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


def result_json(
    result: api.SearchResult, links: Sequence[str | None] | None = None
) -> dict[str, Any]:
    """A search result as `chromasync search --json` prints it; each hit also has its
    `citation` and a `snippet` (text around the first match, with the matched spans), and,
    given `links` (`editor_uri` set), its `open_url` (null where it has none)."""
    hits = []
    for index, hit in enumerate(result.hits):
        item = hit_json(hit)
        if links is not None:
            item["open_url"] = links[index]
        spans = api.highlight(hit.text, result.query, result.filters.phrases)
        text, shifted = api.snippet(hit.text, spans, width=420)
        item["snippet"] = {"text": text, "spans": [list(span) for span in shifted]}
        hits.append(item)
    data = result.as_json()
    data["hits"] = hits
    return data
