"""The tools under comparison, each run the way its documentation recommends.

Every tool gets the same embedder (wrapped for its framework) behind a counter of texts
embedded, the same chunk budget (254 word pieces of the MiniLM tokenizer, no overlap) and
its own Chroma store under the state folder. Each tool module imports its framework only
when it is run, so the smoke test needs no peer installed.

- chromasync: `chromasync.api.ingest` with the shared embedder.
- naive: drop the collection, chunk every file with chromasync's chunker, embed, add.
- langchain: `langchain_core.indexing.index(docs, SQLRecordManager, Chroma,
  cleanup="incremental", source_id_key="source")`, default batch_size (100); documents are
  whole files with `{"source": relative path}` (as TextLoader gives), split with
  `RecursiveCharacterTextSplitter.from_language(MARKDOWN)`.
- langchain-full: the same with `cleanup="full"` (the loader returns the whole corpus).
- llamaindex: `IngestionPipeline([SentenceSplitter, embedding], docstore=SimpleDocumentStore,
  vector_store=ChromaVectorStore, docstore_strategy=UPSERTS_AND_DELETE)`, loaded from and
  persisted to a folder each run, fed by `SimpleDirectoryReader(filename_as_id=True)`;
  ChromaVectorStore's write size is capped at embedded Chroma's batch limit (see below).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench_corpus import markdown_files

from chromasync.embed import Embedder

COLLECTION = "bench"
CHUNK_TOKENS = 254  # MiniLM's 256 positions less [CLS] and [SEP]; chromasync's budget too
TOOLS = ("chromasync", "naive", "langchain", "langchain-full", "llamaindex")
PEERS = ("langchain", "langchain-full", "llamaindex")


class Counting(Embedder):
    """A chromasync `Embedder` around another one, counting texts and timing the model."""

    model_id: str = ""  # the wrapped one's

    def __init__(self, inner: Any) -> None:
        from chromasync.embed.tokens import default_token_meter

        self.inner = inner
        self.name = inner.name
        self.model_id = inner.model_id
        self.max_tokens = inner.max_tokens
        self.batch_size = inner.batch_size
        self.texts = 0
        self.tokens = 0  # word pieces the model sees: [CLS] + text + [SEP], cut at 256
        self.calls = 0
        self.seconds = 0.0  # inside the wrapped embedder
        self.counting_seconds = 0.0  # the counter's own tokenizing, not charged to anyone
        self._meter = default_token_meter()

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    @property
    def tokenizer_path(self) -> str | None:
        path = self.inner.tokenizer_path
        return str(path) if path else None

    @property
    def uses_local_cores(self) -> bool:
        """A model on this machine's cores: chromasync then plans in one process (`ahead`)."""
        return bool(self.inner.uses_local_cores)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        began = time.perf_counter()
        vectors: list[list[float]] = self.inner.embed_documents(list(texts))
        embedded = time.perf_counter()
        self.seconds += embedded - began
        self.texts += len(texts)
        self.tokens += sum(min(n + 2, 256) for n in self._meter.count_many(list(texts)))
        self.calls += 1
        self.counting_seconds += time.perf_counter() - embedded
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return list(self.inner.embed_query(text))


def make_embedder(kind: str) -> Counting:
    """`hash`: the fast stand-in (384 dims, MiniLM tokenizer); `minilm`: the real model."""
    from chromasync.embed.tokens import bundled_model_dir

    if kind == "hash":
        from chromasync.embed.hashing import HashEmbedder

        tokenizer = str(bundled_model_dir() / "tokenizer.json")
        return Counting(HashEmbedder(dimension=384, tokenizer_path=tokenizer))
    if kind == "minilm":
        from chromasync.embed.local import LocalEmbedder

        return Counting(LocalEmbedder(backend="onnx"))
    raise SystemExit(f"unknown embedder {kind!r}; choose hash or minilm")


def token_count() -> Callable[[str], int]:
    from chromasync.embed.tokens import default_token_meter

    return default_token_meter().count


def _client(path: Path) -> Any:
    import chromadb
    from chromadb.config import Settings

    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def _stored(client: Any, every: bool = False) -> Iterator[tuple[dict[str, Any], str]]:
    """(metadata, document) of every record of the bench collection (or of every
    collection in the store: chromasync names its collections itself), page by page."""
    names = [c.name for c in client.list_collections()]
    for name in names if every else [n for n in names if n == COLLECTION]:
        collection = client.get_collection(name)
        offset, page = 0, 2000
        while True:
            got = collection.get(include=["metadatas", "documents"], limit=page, offset=offset)
            for meta, doc in zip(got["metadatas"], got["documents"], strict=True):
                yield dict(meta or {}), doc or ""
            if len(got["ids"]) < page:
                break
            offset += page


