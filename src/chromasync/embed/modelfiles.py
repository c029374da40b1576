"""Where the local model's files are (`embed/local.py`), and the model folder's JSON files.

Design notes: docs/internals.md, `embed/modelfiles.py`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import EmbeddingError
from . import shared

EXPORT_VERSION = 1
QUANTIZE_VERSION = 2  # 1 kept the attention softmax's NaN guards (embed/quantize.py)
BF16_VERSION = 2  # 1 was a TorchScript trace of the transformers model


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("CHROMASYNC_CACHE_DIR"):
        return Path(env["CHROMASYNC_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chromasync"


def read_json(folder: Path, name: str) -> dict[str, Any]:
    """The JSON object `name` of a model folder; {} when the folder has no such file."""
    path = folder / name
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise EmbeddingError(f"model folder file {str(path)!r} is unreadable: {exc}") from exc
    if not isinstance(data, dict):
        raise EmbeddingError(f"model folder file {str(path)!r} is not a JSON object")
    return data


def weights_file(folder: Path) -> Path:
    """The weights of a model folder: `model.safetensors`, else `pytorch_model.bin`."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            return folder / name
    raise EmbeddingError(f"no weights in model folder {str(folder)!r}")


def weights_stem(weights: Path) -> str:
    """`<folder>-<digest>`, keyed by the weights' identity (path, size, mtime)."""
    st = weights.stat()
    key = f"{weights.resolve()}|{st.st_size}|{st.st_mtime_ns}|{EXPORT_VERSION}"
    return f"{weights.parent.name}-{hashlib.sha256(key.encode()).hexdigest()[:20]}"


def export_path(cache_dir: Path, weights: Path | None) -> Path:
    """The fp32 ONNX model: Chroma's own file for the default model (`weights` None), else
    the export of `weights` with pooling inside, cached (keyed by the weights' identity)."""
    if weights is None:
        return shared.model_folder() / "model.onnx"
    return cache_dir / "onnx" / f"{weights_stem(weights)}.onnx"


def quantized_path(cache_dir: Path, fp32: Path, variant: str, chroma: bool) -> Path:
    """The file `variant` (int8) is quantized into from the fp32 model `fp32`, keyed by its
    identity: the export's own name, or for Chroma's file (`chroma`) its path, size, mtime."""
    stem = fp32.stem
    if chroma:
        st = fp32.stat() if fp32.is_file() else None
        key = f"{fp32.resolve()}|{st.st_size}|{st.st_mtime_ns}" if st else "missing"
        stem = f"chroma-{shared.MODEL_NAME}-{hashlib.sha256(key.encode()).hexdigest()[:20]}"
    return cache_dir / "onnx" / f"{stem}-{variant}-q{QUANTIZE_VERSION}.onnx"


def bf16_record(cache_dir: Path, weights: Path) -> Path:
    """The record of the bf16 encoder's check against sentence-transformers, for `weights`."""
    return cache_dir / "torch" / f"{weights_stem(weights)}-bf16-v{BF16_VERSION}.json"


def bf16_trace(cache_dir: Path, weights: Path) -> Path:
    """The TorchScript trace that bf16 ran before its encoder (`BF16_VERSION` 1), for
    `weights`: removed once the encoder is checked."""
    return cache_dir / "torch" / f"{weights_stem(weights)}-bf16-t1.pt"
