"""`POST /index/{operation}`: the index seam's operations with records in and out.

The owner's client (`owner.client.OwnerClient`) sends each operation that takes a query
record here: the record as JSON (`owner.wire.to_wire`), read back by its type (a body of
another shape is a 400), run on the owner's `Service`, answered as the result record's
JSON. Untrusted input is bounded before the operation runs (`_check`).
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError, NotFound, StoreError
from ..owner.queries import (
    MAX_COMPARE_BYTES,
    CompareQuery,
    EvalRequest,
    LinksQuery,
    SummariesQuery,
    VerifyRequest,
)
from ..owner.service import Service
from ..owner.wire import from_wire, to_wire
from ..retrieve.request import SearchArgs, check_query

#: Operation -> the type of its query record (None: it takes none).
QUERIES: dict[str, type | None] = {
    "search": SearchArgs,
    "links": LinksQuery,
    "similar": CompareQuery,
    "suggest": CompareQuery,
    "summaries": SummariesQuery,
    "evaluate": EvalRequest,
    "verify": VerifyRequest,  # the report; `repair` is refused (`owner.routes`)
    "status": None,
    "sources": None,
}
MAX_EVAL_QUERIES = 100_000
MAX_VERIFY_LABELS = 1000


def _check(query: Any) -> None:
    if isinstance(query, SearchArgs):
        check_query(query.query, "query")  # its options: the engine's `check_values`
    content = query.content if isinstance(query, CompareQuery) else None
    if content is not None and len(content) > 2 * MAX_COMPARE_BYTES:
        raise ConfigError(f"content: a compared file holds at most {MAX_COMPARE_BYTES} bytes")
    if isinstance(query, EvalRequest) and len(query.queries) > MAX_EVAL_QUERIES:
        raise ConfigError(f"queries: at most {MAX_EVAL_QUERIES} judged queries")
    if isinstance(query, VerifyRequest) and len(query.labels) > MAX_VERIFY_LABELS:
        raise ConfigError(f"labels: at most {MAX_VERIFY_LABELS} sources")
    if isinstance(query, LinksQuery) and query.on_disk:
        raise ConfigError("on_disk: the owner reads no path it is given")


def run_operation(service: Service, operation: str, body: dict[str, Any]) -> Any:
    if operation not in QUERIES:
        raise NotFound(f"no index operation {operation!r}; known: {', '.join(QUERIES)}")
    kind = QUERIES[operation]
    method = getattr(service, operation)
    if kind is None:
        return to_wire(method())
    try:
        query: Any = from_wire(kind, body)
    except StoreError as exc:
        raise ConfigError(f"{operation}: the body is no {kind.__name__}: {exc}") from exc
    _check(query)
    return to_wire(method(query))


__all__ = ["QUERIES", "run_operation"]
