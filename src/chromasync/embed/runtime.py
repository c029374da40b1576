"""Where and how the local model runs: the variant `auto` means, the backend and device,
batches by token count. Pure decisions, plus cheap probes of the machine (the CPU's flags,
an NVIDIA driver, which runtimes are installed) that import nothing heavy but onnxruntime.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

from ..errors import EmbeddingError, not_installed

VARIANTS = ("fp32", "int8", "bf16")
#: chosen from benchmarks/model_throughput.py --variants (docs/scaling.md has the table):
#: bf16 where the CPU multiplies bf16 matrices natively, else int8
CPU_VARIANT = "int8"
BF16_VARIANT = "bf16"


def unrunnable(variant: str, backend: str, device: str) -> str | None:
    """Why `variant` cannot run with these `backend` and `device` options; None: it can."""
    if variant == "int8" and backend == "torch":
        return "needs the onnx backend"
    if variant == "bf16" and (backend == "onnx" or device == "cuda"):
        return "runs with torch on the CPU (backend auto or torch, device auto or cpu)"
    return None


def auto_variant(backend: str, device: str, native_bf16: bool = False) -> str:
    """The variant `auto` means; pure but for cheap checks (no heavy import).

    On the CPU: bf16 where the CPU multiplies bf16 matrices natively (`native_bf16`) and
    torch is installed (backend auto or torch), else int8 where ONNX Runtime runs, else
    fp32. A GPU runs fp32 (fast there; dynamic int8 kernels are CPU ones)."""
    import importlib.util

    gpu = device != "cpu" and gpu_present()
    providers: list[str] | None = None  # onnxruntime is imported only for a GPU
    if importlib.util.find_spec("onnxruntime") is not None:
        providers = onnx_providers() if gpu else ["CPU"]
    try:
        chosen = choose_runtime(backend, device, providers, gpu)
    except EmbeddingError:
        return "fp32"  # the load reports it
    if chosen[1] != "cpu":
        return "fp32"
    if native_bf16 and backend != "onnx" and importlib.util.find_spec("torch") is not None:
        return BF16_VARIANT
    return CPU_VARIANT if chosen == ("onnx", "cpu") else "fp32"


def choose_runtime(
    backend: str, device: str, onnx_providers: Sequence[str] | None, gpu_present: bool
) -> tuple[str, str]:
    """(backend, device) to run the model with; pure.

    `backend`: auto, onnx or torch; `device`: auto, cpu or cuda; `onnx_providers`: those of
    the installed onnxruntime (None: not installed); `gpu_present`: an NVIDIA driver is
    loaded. On the CPU, ONNX Runtime is the default (same vectors, a fraction of torch's
    start-up); on a GPU, ONNX Runtime if it has the CUDA provider, else torch.
    """
    if backend not in ("auto", "onnx", "torch"):
        raise EmbeddingError(f"local provider: unknown backend {backend!r} (auto, onnx, torch)")
    if device not in ("auto", "cpu", "cuda"):
        raise EmbeddingError(f"local provider: unknown device {device!r} (auto, cpu, cuda)")
    if device == "auto":
        device = "cuda" if gpu_present else "cpu"
    onnx_ok = onnx_providers is not None and (
        device == "cpu" or "CUDAExecutionProvider" in onnx_providers
    )
    if backend == "onnx":
        if not onnx_ok:
            raise EmbeddingError(
                "backend 'onnx' needs onnxruntime"
                + (" with CUDA (onnxruntime-gpu)" if device == "cuda" else "")
            )
        return "onnx", device
    if backend == "auto" and onnx_ok:
        return "onnx", device
    return "torch", device


def token_batches(lengths: Sequence[int], max_texts: int, max_tokens: int) -> list[list[int]]:
    """Indices of texts grouped into batches, shortest first; pure.

    A batch holds at most `max_texts` texts and, padded to its longest text, at most
    `max_tokens` word pieces (a single longer text still gets a batch of its own)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:  # sorted: the newest text is the batch's longest
        if current and (
            len(current) >= max_texts or (len(current) + 1) * lengths[index] > max_tokens
        ):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def onnx_providers() -> list[str] | None:
    """onnxruntime's execution providers; None when it is not installed."""
    try:
        import onnxruntime
    except ImportError as exc:
        if not_installed(exc, "onnxruntime"):
            return None
        raise EmbeddingError(f"onnxruntime is installed but failed to import: {exc}") from exc
    return list(onnxruntime.get_available_providers())


def missing(module: str) -> bool:
    """`module` is not installed (looked up, not imported)."""
    import importlib.util

    return importlib.util.find_spec(module) is None


def native_bf16() -> bool:
    """The CPU has AMX bf16 tiles (Linux: read from /proc/cpuinfo; elsewhere False), where
    bf16 matrix products measured about 2x fp32 ones (docs/scaling.md)."""
    with suppress(OSError), open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
        for line in handle:
            if line.startswith("flags"):
                return "amx_bf16" in line.split()
    return False


def gpu_present() -> bool:
    """An NVIDIA driver is loaded (checked without importing torch)."""
    return Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidiactl").exists()


def torch_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