# -- chromasync --------------------------------------------------------------------------


def _chromasync_settings(state: Path) -> Any:
    from chromasync import api

    return api.resolve_settings({"data_dir": str(state / "data"), "collection": COLLECTION}, {})


def run_chromasync(root: Path, state: Path, embedder: Counting) -> dict[str, Any]:
    from chromasync import api

    [summary] = api.ingest(
        [api.source_for(root, label="corpus")], _chromasync_settings(state), embedder=embedder
    )
    return summary.as_json()


def records_chromasync(root: Path, state: Path) -> Iterator[tuple[str, str]]:
    for meta, doc in _stored(_client(state / "data" / "chroma"), every=True):
        yield str(meta.get("path", "")), doc


# -- naive: re-embed everything ----------------------------------------------------------


def run_naive(root: Path, state: Path, embedder: Counting) -> dict[str, Any]:
    from chromasync.chunk import Budget, chunk_document
    from chromasync.corpus.read import read_file
    from chromasync.corpus.walk import discover_source
    from chromasync.embed.tokens import default_token_meter
    from chromasync.records import SourceSpec

    client = _client(state / "chroma")
    if COLLECTION in [c.name for c in client.list_collections()]:
        client.delete_collection(COLLECTION)
    collection = client.create_collection(
        COLLECTION, metadata={"hnsw:space": "cosine"}, embedding_function=None
    )
    budget = Budget(embedder.max_tokens, default_token_meter())
    ids: list[str] = []
    texts: list[str] = []
    docs: list[str] = []
    metas: list[dict[str, Any]] = []
    total = 0

    def flush() -> None:
        nonlocal total
        if ids:
            vectors = embedder.embed_documents(texts)
            collection.add(ids=ids, embeddings=vectors, documents=docs, metadatas=metas)
            total += len(ids)
            ids.clear(), texts.clear(), docs.clear(), metas.clear()

    for stat in discover_source(SourceSpec(label="corpus", root=root)).files:
        outcome = read_file(stat)
        if outcome.document is None:
            continue
        for index, chunk in enumerate(chunk_document(outcome.document, budget)):
            ids.append(f"{stat.rel_path}#{index}")
            texts.append(chunk.embed_text)
            docs.append(chunk.text)
            metas.append({"path": stat.rel_path, "heading": chunk.heading})
            if len(ids) >= 256:
                flush()
    flush()
    return {"records": total}


def records_naive(root: Path, state: Path) -> Iterator[tuple[str, str]]:
    for meta, doc in _stored(_client(state / "chroma")):
        yield str(meta.get("path", "")), doc


# -- LangChain indexing API ----------------------------------------------------------------


def _langchain_embeddings(embedder: Counting) -> Any:
    from langchain_core.embeddings import Embeddings

    class CountingEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed_documents(texts)

        def embed_query(self, text: str) -> list[float]:
            return embedder.embed_query(text)

    return CountingEmbeddings()


def _run_langchain(root: Path, state: Path, embedder: Counting, cleanup: str) -> dict[str, Any]:
    from langchain_chroma import Chroma
    from langchain_classic.indexes import SQLRecordManager
    from langchain_core.documents import Document
    from langchain_core.indexing import index
    from langchain_text_splitters import Language, RecursiveCharacterTextSplitter

    store = Chroma(
        client=_client(state / "chroma"),
        collection_name=COLLECTION,
        embedding_function=_langchain_embeddings(embedder),
    )
    records = SQLRecordManager(
        f"chroma/{COLLECTION}", db_url=f"sqlite:///{state / 'record_manager.sqlite'}"
    )
    records.create_schema()
    docs = [
        Document(page_content=(root / rel).read_text(encoding="utf-8"), metadata={"source": rel})
        for rel in markdown_files(root)
    ]
    splitter = RecursiveCharacterTextSplitter.from_language(
        Language.MARKDOWN,
        chunk_size=CHUNK_TOKENS,
        chunk_overlap=0,
        length_function=token_count(),
    )
    chunks = splitter.split_documents(docs)
    result = index(chunks, records, store, cleanup=cleanup, source_id_key="source")  # type: ignore[arg-type]
    return dict(result)


def run_langchain(root: Path, state: Path, embedder: Counting) -> dict[str, Any]:
    return _run_langchain(root, state, embedder, "incremental")


