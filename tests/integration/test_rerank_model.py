"""Reranking with a real (tiny, locally built) cross-encoder folder: no download anywhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chromasync import api
from chromasync.embed.hashing import HashEmbedder
from chromasync.embed.tokens import bundled_model_dir
from chromasync.records import Hit
from chromasync.retrieve.rerank import CrossEncoderReranker, rerank

from ..conftest import REPO
from .test_retrieval import write_corpus

pytestmark = pytest.mark.slow  # imports torch and transformers


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer BERT sequence classifier with MiniLM's tokenizer, saved to a folder."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("cross-encoder")
    source = bundled_model_dir()
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(source / name, folder / name)
    torch.manual_seed(7)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
    )
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    return folder


def test_cross_encoder_scores_and_reorders(cross_encoder: Path) -> None:
    reranker = CrossEncoderReranker(cross_encoder)
    texts = ["the burrs of the grinder", "sourdough starter", "a kite", "coastal loop ride"]
    scores = reranker.score("grinder burrs", texts)
    assert len(scores) == 4 and scores == reranker.score("grinder burrs", texts)
    assert len(set(scores)) > 1
    hits = [Hit(str(i), f"{i}.md", "s", "", 1, 1, 0.0, t) for i, t in enumerate(texts)]
    order = [h.text for h in rerank("grinder burrs", hits, reranker)]
    assert order == [t for _, t in sorted(zip(scores, texts, strict=True), key=lambda p: -p[0])]


def test_search_reranks_when_a_model_is_configured(cross_encoder: Path, tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "notes")
    base = {"data_dir": str(tmp_path / "data"), "provider": "hash"}
    settings = api.resolve_settings(base, {})
    api.ingest([api.source_for(root)], settings, embedder=HashEmbedder())
    plain = api.retrieve(api.SearchRequest("grinder burrs"), settings, embedder=HashEmbedder())
    assert not plain.reranked
    with_model = api.resolve_settings({**base, "rerank_model": str(cross_encoder)}, {})
    result = api.retrieve(api.SearchRequest("grinder burrs"), with_model, embedder=HashEmbedder())
    assert result.reranked and all("rerank" in h.ranks for h in result.hits)
    skipped = api.retrieve(
        api.SearchRequest("grinder burrs", rerank=False), with_model, embedder=HashEmbedder()
    )
    assert not skipped.reranked


FIRST_SCORES = r"""
import json, sys, threading
from pathlib import Path
from chromasync.retrieve.rerank import CrossEncoderReranker
reranker = CrossEncoderReranker(Path(sys.argv[1]))
errors, scores = [], []
def score():
    try:
        scores.append(reranker.score("grinder", ["the burrs of the grinder", "a kite"]))
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=score) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps({"errors": errors, "scores": scores}))
"""


def test_the_first_scores_from_several_threads_at_once_all_succeed(cross_encoder: Path) -> None:
    """A daemon's warm-up and its first request scored at once in a fresh process: both
    imported transformers, and one failed "cannot import name
    'AutoModelForSequenceClassification'" (issue 40). One model load at a time now."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-c", FIRST_SCORES, str(cross_encoder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["errors"] == []
    assert len(report["scores"]) == 4 and all(s == report["scores"][0] for s in report["scores"])
