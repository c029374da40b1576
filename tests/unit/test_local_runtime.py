"""Which backend and device the local provider runs on (pure)."""

from __future__ import annotations

import pytest

from chromasync.embed.local import LocalEmbedder, choose_runtime
from chromasync.errors import EmbeddingError

CPU_ORT = ["CPUExecutionProvider"]
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
