"""The real default model, end to end, on a handful of texts (ONNX export included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.embed.local import LocalEmbedder
from chromasync.embed.modelfiles import weights_stem

from ..conftest import run_cli

pytestmark = pytest.mark.model


TEXTS = ["How do I calibrate the grinder?", "Sourdough starter feeding", "x" * 3000]


def _made_once(
    model: LocalEmbedder, caplog: pytest.LogCaptureFixture, doing: str, said: str
) -> list[list[float]]:
    """Embed TEXTS with a variant not made yet: it is made (one line on stderr saying
    `doing` and `said`) and cached; the vectors."""
    assert not model.variant_path().exists()
    got = model.embed_documents(TEXTS)
    assert model.variant_path().is_file()
    lines = [r.getMessage() for r in caplog.records if doing in r.getMessage()]
    assert len(lines) == 1 and said in lines[0]
    caplog.clear()
    return got


def _cosines(a: list[list[float]], b: list[list[float]]) -> list[float]:
    return [sum(x * y for x, y in zip(u, v, strict=True)) for u, v in zip(a, b, strict=True)]


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


def test_onnx_matches_sentence_transformers(model_cache: Path) -> None:
    onnx = LocalEmbedder(cache_dir=model_cache, backend="onnx", variant="fp32")
    torch = LocalEmbedder(cache_dir=model_cache, backend="torch", variant="fp32")
    got = onnx.embed_documents(TEXTS)
    assert all(len(vector) == 384 for vector in got)
    assert all(cosine > 0.9999 for cosine in _cosines(got, torch.embed_documents(TEXTS)))
    assert onnx.onnx_path().is_file()


def test_int8_made_locally_once_and_close_to_fp32(
    model_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The int8 variant is quantized from the cached export at first use (one line on
    stderr), cached, and stays close to fp32 (retrieval quality is measured by
    benchmarks/model_throughput.py --variants, not here)."""
    fp32 = LocalEmbedder(cache_dir=model_cache, variant="fp32").embed_documents(TEXTS)
    int8 = LocalEmbedder(cache_dir=model_cache, variant="int8")
    got = _made_once(int8, caplog, "quantizing", "int8 (once, no download)")
    assert int8.model_id.endswith("@int8")
    for cosine in _cosines(got, fp32):
        # the same model (unrelated texts are far below), not the same numbers
        assert 0.95 < cosine < 0.99999
    again = LocalEmbedder(cache_dir=model_cache, variant="int8")
    # from the cached file, the same numbers for the same batch (dynamic quantization scales
    # activations per batch: a text's int8 vector depends slightly on its batch-mates)
    assert again.embed_documents(TEXTS) == got
    assert "quantizing" not in caplog.text
    # its queries go through the fp32 export, as a Chroma client's default function sends them
    fp32_model = LocalEmbedder(cache_dir=model_cache, variant="fp32")
    assert again.embed_query(TEXTS[0]) == fp32_model.embed_query(TEXTS[0])


def test_int8_is_what_onnxruntimes_quantizer_makes(model_cache: Path, tmp_path: Path) -> None:
    """On the real model, chromasync's quantizer (no `onnx` package) computes what
    onnxruntime's `quantize_dynamic` makes, number for number (tests/unit/test_quantize.py
    has the small cases)."""
    import numpy as np
    import onnxruntime as ort

    from chromasync.embed.quantize import quantize_int8

    from ..unit.test_quantize import onnxruntime_quantized

    fp32 = LocalEmbedder(cache_dir=model_cache, variant="fp32")
    fp32.embed_documents(TEXTS[:1])  # made once for the module
    ours, theirs = tmp_path / "ours.onnx", tmp_path / "ort.onnx"
    assert quantize_int8(fp32.onnx_path(), ours) == 36  # six layers of six projections
    onnxruntime_quantized(fp32.onnx_path(), theirs)
    ids = np.random.default_rng(5).integers(1000, 20000, size=(3, 40))
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids}
    got, expected = (
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feed)[0]
        for path in (ours, theirs)
    )
    assert np.array_equal(got, expected)
    # the attention softmax's NaN guards (torch's export has them; Chroma's older file not) go
    import onnx

    ops = [n.op_type for n in onnx.load(str(ours), load_external_data=False).graph.node]
    assert "IsNaN" not in ops and ops.count("Softmax") == 6


def test_bf16_checked_once_close_to_fp32_and_queried_in_fp32(
    model_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The bf16 encoder runs the bundled weights; at first use it is checked against
    sentence-transformers (one line on stderr) and the check recorded; its vectors are
    close to fp32 (not equal), and its queries are embedded by the fp32 export, so a search
    process does not import torch."""
    fp32 = LocalEmbedder(cache_dir=model_cache, variant="fp32")
    expected = fp32.embed_documents(TEXTS)
    bf16 = LocalEmbedder(cache_dir=model_cache, variant="bf16")
    old_trace = bf16.variant_path().with_name(f"{weights_stem(bf16._weights())}-bf16-t1.pt")
    old_trace.parent.mkdir(parents=True, exist_ok=True)
    old_trace.write_bytes(b"the trace an older chromasync made")
    got = _made_once(bf16, caplog, "checking", "bf16 encoder against sentence-transformers")
    assert not old_trace.exists()  # its own stale file, removed
    assert json.loads(bf16.variant_path().read_text())["cosine"] > 0.999
    assert bf16.model_id.endswith("@bf16") and bf16.runtime == ("torch", "cpu")
    for cosine in _cosines(got, expected):
        assert 0.999 < cosine < 0.999999
    again = LocalEmbedder(cache_dir=model_cache, variant="bf16")
    assert again.embed_documents(TEXTS) == got  # the same numbers, checked once only
    assert "checking" not in caplog.text
    fresh = LocalEmbedder(cache_dir=model_cache, variant="bf16")
    assert fresh.embed_query(TEXTS[0]) == fp32.embed_query(TEXTS[0])
    assert fresh._encoder is None  # the query loaded no torch model


def test_a_failed_bf16_check_loads_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An encoder that disagrees with sentence-transformers is never used: every call fails
    with the reason, and no record of a check is written."""
    from chromasync.embed import local
    from chromasync.errors import EmbeddingError

    def disagree(model: object, embed: object, floor: float, what: str) -> float:
        raise EmbeddingError(f"{what} differs (cosine 0.5)")

    monkeypatch.setattr(local, "check_agreement", disagree)
    bf16 = LocalEmbedder(cache_dir=tmp_path, variant="bf16")
    for _ in range(2):
        with pytest.raises(EmbeddingError, match=r"bf16 encoder of .* differs"):
            bf16.embed_documents(TEXTS[:1])
    assert bf16._encoder is None and not bf16.variant_path().exists()


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
    [summary] = json.loads(first.stdout)
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
