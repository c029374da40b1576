"""Which backend and device the local provider runs on (pure)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from chromasync.embed.local import DEFAULT_MODEL_ID, LocalEmbedder
from chromasync.embed.runtime import CPU_VARIANT, auto_variant, choose_runtime, token_batches
from chromasync.errors import EmbeddingError

CPU_ORT = ["CPUExecutionProvider"]


@pytest.fixture
def no_amx(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU without native bf16, whatever this machine has."""
    from chromasync.embed import runtime

    monkeypatch.setattr(runtime, "native_bf16", lambda: False)


GPU_ORT = ["CUDAExecutionProvider", "CPUExecutionProvider"]


@pytest.mark.parametrize(
    ("backend", "device", "providers", "gpu", "expected"),
    [
        ("auto", "auto", CPU_ORT, False, ("onnx", "cpu")),  # the default here: ONNX on CPU
        ("auto", "auto", None, False, ("torch", "cpu")),  # no onnxruntime
        ("auto", "auto", CPU_ORT, True, ("torch", "cuda")),  # a GPU, CPU-only onnxruntime
        ("auto", "auto", GPU_ORT, True, ("onnx", "cuda")),  # onnxruntime-gpu
        ("auto", "cpu", GPU_ORT, True, ("onnx", "cpu")),  # asked for the CPU
        ("torch", "auto", CPU_ORT, False, ("torch", "cpu")),
        ("torch", "auto", GPU_ORT, True, ("torch", "cuda")),
        ("onnx", "cpu", CPU_ORT, True, ("onnx", "cpu")),
        ("auto", "cuda", CPU_ORT, False, ("torch", "cuda")),
    ],
)
def test_choose_runtime(
    backend: str,
    device: str,
    providers: list[str] | None,
    gpu: bool,
    expected: tuple[str, str],
) -> None:
    assert choose_runtime(backend, device, providers, gpu) == expected


@pytest.mark.parametrize(
    ("backend", "device", "providers"),
    [
        ("onnx", "cuda", CPU_ORT),
        ("onnx", "cpu", None),
        ("tpu", "auto", CPU_ORT),
        ("auto", "mps", CPU_ORT),
    ],
)
def test_choose_runtime_refuses(backend: str, device: str, providers: list[str] | None) -> None:
    with pytest.raises(EmbeddingError):
        choose_runtime(backend, device, providers, True)


def test_default_device_is_auto() -> None:
    embedder = LocalEmbedder.from_options({})
    assert embedder.device == "auto" and embedder.backend == "auto"
    assert embedder.runtime is None  # nothing loaded at construction


