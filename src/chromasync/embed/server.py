"""The `server` provider: send documents only; the collection's own embedding function embeds.

A Chroma collection can carry an embedding function in its configuration (Chroma Cloud's
hosted models, or any function chromadb knows by name, e.g. `openai`,
`sentence_transformer`, or one registered with `chromadb.utils.embedding_functions.
register_embedding_function`). With this provider chromasync writes documents without
vectors and queries with text, and chromadb embeds both with that function: for hosted
functions the embedding runs on the server side, for the others inside chromadb's client.

The collection must exist and carry an explicit function: chromasync never creates it, and
refuses one with no function or with Chroma's default (which downloads a model at run time).
The collection records `server` as its provider; a collection holding vectors of another
provider is refused. The embedding cache is not used (the vectors never pass through us).
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
