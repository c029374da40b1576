"""The exceptions chromasync raises, one class per thing a user can fix.

    ChromasyncError            base of everything below; never raised itself
    ├── ConfigError            bad flag, environment variable or config file
    ├── SourceError            a source root is missing, unreadable or unsafe to sync
    │   └── AccessDenied       a path from a request leads outside the allowed roots
    ├── EmbeddingError         the embedding provider failed or does not match the collection
    ├── StoreError             Chroma (embedded or server) refused or failed a call
    │   └── LockError          another process owns the data dir
    └── NotFound               a collection, source, path or job does not exist

Messages name the path, collection or provider, say what failed and suggest a next step.
They never contain a secret. Third-party errors are wrapped with ``raise ... from``.
"""

from __future__ import annotations


class ChromasyncError(Exception):
    """Base class: every error chromasync raises on purpose."""


class ConfigError(ChromasyncError):
    """A flag, environment variable or config file is wrong."""


class SourceError(ChromasyncError):
    """A source root cannot be walked safely."""


class AccessDenied(SourceError):
    """A path given by a client resolves outside the roots it may reach."""


class EmbeddingError(ChromasyncError):
    """The embedding provider failed, or its model does not match the collection."""


class StoreError(ChromasyncError):
    """The vector store refused or failed a request."""


class LockError(StoreError):
    """Another process holds the data dir's lock."""


class NotFound(ChromasyncError):
    """A collection, source, document or job does not exist."""


__all__ = [
    "AccessDenied",
    "ChromasyncError",
    "ConfigError",
    "EmbeddingError",
    "LockError",
    "NotFound",
    "SourceError",
    "StoreError",
]
