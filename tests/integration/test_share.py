"""Collections of the default model carry Chroma's `default` embedding function, so other
Chroma clients embed text queries with the same model; `chromasync share` adds it to
collections made before, without touching a vector. (No model runs here: the real
peers are in test_peers.py.)"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.shared import MODEL_ID
from chromasync.store.peers import function_name

from ..conftest import invoke_cli


def _vectors(n: int, dim: int = 384) -> list[list[float]]:
    rng = random.Random(7)
    return [[rng.uniform(-1, 1) for _ in range(dim)] for _ in range(n)]


def _old_collection(settings: Settings, name: str, model: str, provider: str = "local") -> Any:
    """A collection as chromasync made it before: its model in metadata, no function."""
    client = api.open_store(settings)._client
    raw = client.get_or_create_collection(
        name,
        metadata={
            "hnsw:space": "cosine",
            "chromasync_embedding_model": model,
            "chromasync_embedding_provider": provider,
            "chromasync_dimension": 384,
        },
        embedding_function=None,
    )
    raw.add(ids=["a", "b"], embeddings=_vectors(2), documents=["one", "two"])
    assert raw.configuration_json["embedding_function"] is None
    return raw


def test_a_new_collection_of_the_default_model_carries_chromas_function(
    settings: Settings,
) -> None:
    store = api.open_store(settings)
    for variant in ("", "@int8", "@bf16"):
        made = store.collection(
            f"peers-new{variant[1:]}", f"{MODEL_ID}{variant}", 384, True, "local"
        )
        assert function_name(made) == "default"
    other = store.collection("peers-hash", "hash-64", 64, True, "hash")
    assert function_name(other) is None  # no Chroma function makes these vectors


def test_share_configures_old_collections_without_touching_vectors(
    settings: Settings, tmp_path: Path
) -> None:
    old = _old_collection(settings, "peers-old", f"{MODEL_ID}@bf16")
    _old_collection(settings, "peers-other", "text-embedding-3-small", "openai")
    before = old.get(include=["embeddings", "metadatas"])
    report = api.share(settings, place_model=False)
    assert "peers-old" in report.configured and "peers-other" in report.other_model
    store = api.open_store(settings)
    assert function_name(store.collection("peers-old", create=False)) == "default"
    after = store._client.get_collection("peers-old").get(include=["embeddings", "metadatas"])
    assert after["ids"] == before["ids"] and (after["embeddings"] == before["embeddings"]).all()
    assert after["metadatas"] == before["metadatas"]
    again = api.share(settings, place_model=False)
    assert again.configured == () and "peers-old" in again.already


def test_share_command(settings: Settings, cli_env: dict[str, str]) -> None:
    _old_collection(settings, settings.collection, MODEL_ID)
    done = invoke_cli(["share", "--no-model", "--json"], env=cli_env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["configured"] == [settings.collection]
    assert report["model_folder"].endswith("all-MiniLM-L6-v2/onnx")
    plain = invoke_cli(["share", "--no-model"], env=cli_env)
    assert plain.returncode == 0 and f"already configured: {settings.collection}" in plain.stdout


def test_records_say_what_was_embedded_and_which_document(notes: Path, settings: Settings) -> None:
    """A peer can rebuild each record's embedding input (context prefix + stored text) and
    finds the document id LlamaIndex deletes by."""
    from chromasync.embed.hashing import HashEmbedder
    from chromasync.metakeys import CONTEXT_KEY, normalise_for_hash

    embedder = HashEmbedder()
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    raw = api.open_store(settings)._client.get_collection(settings.collection)
    got = raw.get(include=["documents", "metadatas", "embeddings"])
    with_context = 0
    for doc, meta, vector in zip(
        got["documents"], got["metadatas"], got["embeddings"], strict=True
    ):
        text = normalise_for_hash(str(meta.get(CONTEXT_KEY, "")) + doc)
        [expected] = embedder.embed_documents([text])
        assert [round(x, 5) for x in expected] == [round(float(x), 5) for x in vector]
        assert meta["ref_doc_id"] == meta["document_id"] == meta["path"]
        with_context += CONTEXT_KEY in meta
    assert with_context > 0  # the notes' chunks are embedded under their headings


def test_an_ingest_configures_an_old_collection_of_the_default_model(
    notes: Path, settings: Settings
) -> None:
    """Writing into a collection made before (the default model's, no function) adds
    Chroma's function; its vectors stay as they were. (A 384-wide hash stands in for the
    model's vectors: only the recorded model id matters here.)"""
    from chromasync.embed.hashing import HashEmbedder

    class Stand(HashEmbedder):
        name = "local"

    embedder = Stand(384)
    embedder.model_id = MODEL_ID
    raw = _old_collection(settings, settings.collection, MODEL_ID)
    before = raw.get(ids=["a", "b"], include=["embeddings"])["embeddings"]
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    store = api.open_store(settings)
    assert function_name(store.collection(settings.collection, create=False)) == "default"
    after = store._client.get_collection(settings.collection).get(
        ids=["a", "b"], include=["embeddings"]
    )
    assert (after["embeddings"] == before).all()
