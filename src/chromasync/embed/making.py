"""Making the local model's variants from its weights, once: the ONNX export and the module
it traces (transformer, mean pooling, L2 normalisation), int8 quantization of the export,
and the check that what was made agrees with sentence-transformers.
"""

from __future__ import annotations

import logging
import os
import tempfile
import warnings
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import EmbeddingError
from . import runtime, shared
from .quantize import quantize_int8

if TYPE_CHECKING:
    from .local import LocalEmbedder

log = logging.getLogger(__name__)

_SAMPLE = "chromasync checks that the exported model matches the original."


def load_sentence_transformer(folder: Path, device: str = "cpu") -> Any:
    """sentence-transformers' model of the weights in `folder`, offline and quiet."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbeddingError(
            "the torch backend (and the bf16 variant) needs sentence-transformers; "
            f"pip install '{shared.EXTRA}'"
        ) from exc
    os.environ.setdefault("TQDM_DISABLE", "1")
    with suppress(ImportError):  # transformers draws its own "Loading weights" bar on stderr
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SentenceTransformer(str(folder), device=device, local_files_only=True)


def export_checked(model: LocalEmbedder, path: Path, place: Any = None) -> None:
    """Export `model`'s weights to ONNX at `path`, verified against sentence-transformers,
    atomically. With `place` (the default model: `shared.place`) in Chroma's layout, its
    six files staged and placed into `path`'s folder; else with pooling and normalisation
    inside the graph."""
    # one line on stderr, as for the int8 quantization: the export takes ~10 s, once
    log.warning(
        "chromasync: exporting the local model to ONNX (once, ~10 s, no download): %s", path
    )
    if runtime.missing("torch"):
        raise EmbeddingError(f"exporting to ONNX needs torch: pip install '{shared.EXTRA}'")
    reference = model._load_torch()
    transformer = reference[0].auto_model.eval()
    path.parent.mkdir(parents=True, exist_ok=True)
    where = path.parent.parent if place else path.parent
    with tempfile.TemporaryDirectory(dir=where, prefix=".export-") as tmp:
        target = Path(tmp) / path.name
        if place:
            weights = model._weights().parent
            shared.make_from_weights(
                weights, Path(tmp), lambda t: export_onnx(transformer, t, False)
            )
        else:
            export_onnx(transformer, target)
        model._load_onnx(target)
        check_agreement(reference, model._embed_onnx, 0.9999, f"ONNX export of {model.model_id}")
        model._session = None
        if place:
            place(Path(tmp), path.parent)
        else:
            os.replace(target, path)
    model._st_model = None


def mean_pool(hidden: Any, mask: Any) -> Any:
    """Mean of the last hidden state over the attention mask, L2-normalised: what chromadb's
    default function does with its model's output (and sentence-transformers with this
    model's)."""
    import numpy as np

    weights = mask[..., None].astype(hidden.dtype)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.where(norms == 0, 1e-12, norms)


def quantize(source: Path, target: Path, variant: str) -> None:
    """Make the `variant` model from the fp32 export `source`, atomically, at `target`."""
    if variant != "int8":
        raise EmbeddingError(f"local provider: no way to make variant {variant!r}")
    # one line on stderr (the last-resort handler prints warnings when nothing is set up)
    log.warning("chromasync: quantizing the local model to int8 (once, no download): %s", target)
    quantize_int8(source, target)


def check_agreement(model: Any, embed: Any, floor: float, what: str) -> float:
    """The lowest cosine between the sentence-transformers `model`'s vectors of two sample
    texts and `embed`'s (a made model; the texts differ in length, so one batch pads);
    EmbeddingError below `floor`."""
    import numpy as np

    samples = [_SAMPLE, " ".join([_SAMPLE] * 4)]
    expected = np.asarray(model.encode(samples, normalize_embeddings=True))
    cosine = float((expected * np.asarray(embed(samples))).sum(axis=1).min())
    if cosine < floor:
        raise EmbeddingError(f"{what} differs (cosine {cosine})")
    return cosine


def pooled_module(transformer: Any, pooled: bool = True) -> Any:
    """The transformer with mean pooling and L2 normalisation, as one torch module (with
    `pooled` False, its last hidden state: Chroma's layout, the caller pools)."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.inner(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
            ).last_hidden_state
            if not pooled:
                return hidden
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            summed = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(summed.float(), p=2, dim=1)

    return Pooled(transformer)


def export_onnx(transformer: Any, target: Path, pooled: bool = True) -> None:
    """Export `transformer` to ONNX at `target`: inputs `input_ids`, `attention_mask`,
    `token_type_ids` with dynamic batch and sequence axes; the output is `embedding` (mean
    pooling and L2 normalisation inside the graph, `pooled_module`) or, with `pooled`
    False, `last_hidden_state` (the layout of Chroma's default model, `embed/shared.py`)."""
    import torch

    dummy = torch.ones(2, 8, dtype=torch.long)
    output = "embedding" if pooled else "last_hidden_state"
    axes = {"b": 0, "s": 1}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            pooled_module(transformer, pooled),
            (dummy, dummy, torch.zeros_like(dummy)),
            str(target),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=[output],
            dynamic_axes={
                "input_ids": {axes["b"]: "batch", axes["s"]: "seq"},
                "attention_mask": {axes["b"]: "batch", axes["s"]: "seq"},
                "token_type_ids": {axes["b"]: "batch", axes["s"]: "seq"},
                output: {0: "batch"} if pooled else {0: "batch", 1: "seq"},
            },
            opset_version=17,
            dynamo=False,
        )