def test_it_says_whether_it_embeds_on_this_machines_cores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An ingest leaves the cores to a model on the CPU (no planning process: `ahead`)."""
    from chromasync.embed import runtime

    for gpu in (False, True):
        monkeypatch.setattr(runtime, "gpu_present", lambda gpu=gpu: gpu)
        assert LocalEmbedder.from_options({"device": "cpu"}).uses_local_cores
        assert not LocalEmbedder.from_options({"device": "cuda"}).uses_local_cores
        assert LocalEmbedder.from_options({}).uses_local_cores is not gpu  # auto
    loaded = LocalEmbedder.from_options({})
    loaded.runtime = ("onnx", "cuda")  # what a load chose
    assert not loaded.uses_local_cores
    loaded.runtime = ("onnx", "cpu")
    assert loaded.uses_local_cores


@pytest.mark.parametrize(
    ("lengths", "max_texts", "max_tokens", "expected"),
    [
        ([], 32, 100, []),
        ([5, 100, 3, 50, 50], 32, 150, [[2, 0, 3], [4], [1]]),  # rows x longest <= 150
        ([4, 4, 4, 4, 4], 2, 10**9, [[0, 1], [2, 3], [4]]),  # at most max_texts rows
        ([300, 10], 32, 100, [[1], [0]]),  # a text over the budget gets a batch of its own
    ],
)
def test_token_batches(
    lengths: list[int], max_texts: int, max_tokens: int, expected: list[list[int]]
) -> None:
    assert token_batches(lengths, max_texts, max_tokens) == expected


@pytest.mark.parametrize(
    ("backend", "device", "expected"),
    [("auto", "cpu", CPU_VARIANT), ("onnx", "cpu", CPU_VARIANT), ("torch", "cpu", "fp32")],
)
def test_auto_variant(backend: str, device: str, expected: str) -> None:
    assert auto_variant(backend, device) == expected


@pytest.mark.parametrize(
    ("backend", "device", "expected"),
    [
        ("auto", "cpu", "bf16"),
        ("torch", "cpu", "bf16"),
        ("onnx", "cpu", CPU_VARIANT),  # ONNX Runtime asked for: it has no bf16 kernels
    ],
)
def test_auto_variant_with_native_bf16(backend: str, device: str, expected: str) -> None:
    assert auto_variant(backend, device, native_bf16=True) == expected


def test_native_bf16_needs_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    assert auto_variant("auto", "cpu", native_bf16=True) == CPU_VARIANT


def test_auto_variant_on_a_gpu_is_fp32(monkeypatch: pytest.MonkeyPatch) -> None:
    from chromasync.embed import runtime

    monkeypatch.setattr(runtime, "gpu_present", lambda: True)
    monkeypatch.setattr(runtime, "onnx_providers", lambda: GPU_ORT)
    assert auto_variant("auto", "auto") == "fp32"
    # a driver but CPU-only onnxruntime: torch on CUDA runs the model, in fp32
    monkeypatch.setattr(runtime, "onnx_providers", lambda: CPU_ORT)
    assert auto_variant("auto", "auto") == "fp32"
    assert (
        auto_variant("onnx", "auto") == "fp32"
    )  # refused by choose_runtime: fp32, the load says why
    assert auto_variant("auto", "cpu") == CPU_VARIANT  # asked for the CPU
    assert auto_variant("auto", "auto", native_bf16=True) == "fp32"  # the GPU wins


def test_the_variant_is_part_of_the_model_id(no_amx: None) -> None:
    fp32 = LocalEmbedder(variant="fp32")
    int8 = LocalEmbedder(variant="int8")
    bf16 = LocalEmbedder(variant="bf16")
    assert fp32.model_id == DEFAULT_MODEL_ID  # unchanged: indexes made before keep working
    assert int8.model_id == f"{DEFAULT_MODEL_ID}@int8"
    assert bf16.model_id == f"{DEFAULT_MODEL_ID}@bf16"
    assert LocalEmbedder.from_options({"variant": "int8"}).model_id == int8.model_id
    assert int8.variant_path() != fp32.variant_path() == fp32.onnx_path()
    assert bf16.variant_path().suffix == ".json" and bf16.variant_path().parent.name == "torch"
    assert LocalEmbedder(variant="auto", device="cpu").variant == CPU_VARIANT


def test_auto_is_bf16_where_the_cpu_has_amx(monkeypatch: pytest.MonkeyPatch) -> None:
    from chromasync.embed import runtime

    monkeypatch.setattr(runtime, "native_bf16", lambda: True)
    assert LocalEmbedder(device="cpu").model_id == f"{DEFAULT_MODEL_ID}@bf16"
    assert LocalEmbedder(device="cpu", backend="onnx").model_id == f"{DEFAULT_MODEL_ID}@int8"


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '"a string"'])
def test_a_broken_model_config_is_a_clear_error(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.json").write_text(text)
    with pytest.raises(EmbeddingError, match=r"config\.json"):
        LocalEmbedder(tmp_path, variant="bf16")


def test_bf16_runs_bert_encoders_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A model the bf16 encoder cannot run: auto keeps int8 even with AMX, does not follow
    a bf16 index, and an explicit bf16 is refused with the reason (before any load)."""
    from chromasync.embed import runtime

    monkeypatch.setattr(runtime, "native_bf16", lambda: True)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "roberta"}))
    auto = LocalEmbedder(tmp_path, device="cpu")
    assert auto.variant == CPU_VARIANT
    assert not auto.follow(auto.model_id_for("bf16")) and auto.variant == CPU_VARIANT
    with pytest.raises(EmbeddingError, match=r"variant 'bf16' cannot run .*model_type 'roberta'"):
        LocalEmbedder(tmp_path, variant="bf16")


def test_unknown_or_impossible_variant_refused() -> None:
    with pytest.raises(EmbeddingError, match="variant"):
        LocalEmbedder(variant="fp8")
    with pytest.raises(EmbeddingError, match="onnx"):
        LocalEmbedder(variant="int8", backend="torch")
    with pytest.raises(EmbeddingError, match="torch on the CPU"):
        LocalEmbedder(variant="bf16", backend="onnx")
    with pytest.raises(EmbeddingError, match="torch on the CPU"):
        LocalEmbedder(variant="bf16", device="cuda")


def test_auto_follows_the_stored_variant_and_explicit_does_not(no_amx: None) -> None:
    auto = LocalEmbedder(device="cpu")
    assert auto.variant == "int8"
    assert auto.follow(DEFAULT_MODEL_ID) is True  # an index written in fp32
    assert auto.model_id == DEFAULT_MODEL_ID and auto.variant == "fp32"
    assert auto.follow("openai:text-embedding-3-small") is False  # another model: no
    assert auto.model_id == DEFAULT_MODEL_ID
    explicit = LocalEmbedder(variant="int8")
    assert explicit.follow(DEFAULT_MODEL_ID) is False
    assert explicit.model_id.endswith("@int8")
    onnx_only = LocalEmbedder(backend="onnx")  # cannot run a bf16 index: says so on use
    assert onnx_only.follow(f"{DEFAULT_MODEL_ID}@bf16") is False
    assert LocalEmbedder(device="cpu").follow(f"{DEFAULT_MODEL_ID}@bf16") is True


def test_the_first_export_says_so_on_stderr(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # the export spends ~10 s once: one warning line (stderr) before it starts, as for int8

    monkeypatch.setitem(sys.modules, "torch", None)  # stop right after the message
    target = tmp_path / "model.onnx"
    with (
        caplog.at_level(logging.WARNING, logger="chromasync.embed.local"),
        pytest.raises(EmbeddingError, match="needs torch"),
    ):
        LocalEmbedder(variant="fp32")._export(target)
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert messages == [
        f"chromasync: exporting the local model to ONNX (once, ~10 s, no download): {target}"
    ]
