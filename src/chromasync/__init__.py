"""chromasync: keep a corpus of text files indexed in ChromaDB, cheaply and exactly."""

from __future__ import annotations

__version__ = "0.1.0"

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
