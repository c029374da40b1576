"""LangChain's own standard retriever suite (`langchain-tests`) against chromasync's
LangChain retriever over a real index: what LangChain expects of every retriever (`k` as a
constructor parameter and as an `invoke` keyword, documents back, sync and async)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_tests", reason="langchain-tests is not installed (extra dev)")
pytest.importorskip("pytest_asyncio", reason="pytest-asyncio runs the suite's async test")

from langchain_tests.integration_tests import RetrieversIntegrationTests

from chromasync import api, resolve_settings
from chromasync.adapters.langchain import ChromasyncRetriever
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder

from ..conftest import REPO, age_tree


# strict mode: the suite's async test needs the mark; its sync tests ignore it
@pytest.mark.asyncio
@pytest.mark.filterwarnings("ignore:The test <Function test_.*is not an async function")
class TestChromasyncRetriever(RetrieversIntegrationTests):
    indexed: Settings

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _index(cls, tmp_path_factory: pytest.TempPathFactory) -> None:
        root = tmp_path_factory.mktemp("lc") / "notes"
        shutil.copytree(REPO / "examples" / "notes", root)
        age_tree(root)
        settings = resolve_settings(
            {"data_dir": str(root.parent / "data"), "provider": "hash"},
            {"CHROMASYNC_COLLECTIONS": "shared"},
        )
        api.ingest([api.source_for(root)], settings, embedder=HashEmbedder())
        cls.indexed = settings

    @property
    def retriever_constructor(self) -> type[ChromasyncRetriever]:
        return ChromasyncRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"settings": self.indexed}

    @property
    def retriever_query_example(self) -> str:
        return "grinder calibration"


def test_every_search_option_goes_through_invoke(tmp_path: Path) -> None:
    """`mode` and `where` as invoke keywords, besides `k` (the suite checks `k`)."""
    root = tmp_path / "notes"
    shutil.copytree(REPO / "examples" / "notes", root)
    age_tree(root)
    settings = resolve_settings(
        {"data_dir": str(tmp_path / "data"), "provider": "hash"},
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    api.ingest([api.source_for(root)], settings, embedder=HashEmbedder())
    retriever = ChromasyncRetriever(settings=settings, k=5, mode="hybrid")
    docs = retriever.invoke("grinder", k=10, mode="keyword", where={"path": "guides/install.md"})
    expected = api.search(
        "grinder", settings, k=10, mode="keyword", where={"path": "guides/install.md"}
    )
    assert [d.id for d in docs] == [h.id for h in expected]
    assert {d.metadata["path"] for d in docs} == {"guides/install.md"}
