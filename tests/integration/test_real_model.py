"""The real default model, end to end, on a handful of texts (ONNX export included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import resolve_settings
from chromasync.embed.local import LocalEmbedder

from ..conftest import run_cli

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


def test_onnx_matches_sentence_transformers(model_cache: Path) -> None:
    texts = ["How do I calibrate the grinder?", "Sourdough starter feeding", "x" * 3000]
    onnx = LocalEmbedder(cache_dir=model_cache, backend="onnx", variant="fp32")
    torch = LocalEmbedder(cache_dir=model_cache, backend="torch", variant="fp32")
    for a, b in zip(onnx.embed_documents(texts), torch.embed_documents(texts), strict=True):
        assert len(a) == 384
        assert sum(x * y for x, y in zip(a, b, strict=True)) > 0.9999
    assert onnx.onnx_path().is_file()


def test_int8_made_locally_once_and_close_to_fp32(
    model_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The int8 variant is quantized from the cached export at first use (one line on
    stderr), cached, and stays close to fp32 (retrieval quality is measured by
    benchmarks/model_throughput.py --variants, not here)."""
    texts = ["How do I calibrate the grinder?", "Sourdough starter feeding", "x" * 3000]
    fp32 = LocalEmbedder(cache_dir=model_cache, variant="fp32").embed_documents(texts)
    int8 = LocalEmbedder(cache_dir=model_cache, variant="int8")
    assert not int8.variant_path().exists()
    got = int8.embed_documents(texts)
    assert int8.variant_path().is_file() and int8.model_id.endswith("@int8")
    said = [r.getMessage() for r in caplog.records if "quantizing" in r.getMessage()]
    assert len(said) == 1 and "int8 (once, no download)" in said[0]
    caplog.clear()
    for a, b in zip(got, fp32, strict=True):
        # the same model (unrelated texts are far below), not the same numbers
        assert 0.95 < sum(x * y for x, y in zip(a, b, strict=True)) < 0.99999
    again = LocalEmbedder(cache_dir=model_cache, variant="int8")
    # from the cached file, the same numbers for the same batch (dynamic quantization scales
    # activations per batch: a text's int8 vector depends slightly on its batch-mates)
    assert again.embed_documents(texts) == got
    assert "quantizing" not in caplog.text


def test_bf16_traced_once_close_to_fp32_and_queried_in_fp32(
    model_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The bf16 variant is traced from the bundled weights at first use (one line on
    stderr), cached, close to fp32 (not equal), and its queries are embedded by the fp32
    export, so a search process does not import torch."""
    texts = ["How do I calibrate the grinder?", "Sourdough starter feeding", "x" * 3000]
    fp32 = LocalEmbedder(cache_dir=model_cache, variant="fp32")
    expected = fp32.embed_documents(texts)
    bf16 = LocalEmbedder(cache_dir=model_cache, variant="bf16")
    assert not bf16.variant_path().exists()
    got = bf16.embed_documents(texts)
    assert bf16.variant_path().is_file() and bf16.model_id.endswith("@bf16")
    assert bf16.runtime == ("torch", "cpu")
    said = [r.getMessage() for r in caplog.records if "tracing" in r.getMessage()]
    assert len(said) == 1 and "bf16 (once" in said[0]
    caplog.clear()
    for a, b in zip(got, expected, strict=True):
        assert 0.999 < sum(x * y for x, y in zip(a, b, strict=True)) < 0.999999
    again = LocalEmbedder(cache_dir=model_cache, variant="bf16")
    assert again.embed_documents(texts) == got  # from the cached trace, same numbers
    assert "tracing" not in caplog.text
    fresh = LocalEmbedder(cache_dir=model_cache, variant="bf16")
    assert fresh.embed_query(texts[0]) == fp32.embed_query(texts[0])
    assert fresh._traced is None  # the query loaded no torch model


def test_ingest_and_search_with_the_default_model(
    notes: Path, tmp_path: Path, model_cache: Path
) -> None:
    env = {
        "CHROMASYNC_DATA_DIR": str(tmp_path / "data"),
        "CHROMASYNC_CACHE_DIR": str(model_cache),
        "CHROMASYNC_COLLECTIONS": "shared",
    }
    first = run_cli(["ingest", str(notes), "--json"], env=env)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert summary["chunks_embedded"] == summary["chunks_total"] > 0
    found = run_cli(["search", "how do I calibrate the grinder", "--k", "3", "--json"], env=env)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert hits[0]["path"] == "guides/install.md"
    assert "Calibration" in hits[0]["heading"] or "Calibration" in hits[0]["text"]
    settings = resolve_settings(
        {"data_dir": str(tmp_path / "data")},
        {"CHROMASYNC_CACHE_DIR": str(model_cache), "CHROMASYNC_COLLECTIONS": "shared"},
    )
    assert api.ingest([api.source_for(notes)], settings)[0].chunks_embedded == 0


def test_prefetch_loads_in_background_only_when_exported(model_cache: Path, tmp_path: Path) -> None:
    fresh = LocalEmbedder(cache_dir=tmp_path / "empty-cache")
    fresh.prefetch()  # no export cached: the export stays in the foreground, nothing starts
    assert fresh.runtime is None and not fresh._load_lock.locked()
    exported = LocalEmbedder(cache_dir=model_cache, backend="onnx")
    assert exported.onnx_path().is_file()  # made by the test above
    exported.prefetch()
    [vector] = exported.embed_documents(["prefetched"])  # waits for the background load
    assert exported.runtime == ("onnx", "cpu") and len(vector) == 384


def test_ask_extractive_with_the_default_model(
    notes: Path, tmp_path: Path, model_cache: Path
) -> None:
    """`chromasync ask` end to end with provider `local` (no chat model: extractive)."""
    env = {
        "CHROMASYNC_DATA_DIR": str(tmp_path / "data"),
        "CHROMASYNC_CACHE_DIR": str(model_cache),
        "CHROMASYNC_COLLECTIONS": "shared",
        "CHROMASYNC_LLM_URL": "",
    }
    first = run_cli(["ingest", str(notes), "--json"], env=env)
    assert first.returncode == 0, first.stderr
    asked = run_cli(["ask", "how do I calibrate the grinder burrs?", "--k", "4"], env=env)
    assert asked.returncode == 0, asked.stderr
    answer, _, sources = asked.stdout.partition("\nSources:\n")
    assert "burrs" in answer and "[1]" in answer
    assert sources.startswith("[1] guides/install.md:")
    as_json = run_cli(["ask", "how do I calibrate the grinder burrs?", "--json"], env=env)
    data = json.loads(as_json.stdout)
    assert data["mode"] == "extractive" and data["citations"][0]["path"] == "guides/install.md"
