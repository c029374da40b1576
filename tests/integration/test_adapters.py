"""The LangChain and LlamaIndex retrievers over a real index return chromasync's own hits,
as each framework's documents, through each framework's own calling path."""

from __future__ import annotations

from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.metakeys import CHUNK_HASH_KEY, FILE_HASH_KEY, RECORD_HASH_KEY

QUERY = "how do I calibrate the grinder"


@pytest.fixture
def indexed(notes: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    from chromasync.embed.hashing import HashEmbedder

    api.ingest([api.source_for(notes)], settings, embedder=HashEmbedder())
    return settings


def _expected(settings: Settings, k: int = 4, mode: str = "hybrid") -> list[str]:
    return [h.id for h in api.search(QUERY, settings, k=k, mode=mode)]


def test_langchain_retriever(indexed: Settings) -> None:
    pytest.importorskip("langchain_core", reason="langchain-core is not installed (extra)")
    from langchain_core.retrievers import BaseRetriever

    from chromasync.adapters.langchain import ChromasyncRetriever

    retriever = ChromasyncRetriever(settings=indexed, k=4)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(QUERY)
    assert [d.id for d in docs] == _expected(indexed)
    first = docs[0]
    assert first.metadata["source"] == first.metadata["path"] == "guides/install.md"
    assert first.metadata["chromasync_source"] == "notes"
    assert first.metadata["citation"].startswith("guides/install.md:")
    assert not {"record_hash", "file_hash", "chunk_hash"} & set(first.metadata)
    assert not {RECORD_HASH_KEY, FILE_HASH_KEY, CHUNK_HASH_KEY} & set(first.metadata)
    assert "Calibrat" in first.page_content or "grind" in first.page_content
    batch = retriever.batch([QUERY, "sourdough starter"])
    assert [d.id for d in batch[0]] == [d.id for d in docs]
    filtered = ChromasyncRetriever(
        settings=indexed, k=10, mode="dense", where={"path": "guides/sourdough.md"}
    ).invoke(QUERY)
    assert filtered and {d.metadata["path"] for d in filtered} == {"guides/sourdough.md"}


def test_llamaindex_retriever(indexed: Settings) -> None:
    pytest.importorskip("llama_index.core", reason="llama-index-core is not installed (extra)")
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import MetadataMode

    from chromasync.adapters.llamaindex import ChromasyncRetriever

    retriever = ChromasyncRetriever(indexed, k=4)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve(QUERY)
    assert [n.node.node_id for n in nodes] == _expected(indexed)
    first = nodes[0]
    assert first.score is not None and first.node.ref_doc_id == "guides/install.md"
    shown = first.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "path: guides/install.md" in shown
    assert (
        RECORD_HASH_KEY not in shown
        and "record_hash" not in shown
        and "chromasync_source" not in shown
    )
    keyword = ChromasyncRetriever(indexed, k=3, mode="keyword").retrieve("grinder")
    assert [n.node.node_id for n in keyword] == [
        h.id for h in api.search("grinder", indexed, k=3, mode="keyword")
    ]


def test_llamaindex_aretrieve_leaves_the_event_loop_free(indexed: Settings) -> None:
    """Sixteen concurrent `aretrieve` calls: a 2 ms ticker on the same loop keeps ticking
    while they run. Counted side by side with the same calls made blocking (what LlamaIndex's
    default `aretrieve` did: the loop stalled until all were done), never against a time."""
    pytest.importorskip("llama_index.core", reason="llama-index-core is not installed (extra)")
    import asyncio

    from llama_index.core.schema import QueryBundle

    from chromasync.adapters.llamaindex import ChromasyncRetriever

    retriever = ChromasyncRetriever(indexed, k=4)
    retriever.retrieve(QUERY)  # the model and the store loaded: what is left is the search

    async def blocking(query: str) -> list[object]:
        return list(retriever._retrieve(QueryBundle(query)))

    async def ticks_during(call: object) -> tuple[int, list[list[str]]]:
        ticks = 0
        stop = asyncio.Event()

        async def tick() -> None:
            nonlocal ticks
            while not stop.is_set():
                await asyncio.sleep(0.002)
                ticks += 1

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0.01)
        ticks = 0
        found = await asyncio.gather(*(call(QUERY) for _ in range(16)))  # type: ignore[operator]
        during = ticks
        stop.set()
        await ticker
        return during, [[n.node.node_id for n in nodes] for nodes in found]

    blocked, _ = asyncio.run(ticks_during(blocking))
    free, ids = asyncio.run(ticks_during(retriever.aretrieve))
    assert ids == [_expected(indexed)] * 16
    assert free >= 2 * blocked + 4, f"the loop ticked {free} times (blocking: {blocked})"
