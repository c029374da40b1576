"""A tiny deterministic embedder: hashed word features, for tests and benchmarks.

It is no model of meaning (words that share no token are orthogonal), but it is fast,
offline and stable across processes, so tests can run the whole pipeline without a model.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from . import Embedder

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder(Embedder):
    name = "hash"
    max_tokens = 254
    batch_size = 256
    model_id: str = "hash-64"  # set per dimension
    dimension: int = 64
    tokenizer_path: str | None = None

    def __init__(self, dimension: int = 64, tokenizer_path: str | None = None) -> None:
        self.dimension = dimension
        self.tokenizer_path = tokenizer_path
        self.model_id = f"hash-{dimension}"
        self.calls = 0
        self.texts_embedded = 0

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> HashEmbedder:
        return cls(int(options.get("dimension", 64)), options.get("tokenizer_path"))

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
            slot = int.from_bytes(digest[:4], "little") % self.dimension
            vector[slot] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts_embedded += len(texts)
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)