def run_langchain_full(root: Path, state: Path, embedder: Counting) -> dict[str, Any]:
    return _run_langchain(root, state, embedder, "full")


def records_langchain(root: Path, state: Path) -> Iterator[tuple[str, str]]:
    for meta, doc in _stored(_client(state / "chroma")):
        yield str(meta.get("source", "")), doc


# -- LlamaIndex IngestionPipeline ------------------------------------------------------------


def _llamaindex_embedding(embedder: Counting) -> Any:
    from llama_index.core.base.embeddings.base import BaseEmbedding

    class CountingEmbedding(BaseEmbedding):
        @classmethod
        def class_name(cls) -> str:
            return "CountingEmbedding"

        def _get_query_embedding(self, query: str) -> list[float]:
            return embedder.embed_query(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return embedder.embed_query(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return embedder.embed_documents([text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed_documents(texts)

    # Batches as large as chromasync's waves, so the model sees the same batch shapes.
    return CountingEmbedding(model_name=embedder.model_id, embed_batch_size=256)


def run_llamaindex(root: Path, state: Path, embedder: Counting) -> dict[str, Any]:
    from llama_index.core import Settings as LlamaSettings
    from llama_index.core import SimpleDirectoryReader
    from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from llama_index.vector_stores.chroma import ChromaVectorStore
    from llama_index.vector_stores.chroma import base as chroma_store_module

    from chromasync.embed.tokens import default_token_meter

    meter = default_token_meter()

    def tokenize(text: str) -> list[int]:
        # The MiniLM word pieces (no tiktoken download at run time).
        return list(meter._tokenizer.encode(text, add_special_tokens=False).ids)

    LlamaSettings.tokenizer = tokenize
    client = _client(state / "chroma")
    # ChromaVectorStore.add writes up to 41,665 records per call, but embedded Chroma 1.5
    # takes at most get_max_batch_size() (5,461 here): without this, a first run of more
    # nodes than that fails. Cap the store's chunk size (the only change to its defaults).
    chroma_store_module.MAX_CHUNK_SIZE = min(
        chroma_store_module.MAX_CHUNK_SIZE, int(client.get_max_batch_size())
    )
    collection = client.get_or_create_collection(COLLECTION, embedding_function=None)
    pipeline = IngestionPipeline(
        transformations=[
            SentenceSplitter(chunk_size=CHUNK_TOKENS, chunk_overlap=0, tokenizer=tokenize),
            _llamaindex_embedding(embedder),
        ],
        docstore=SimpleDocumentStore(),
        vector_store=ChromaVectorStore(chroma_collection=collection),
        docstore_strategy=DocstoreStrategy.UPSERTS_AND_DELETE,
    )
    persist = state / "pipeline_storage"
    if persist.is_dir():
        pipeline.load(str(persist))
    documents = SimpleDirectoryReader(
        str(root), recursive=True, filename_as_id=True, required_exts=[".md"]
    ).load_data()
    nodes = pipeline.run(documents=documents)
    pipeline.persist(str(persist))
    return {"documents": len(documents), "nodes_written": len(nodes)}


def records_llamaindex(root: Path, state: Path) -> Iterator[tuple[str, str]]:
    for meta, doc in _stored(_client(state / "chroma")):
        path = str(meta.get("file_path", ""))
        try:
            rel = Path(path).relative_to(root).as_posix()
        except ValueError:
            rel = path
        yield rel, doc


#: What each tool imports before it can run (timed apart as `import_s`; chromasync imports
#: chromadb lazily, only when it has something to write, so that is in its run time).
IMPORTS: dict[str, tuple[str, ...]] = {
    "chromasync": ("chromasync.api",),
    "naive": ("chromadb", "chromasync.chunk", "chromasync.corpus.read"),
    "langchain": (
        "langchain_chroma",
        "langchain_classic.indexes",
        "langchain_core.indexing",
        "langchain_text_splitters",
    ),
    "llamaindex": (
        "llama_index.core",
        "llama_index.core.ingestion",
        "llama_index.vector_stores.chroma",
    ),
}
IMPORTS["langchain-full"] = IMPORTS["langchain"]

RUNNERS: dict[str, tuple[Callable[..., dict[str, Any]], Callable[..., Iterator[tuple[str, str]]]]]
RUNNERS = {
    "chromasync": (run_chromasync, records_chromasync),
    "naive": (run_naive, records_naive),
    "langchain": (run_langchain, records_langchain),
    "langchain-full": (run_langchain_full, records_langchain),
    "llamaindex": (run_llamaindex, records_llamaindex),
}
