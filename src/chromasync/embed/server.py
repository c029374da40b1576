"""The `server` provider: send documents only; the collection's own embedding function embeds.

Design notes: docs/internals.md, `embed/server.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import EmbeddingError
from . import Embedder


class ServerEmbedder(Embedder):
    name = "server"
    model_id = "server"
    embeds_in_store = True  # the store writes documents without vectors (see `ingest`)

    def __init__(self, max_tokens: int = 256, batch_size: int = 64) -> None:
        self.max_tokens = max_tokens
        self.batch_size = batch_size

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ServerEmbedder:
        return cls(int(options.get("max_tokens", 256)), int(options.get("batch_size", 64)))

    @property
    def dimension(self) -> int:
        return 0  # the collection's function decides

    @property
    def tokenizer_path(self) -> str | None:
        return None

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        raise EmbeddingError(
            "the server provider does not embed locally: the collection's embedding "
            "function does (write documents without vectors)"
        )

    def embed_query(self, text: str) -> list[float]:
        raise EmbeddingError(
            "the server provider does not embed locally: query the collection with text"
        )
