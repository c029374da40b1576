"""`POST /index/{operation}`: the index seam's operations, each call as its record.

Design notes: docs/internals.md, `rest/operations.py`.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError, NotFound, StoreError
from ..owner.queries import MAX_COMPARE_BYTES, CompareQuery, EvalRequest, LinksQuery
from ..owner.seam import OPERATIONS, Index
from ..owner.service import Service
from ..owner.wire import call_from_wire, to_wire
from ..retrieve.request import SearchArgs, check_query

SERVED = OPERATIONS - {"ingest", "ask"}
MAX_EVAL_QUERIES = 100_000
MAX_LABELS = 1000
MAX_TEXT = 8192  # a path, a glob, a label, a target, a job id
#: The longest a `wait` call holds its request (the client asks again).
MAX_WAIT_S = 30.0


def _check(arguments: dict[str, Any]) -> None:
    for name, value in arguments.items():
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise ConfigError(f"{name}: at most {MAX_TEXT} characters")
        if isinstance(value, list | tuple) and len(value) > MAX_LABELS:
            raise ConfigError(f"{name}: at most {MAX_LABELS} items")
        _check_record(value)


def _check_record(query: Any) -> None:
    if isinstance(query, SearchArgs):
        check_query(query.query, "query")  # its options: the engine's `check_values`
    content = query.content if isinstance(query, CompareQuery) else None
    if content is not None and len(content) > 2 * MAX_COMPARE_BYTES:
        raise ConfigError(f"content: a compared file holds at most {MAX_COMPARE_BYTES} bytes")
    if isinstance(query, EvalRequest) and len(query.queries) > MAX_EVAL_QUERIES:
        raise ConfigError(f"queries: at most {MAX_EVAL_QUERIES} judged queries")
    labels = getattr(query, "labels", ())
    if isinstance(labels, list | tuple) and len(labels) > MAX_LABELS:
        raise ConfigError(f"labels: at most {MAX_LABELS} sources")
    if isinstance(query, LinksQuery) and query.on_disk:
        raise ConfigError("on_disk: the owner reads no path it is given")


def run_operation(service: Service, operation: str, body: Any) -> Any:
    """`operation`'s call (`body`, as `owner.wire` wrote it) run on `service`: the result
    record as JSON."""
    if operation not in SERVED:
        raise NotFound(f"no index operation {operation!r}; known: {', '.join(sorted(SERVED))}")
    try:
        arguments = call_from_wire(getattr(Index, operation), body)
    except StoreError as exc:
        raise ConfigError(f"{operation}: the body is no call of it: {exc}") from exc
    _check(arguments)
    if operation == "wait":
        asked = arguments.get("timeout")
        arguments["timeout"] = MAX_WAIT_S if asked is None else max(0.0, min(asked, MAX_WAIT_S))
    if operation == "search":  # its editor links: made by the caller (`owner.client`)
        return to_wire(service.found(**arguments))
    return to_wire(getattr(service, operation)(**arguments))


__all__ = ["SERVED", "run_operation"]
