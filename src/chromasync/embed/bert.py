"""A BERT sentence encoder in plain torch, for the local provider's `bf16` variant.

Design notes: docs/internals.md, `embed/bert.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported when an encoder is made, not to check a folder
    import torch

_SHAPE = ("hidden_size", "num_attention_heads", "num_hidden_layers")
_LAYER = (
    "attention.output.dense",
    "attention.output.LayerNorm",
    "intermediate.dense",
    "output.dense",
    "output.LayerNorm",
)


def unsupported(config: Mapping[str, Any], pooling: Mapping[str, Any]) -> str | None:
    """Why this encoder cannot run a model with this `config.json` and pooling config
    (`1_Pooling/config.json`); None: it can. Pure."""
    if config.get("model_type") != "bert":
        return f"model_type {config.get('model_type')!r} is not 'bert'"
    if config.get("hidden_act", "gelu") != "gelu":
        return f"hidden_act {config.get('hidden_act')!r} is not 'gelu'"
    if config.get("position_embedding_type", "absolute") != "absolute":
        return f"position_embedding_type {config.get('position_embedding_type')!r}"
    try:
        size, heads, layers = (int(config[k]) for k in _SHAPE)
    except KeyError as exc:
        return f"config.json has no {exc.args[0]}"
    except (TypeError, ValueError):
        return f"{', '.join(_SHAPE)}: not all whole numbers"
    if min(size, heads, layers) < 1 or size % heads:
        return "hidden_size is not a positive multiple of num_attention_heads"
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    if modes != {"pooling_mode_mean_tokens"}:
        return f"pooling {sorted(modes)} is not the mean of tokens"
    return None


class BertEncoder:
    """input ids, attention mask, token types (int64, batch x length) -> unit vectors.

    `dtype` bfloat16: linear weights in bf16, run under CPU autocast; float32: exactly the
    original's arithmetic (the tests compare it with transformers)."""

    def __init__(
        self,
        config: Mapping[str, Any],
        weights: Mapping[str, torch.Tensor],
        dtype: torch.dtype | None = None,
    ) -> None:
        import torch

        dtype = dtype or torch.bfloat16
        self.dtype = dtype
        w = {k.removeprefix("bert."): v for k, v in weights.items()}
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.words = w["embeddings.word_embeddings.weight"]
        self.positions = w["embeddings.position_embeddings.weight"]
        self.types = w["embeddings.token_type_embeddings.weight"]
        self.norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers: list[tuple[torch.Tensor, ...]] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            qkv = [f"{p}attention.self.{n}" for n in ("query", "key", "value")]
            tensors = [
                torch.cat([w[f"{n}.weight"] for n in qkv]).to(dtype),
                torch.cat([w[f"{n}.bias"] for n in qkv]),
            ]
            for name in _LAYER:
                weight = w[f"{p}{name}.weight"]
                tensors += [weight if "LayerNorm" in name else weight.to(dtype)]
                tensors += [w[f"{p}{name}.bias"]]
            self.layers.append(tuple(tensors))

    def __call__(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        import torch

        with (
            torch.inference_mode(),
            torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.dtype == torch.bfloat16),
        ):
            return self._forward(ids, mask, types)

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        import torch
        import torch.nn.functional as F

        batch, length = ids.shape
        size, heads = self.hidden, self.heads
        x = self.words[ids] + self.positions[:length] + self.types[types]
        x = F.layer_norm(x, (size,), *self.norm, eps=self.eps)
        # additive mask: padding gets the lowest finite value, so softmax gives it ~0
        padding = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for (
            qkv_w,
            qkv_b,
            out_w,
            out_b,
            n1_w,
            n1_b,
            in_w,
            in_b,
            down_w,
            down_b,
            n2_w,
            n2_b,
        ) in self.layers:
            qkv = F.linear(x, qkv_w, qkv_b).view(batch, length, 3, heads, size // heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            attended = F.scaled_dot_product_attention(q, k, v, attn_mask=padding.to(q.dtype))
            attended = attended.transpose(1, 2).reshape(batch, length, size)
            x = F.layer_norm(F.linear(attended, out_w, out_b) + x, (size,), n1_w, n1_b, self.eps)
            inner = F.gelu(F.linear(x, in_w, in_b))
            x = F.layer_norm(F.linear(inner, down_w, down_b) + x, (size,), n2_w, n2_b, self.eps)
        keep = mask.unsqueeze(-1).float()
        pooled = (x.float() * keep).sum(1) / keep.sum(1).clamp(min=1e-9)
        return F.normalize(pooled, p=2, dim=1)


def load(config: Mapping[str, Any], weights: Path, dtype: torch.dtype | None = None) -> BertEncoder:
    """The encoder of a model whose `config.json` (`config`) `unsupported` accepts;
    `weights` is its model.safetensors or pytorch_model.bin."""
    import torch

    if weights.suffix == ".safetensors":
        from safetensors.torch import load_file

        tensors = load_file(str(weights))
    else:
        tensors = torch.load(str(weights), map_location="cpu", weights_only=True)
    return BertEncoder(config, tensors, dtype)


def numpy_run(encoder: Any) -> Any:
    """`encoder` as the local provider's `_embed_batched` run: numpy arrays in and out."""

    def run(ids: Any, mask: Any, types: Any) -> Any:
        import torch

        return encoder(*(torch.from_numpy(a) for a in (ids, mask, types))).numpy()

    return run
