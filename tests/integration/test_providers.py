"""Embedding providers end to end: `openai` against a local OpenAI-compatible server that
serves real embeddings, and `server` with a collection whose own function embeds."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.config.settings import Settings
from chromasync.embed import make_embedder
from chromasync.embed.hashing import HashEmbedder
from chromasync.embed.openai import OpenAIEmbedder
from chromasync.errors import EmbeddingError

from ..conftest import invoke_cli, unique_collection
from ..servers import EmbeddingServer, Fault, FaultProxy

KEY = "sk-test-7d0b6e31a9"


def _settings(data_dir: Path, **flags: Any) -> Settings:
    return resolve_settings(
        {"data_dir": str(data_dir), **flags}, {"CHROMASYNC_COLLECTIONS": "shared"}
    )


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_openai_provider_end_to_end(notes: Path, tmp_path: Path) -> None:
    reference = HashEmbedder(dimension=48)
    with EmbeddingServer(reference.embed_documents, model="hash-48", api_key=KEY) as server:
        settings = resolve_settings(
            {
                "data_dir": str(tmp_path / "d"),
                "provider": "openai",
                "model": "hash-48",
                "provider_options": {"batch_size": "4"},
            },
            {
                "CHROMASYNC_EMBEDDING_URL": server.url,
                "OPENAI_API_KEY": KEY,
                "CHROMASYNC_COLLECTIONS": "shared",
            },
        )
        embedder = api.make_embedder_for(settings)
        assert isinstance(embedder, OpenAIEmbedder) and KEY not in repr(embedder)
        [summary] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
        hits = api.search("grinder calibration", settings, k=2, embedder=embedder)
    assert summary.chunks_embedded == summary.chunks_total > 4
    embedded = [len(r["input"]) for r in server.requests]
    assert max(embedded) <= 4 and sum(embedded) >= summary.chunks_total
    assert set(server.auth_headers) == {f"Bearer {KEY}"}
    collection = api.open_store(settings).collection(settings.collection, create=False)
    assert collection.metadata["chromasync_embedding_model"] == "openai:hash-48"
    assert collection.metadata["chromasync_embedding_provider"] == "openai"
    assert collection.metadata["chromasync_dimension"] == 48  # discovered
    records = {r.id: r for r in collection.iter_records(documents=True)}
    stored = collection.embeddings(list(records))
    assert len(stored) == summary.chunks_total
    assert all(len(v) == 48 and max(abs(x) for x in v) > 0 for v in stored.values())
    assert hits and hits[0].score > 0
    assert KEY.encode() not in b"".join(
        p.read_bytes() for p in (tmp_path / "d").rglob("*") if p.is_file()
    )


def test_openai_vectors_are_the_servers_in_order(tmp_path: Path) -> None:
    reference = HashEmbedder(dimension=32)
    texts = [f"text number {i} about {w}" for i, w in enumerate(["kites", "tea", "bikes"] * 5)]
    with EmbeddingServer(reference.embed_documents, model="m") as server:
        embedder = make_embedder("openai", {"url": server.url, "model": "m", "batch_size": 4})
        got = embedder.embed_documents(texts)
        assert embedder.dimension == 32
    want = reference.embed_documents(texts)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a == pytest.approx(b)
    assert len(server.requests) == 4  # 15 texts in batches of 4


def test_openai_wrong_key_is_plain_and_not_retried(tmp_path: Path) -> None:
    with EmbeddingServer(HashEmbedder().embed_documents, model="m", api_key=KEY) as server:
        embedder = make_embedder("openai", {"url": server.url, "model": "m", "api_key": "sk-bad"})
        with pytest.raises(EmbeddingError) as info:
            embedder.embed_documents(["x"])
        assert len(server.auth_headers) == 1
    assert "API key was refused (HTTP 401)" in str(info.value)
    assert "sk-bad" not in str(info.value)


def test_openai_unknown_model_reported(tmp_path: Path) -> None:
    with EmbeddingServer(HashEmbedder().embed_documents, model="m") as server:
        embedder = make_embedder("openai", {"url": server.url, "model": "nope"})
        with pytest.raises(EmbeddingError, match=r"HTTP 404: model nope unknown"):
            embedder.embed_documents(["x"])


def test_openai_retries_transient_failures(tmp_path: Path) -> None:
    reference = HashEmbedder()
    with (
        EmbeddingServer(reference.embed_documents, model="m") as server,
        FaultProxy(server.url.removesuffix("/v1")) as proxy,
    ):
        proxy.add(
            Fault("status", "/embeddings", status=503),
            Fault("drop", "/embeddings"),
            Fault("status", "/embeddings", status=429, headers={"Retry-After": "0"}),
        )
        embedder = make_embedder("openai", {"url": proxy.url + "/v1", "model": "m"})
        assert embedder.embed_documents(["a kite"]) == reference.embed_documents(["a kite"])
        outcomes = [s.outcome for s in proxy.requests("POST", "/embeddings")]
    assert outcomes == ["status 503", "drop", "status 429", "forwarded"]


@pytest.mark.slow
def test_openai_cli_model_change_refused(notes: Path, tmp_path: Path) -> None:
    with EmbeddingServer(HashEmbedder().embed_documents, model="m") as server:
        env = {
            "CHROMASYNC_DATA_DIR": str(tmp_path / "d"),
            "CHROMASYNC_COLLECTIONS": "shared",
            "CHROMASYNC_EMBEDDING_URL": server.url,
            "CHROMASYNC_OPENAI_API_KEY": KEY,
        }
        first = invoke_cli(["ingest", str(notes), "--provider", "openai", "--model", "m"], env)
        assert first.returncode == 0, first.stderr
        other = invoke_cli(["search", "kites", "--provider", "hash"], env)
    assert other.returncode == 1
    assert "openai:m" in " ".join(other.stderr.split())
    assert KEY not in first.stdout + first.stderr + other.stdout + other.stderr


@pytest.mark.slow
@pytest.mark.model
def test_openai_serving_local_minilm_matches_local_provider(notes: Path, tmp_path: Path) -> None:
    local = make_embedder("local", {})
    with EmbeddingServer(local.embed_documents, model="all-MiniLM-L6-v2") as server:
        remote = make_embedder("openai", {"url": server.url, "model": "all-MiniLM-L6-v2"})
        texts = ["How do I calibrate the grinder?", "Water the plants on Sunday."]
        for a, b in zip(remote.embed_documents(texts), local.embed_documents(texts), strict=True):
            assert _cosine(a, b) > 0.9999
        assert remote.dimension == 384
        settings = resolve_settings(
            {"data_dir": str(tmp_path / "d"), "provider": "openai", "model": "all-MiniLM-L6-v2"},
            {"CHROMASYNC_EMBEDDING_URL": server.url, "CHROMASYNC_COLLECTIONS": "shared"},
        )
        api.ingest([api.source_for(notes)], settings)
        [hit, *_] = api.search("calibrating a coffee grinder", settings, k=3)
    assert "grinder" in hit.text.lower()


# -- the `server` provider ----------------------------------------------------------------

_DIM = 32


def _register_test_function() -> None:
    """A chromadb embedding function that runs locally (hashed words), known by name, so a
    collection configured with it can be re-opened from its persisted configuration."""
    import numpy as np
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
    from chromadb.utils.embedding_functions import (
        known_embedding_functions,
        register_embedding_function,
    )

    if "chromasync-test-hash" in known_embedding_functions:
        return

    class TestHashFunction(EmbeddingFunction[Documents]):
        def __init__(self, dimension: int = _DIM) -> None:
            self.dimension = dimension
            self.calls = 0

        def __call__(self, input: Documents) -> Embeddings:
            embedder = HashEmbedder(self.dimension)
            return [np.asarray(v, dtype=np.float32) for v in embedder.embed_documents(input)]

        @staticmethod
        def name() -> str:
            return "chromasync-test-hash"

        def get_config(self) -> dict[str, Any]:
            return {"dimension": self.dimension}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> TestHashFunction:
            return TestHashFunction(int(config["dimension"]))

        def default_space(self) -> Any:
            return "cosine"

        def supported_spaces(self) -> Any:
            return ["cosine", "l2", "ip"]

    register_embedding_function(TestHashFunction)


@pytest.mark.server
def test_server_provider_lets_the_collection_embed(
    notes: Path, tmp_path: Path, chroma_server: str
) -> None:
    import chromadb
    from chromadb.config import Settings as ChromaSettings
    from chromadb.utils.embedding_functions import known_embedding_functions

    _register_test_function()
    function = known_embedding_functions["chromasync-test-hash"](_DIM)
    name = unique_collection()
    host, port = chroma_server.removeprefix("http://").split(":")
    client = chromadb.HttpClient(
        host=host, port=int(port), settings=ChromaSettings(anonymized_telemetry=False)
    )
    client.create_collection(name, embedding_function=function, metadata={"team": "docs"})

    settings = resolve_settings(
        {
            "data_dir": str(tmp_path / "d"),
            "provider": "server",
            "chroma_url": chroma_server,
            "collection": name,
        },
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    [summary] = api.ingest([api.source_for(notes)], settings)
    assert summary.chunks_embedded == summary.chunks_total > 0
    raw = client.get_collection(name)
    assert raw.metadata["chromasync_embedding_provider"] == "server"
    assert raw.metadata["chromasync_function"] == "chromasync-test-hash"
    assert raw.metadata["team"] == "docs"  # the owner's metadata kept
    got = raw.get(include=["documents", "embeddings"])
    expected = HashEmbedder(_DIM).embed_documents(got["documents"])
    for vector, want in zip(got["embeddings"], expected, strict=True):
        assert list(vector) == pytest.approx(want, abs=1e-6)  # made by the collection
    [again] = api.ingest([api.source_for(notes)], settings)
    assert again.chunks_embedded == 0
    hits = api.search("grinder calibration", settings, k=2)
    assert hits and "grinder" in hits[0].text.lower()
    # another provider's vectors are never mixed in
    hashed = resolve_settings(
        {
            "data_dir": str(tmp_path / "e"),
            "provider": "hash",
            "chroma_url": chroma_server,
            "collection": name,
        },
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    with pytest.raises(EmbeddingError, match="server"):
        api.ingest([api.source_for(notes)], hashed)


@pytest.mark.server
def test_server_provider_refuses_collection_without_function(
    notes: Path, tmp_path: Path, chroma_server: str
) -> None:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    name = unique_collection()
    host, port = chroma_server.removeprefix("http://").split(":")
    client = chromadb.HttpClient(
        host=host, port=int(port), settings=ChromaSettings(anonymized_telemetry=False)
    )
    client.create_collection(name, embedding_function=None)
    settings = resolve_settings(
        {
            "data_dir": str(tmp_path / "d"),
            "provider": "server",
            "chroma_url": chroma_server,
            "collection": name,
        },
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    with pytest.raises(EmbeddingError, match=r"has no embedding function"):
        api.ingest([api.source_for(notes)], settings)
    default = unique_collection()
    client.create_collection(default)  # Chroma's default function: it would download a model
    settings = resolve_settings(
        {
            "data_dir": str(tmp_path / "f"),
            "provider": "server",
            "chroma_url": chroma_server,
            "collection": default,
        },
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    with pytest.raises(EmbeddingError, match=r"Chroma's default one"):
        api.ingest([api.source_for(notes)], settings)
    assert client.get_collection(default).count() == 0
    missing = resolve_settings(
        {
            "data_dir": str(tmp_path / "d"),
            "provider": "server",
            "chroma_url": chroma_server,
            "collection": unique_collection(),
        },
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    with pytest.raises(Exception, match=r"does not exist"):
        api.ingest([api.source_for(notes)], missing)


@pytest.mark.slow
@pytest.mark.model
def test_local_provider_with_a_model_folder(tmp_path: Path) -> None:
    """Any sentence-transformers folder: here a copy of the bundled one, under another name."""
    import shutil

    from chromasync.embed.tokens import bundled_model_dir

    folder = tmp_path / "my-minilm"
    shutil.copytree(bundled_model_dir(), folder)
    custom = make_embedder("local", {"model": str(folder), "backend": "torch"})
    bundled = make_embedder("local", {"backend": "torch"})
    # The id names the folder, and the numeric variant the backend chose (bf16 on torch).
    assert custom.base_model_id == "local:my-minilm" != bundled.base_model_id
    assert custom.model_id == custom.model_id_for(custom.variant) != bundled.model_id
    assert custom.dimension == 384 and custom.tokenizer_path == str(folder / "tokenizer.json")
    texts = ["How do I calibrate the grinder?"]
    [a], [b] = custom.embed_documents(texts), bundled.embed_documents(texts)
    assert _cosine(a, b) > 0.9999
    with pytest.raises(EmbeddingError, match="not a sentence-transformers model folder"):
        make_embedder("local", {"model": str(tmp_path / "nowhere")})
