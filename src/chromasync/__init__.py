"""chromasync: keep a corpus of text files indexed in ChromaDB, cheaply and exactly.

The public API is re-exported here explicitly, and loaded on first use (PEP 562): the
console script's fast path (`chromasync.fastpath`) imports this package and must not pay
for importing the API, which is most of the cost of an unchanged re-run.
"""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .api import (
        IngestOptions,
        Settings,
        SourceStatus,
        ingest,
        resolve_settings,
        search,
        source_for,
        status,
    )
    from .errors import (
        ChromasyncError,
        ConfigError,
        EmbeddingError,
        LockError,
        NotFound,
        SourceError,
        StoreError,
    )
    from .records import Hit, IngestSummary, SourceSpec

#: Each public name and the module that defines it.
_EXPORTS = {
    "IngestOptions": ".api",
    "Settings": ".api",
    "SourceStatus": ".api",
    "ingest": ".api",
    "resolve_settings": ".api",
    "search": ".api",
    "source_for": ".api",
    "status": ".api",
    "ChromasyncError": ".errors",
    "ConfigError": ".errors",
    "EmbeddingError": ".errors",
    "LockError": ".errors",
    "NotFound": ".errors",
    "SourceError": ".errors",
    "StoreError": ".errors",
    "Hit": ".records",
    "IngestSummary": ".records",
    "SourceSpec": ".records",
}


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ChromasyncError",
    "ConfigError",
    "EmbeddingError",
    "Hit",
    "IngestOptions",
    "IngestSummary",
    "LockError",
    "NotFound",
    "Settings",
    "SourceError",
    "SourceSpec",
    "SourceStatus",
    "StoreError",
    "__version__",
    "ingest",
    "resolve_settings",
    "search",
    "source_for",
    "status",
]
