"""The plain-torch BERT encoder (bf16 variant) against transformers' BertModel, on a small
random model: the same arithmetic in fp32, and bf16 close to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from chromasync.embed import bert  # noqa: E402

MEAN = {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A random 2-layer BERT saved as a model folder, and the transformers model itself."""
    torch.manual_seed(7)
    config = transformers.BertConfig(
        vocab_size=97,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=40,
        initializer_range=0.5,  # large weights: the matrix products weigh in the result
    )
    model = transformers.BertModel(config, add_pooling_layer=False).eval()
    folder = tmp_path_factory.mktemp("tiny-bert")
    model.save_pretrained(folder, safe_serialization=True)
    return folder, model


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())


def _reference(model: object, ids: object, mask: object) -> object:
    with torch.no_grad():
        hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state  # type: ignore[operator]
    keep = mask.unsqueeze(-1).float()
    pooled = (hidden * keep).sum(1) / keep.sum(1)
    return torch.nn.functional.normalize(pooled, dim=1)


def _batch() -> tuple[object, object]:
    """Three texts of 9, 5 and 2 tokens, padded to 9."""
    generator = torch.Generator().manual_seed(3)
    ids = torch.randint(1, 97, (3, 9), generator=generator)
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[1, 5:] = 0
    mask[2, 2:] = 0
    return ids * mask, mask


def test_fp32_is_transformers_arithmetic(tiny: tuple[Path, object]) -> None:
    folder, model = tiny
    ids, mask = _batch()
    encoder = bert.load(_config(folder), folder / "model.safetensors", torch.float32)
    got = encoder(ids, mask, torch.zeros_like(ids))
    assert torch.allclose(got, _reference(model, ids, mask), atol=1e-5)
    # padding changes nothing: the 2-token text alone gives its padded row's vector
    alone = encoder(ids[2:, :2], mask[2:, :2], torch.zeros_like(ids[2:, :2]))
    assert torch.allclose(alone[0], got[2], atol=1e-5)


def test_bf16_is_close_to_fp32_and_not_equal(tiny: tuple[Path, object]) -> None:
    folder, model = tiny
    ids, mask = _batch()
    encoder = bert.load(_config(folder), folder / "model.safetensors")
    got = encoder(ids, mask, torch.zeros_like(ids))
    expected = _reference(model, ids, mask)
    assert got.dtype == torch.float32
    assert bool(((got * expected).sum(1) > 0.999).all())
    assert float((got - expected).abs().max()) > 1e-4  # fp32 agrees to 1e-6: bf16 ran


BERT = {"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1}


@pytest.mark.parametrize(
    ("config", "pooling", "says"),
    [
        (BERT, MEAN, None),
        ({**BERT, "model_type": "roberta"}, MEAN, "model_type"),
        ({**BERT, "hidden_act": "relu"}, MEAN, "hidden_act"),
        ({**BERT, "position_embedding_type": "relative_key"}, MEAN, "position"),
        ({**BERT, "hidden_size": 10, "num_attention_heads": 4}, MEAN, "multiple"),
        ({**BERT, "num_attention_heads": 0}, MEAN, "multiple"),
        ({**BERT, "hidden_size": "wide"}, MEAN, "whole numbers"),
        ({**BERT, "num_hidden_layers": None}, MEAN, "whole numbers"),
        ({"model_type": "bert"}, MEAN, "has no hidden_size"),
        (BERT, {"pooling_mode_cls_token": True}, "pooling"),
        (BERT, {}, "pooling"),
    ],
)
def test_unsupported_models_are_named(config: dict, pooling: dict, says: str | None) -> None:
    found = bert.unsupported(config, pooling)
    assert found is None if says is None else says in (found or "")
