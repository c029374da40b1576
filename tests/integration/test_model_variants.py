"""A vector's numeric variant (fp32, int8) is part of the model id: the collection and the
embedding cache never mix vectors of two variants, and `variant=auto` follows an index."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.embed.local import DEFAULT_MODEL_ID, LocalEmbedder
from chromasync.errors import EmbeddingError
from chromasync.sync.ingest import IngestOptions


class Variants(LocalEmbedder):
    """The local provider's ids and variant rules, with hash vectors salted by the variant
    (so that vectors of two variants differ) instead of the model."""

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts_embedded += len(texts)
        return HashEmbedder(self.dimension).embed_documents([f"{self.variant} {t}" for t in texts])

    def embed_query(self, text: str) -> list[float]:
        # the real model sends a quantized index's queries through its fp32 export
        # (test_real_model.py); the stand-in has no export, so it embeds them itself
        return self.embed_documents([text])[0]


def _run(root: Path, settings: Settings, embedder: LocalEmbedder, **kw: object):  # type: ignore[no-untyped-def]
    [summary] = api.ingest(
        [api.source_for(root, "notes")], settings, IngestOptions(**kw), embedder=embedder
    )
    return summary


def _cached_models(settings: Settings) -> dict[str, int]:
    with sqlite3.connect(settings.data_dir / "embeddings.sqlite3") as db:
        rows = db.execute("SELECT model, COUNT(*) FROM vectors GROUP BY model").fetchall()
    return dict(rows)


@pytest.fixture
def no_amx(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU without native bf16 (auto means int8), whatever this machine has."""
    from chromasync.embed import runtime

    monkeypatch.setattr(runtime, "native_bf16", lambda: False)


def test_variants_never_share_vectors(notes: Path, settings: Settings, no_amx: None) -> None:
    first = _run(notes, settings, Variants(variant="fp32"))
    assert first.chunks_embedded > 0
    assert _cached_models(settings) == {DEFAULT_MODEL_ID: first.chunks_embedded}

    with pytest.raises(EmbeddingError, match="@int8"):  # the collection holds fp32 vectors
        _run(notes, settings, Variants(variant="int8"))

    follower = Variants(variant="auto", device="cpu")
    assert follower.model_id.endswith("@int8")  # the default on a CPU...
    again = _run(notes, settings, follower)
    assert follower.model_id == DEFAULT_MODEL_ID  # ...follows the index written in fp32
    assert again.chunks_embedded == 0 and again.files_unchanged > 0

    int8 = Variants(variant="int8")
    redone = _run(notes, settings, int8, reembed=True)
    # the cache holds every text already, but under the fp32 id: nothing comes from it
    assert redone.chunks_embedded == first.chunks_embedded == int8.texts_embedded
    assert _cached_models(settings) == {
        DEFAULT_MODEL_ID: first.chunks_embedded,
        f"{DEFAULT_MODEL_ID}@int8": first.chunks_embedded,
    }
    hits = api.retrieve(
        api.SearchRequest("grinder calibration", mode="dense", k=3), settings, embedder=int8
    )
    assert hits.hits


def test_a_bf16_index_is_followed_and_kept_apart(
    notes: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written where auto means bf16 (a CPU with AMX), an index is followed by auto on a CPU
    without it, refused by an explicit other variant, and its vectors stay under @bf16."""
    from chromasync.embed import runtime

    monkeypatch.setattr(runtime, "native_bf16", lambda: True)
    amx = Variants(device="cpu")
    first = _run(notes, settings, amx)
    assert amx.model_id == f"{DEFAULT_MODEL_ID}@bf16" and first.chunks_embedded > 0
    assert _cached_models(settings) == {f"{DEFAULT_MODEL_ID}@bf16": first.chunks_embedded}

    monkeypatch.setattr(runtime, "native_bf16", lambda: False)
    elsewhere = Variants(device="cpu")
    assert elsewhere.model_id.endswith("@int8")
    again = _run(notes, settings, elsewhere)
    assert elsewhere.model_id.endswith("@bf16") and again.chunks_embedded == 0
    with pytest.raises(EmbeddingError, match="@bf16"):
        _run(notes, settings, Variants(variant="int8"))
