"""The public names of `chromasync` and `chromasync.api`: each one importable, `import *`
works, and the lists are exactly the intended ones (adding a name is a deliberate change
here, as in httpx's tests/test_exported_members.py)."""

from __future__ import annotations

import importlib

import pytest

import chromasync
from chromasync import api

PACKAGE_NAMES = [
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

API_NAMES = [
    "DEFAULT_MAX_BYTES",
    "MODES",
    "DiscoverResult",
    "EvalQuery",
    "EvalReport",
    "FileLines",
    "FileText",
    "ConfiguredSources",
    "Filters",
    "Fusion",
    "IngestOptions",
    "KnownSources",
    "LinksReport",
    "RemovedSource",
    "SearchArgs",
    "SearchRequest",
    "SearchResult",
    "Settings",
    "ShareReport",
    "SimilarDoc",
    "SimilarResult",
    "SourceEntry",
    "SourceInfo",
    "SourceStatus",
    "StateHealth",
    "SuggestResult",
    "SummariesReport",
    "WarmSessions",
    "add_source",
    "answer",
    "ask",
    "chat_client",
    "chunk_report",
    "collection_of",
    "configure",
    "configured_entries",
    "configured_jobs",
    "default_options",
    "discover",
    "evaluate",
    "export_manifest",
    "get_document",
    "get_file",
    "get_files",
    "get_json",
    "health",
    "highlight",
    "ingest",
    "known_specs",
    "links",
    "list_sources",
    "load_queries",
    "make_embedder_for",
    "multi_get_json",
    "make_filters",
    "search_request",
    "open_store",
    "read_indexed_file",
    "remove_source",
    "reset_collections",
    "resolve_settings",
    "retrieve",
    "search",
    "search_collections",
    "share",
    "select_known",
    "selected_sources",
    "similar",
    "snippet",
    "source_for",
    "status",
    "suggest",
    "summaries",
    "verify",
    "with_context",
]


def test_package_all_is_the_intended_list() -> None:
    assert sorted(chromasync.__all__) == sorted(PACKAGE_NAMES)
    assert len(set(chromasync.__all__)) == len(chromasync.__all__)
    # Every lazily re-exported name is in __all__, and every name but the version is lazy.
    assert set(chromasync._EXPORTS) == set(PACKAGE_NAMES) - {"__version__"}


def test_api_all_is_the_intended_list() -> None:
    assert sorted(api.__all__) == sorted(API_NAMES)
    assert len(set(api.__all__)) == len(api.__all__)


@pytest.mark.parametrize("name", PACKAGE_NAMES)
def test_package_name_resolves(name: str) -> None:
    value = getattr(chromasync, name)
    assert value is not None
    module = chromasync._EXPORTS.get(name)
    if module is not None:  # the same object as where it is defined
        defined = importlib.import_module(module, "chromasync")
        assert value is getattr(defined, name)


@pytest.mark.parametrize("name", API_NAMES)
def test_api_name_resolves(name: str) -> None:
    assert getattr(api, name) is not None


@pytest.mark.parametrize("module", ["chromasync", "chromasync.api"])
def test_star_import(module: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {module} import *", namespace)
    exported = importlib.import_module(module).__all__
    assert set(exported) <= set(namespace)


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = chromasync.nothing_here  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = api.nothing_here  # type: ignore[attr-defined]


def test_the_package_exports_the_api_objects() -> None:
    """`chromasync.X` and `chromasync.api.X` are one object for every name both export."""
    for name in set(PACKAGE_NAMES) & set(API_NAMES):
        assert getattr(chromasync, name) is getattr(api, name), name
