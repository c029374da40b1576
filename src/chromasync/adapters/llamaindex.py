"""chromasync's search as a LlamaIndex retriever (extra `llamaindex`: llama-index-core).

Design notes: docs/internals.md, `adapters/llamaindex.py`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import (
        NodeRelationship,
        NodeWithScore,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )
except ImportError as exc:  # pragma: no cover - the message is the test
    from ..errors import ConfigError

    raise ConfigError(
        "the LlamaIndex adapter needs llama-index-core: pip install 'chromasync[llamaindex]'"
    ) from exc

from . import hit_metadata, search_hits

#: The metadata a language model (and an embedder) sees with a node's text.
SHOWN = ("path", "heading", "start_line", "end_line")


class ChromasyncRetriever(BaseRetriever):
    """Hybrid (or dense, or keyword) search over a chromasync index, as LlamaIndex nodes."""

    def __init__(
        self,
        settings: Any,
        k: int = 5,
        mode: str = "hybrid",
        where: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.settings = settings
        self.k = k
        self.mode = mode
        self.where = where
        self._embedder: Any = None
        self._loading = threading.Lock()

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        with self._loading:  # concurrent first calls load the model once
            if self._embedder is None and self.mode != "keyword":
                from .. import api

                self._embedder = api.make_embedder_for(self.settings)  # loaded once, kept
        hits = search_hits(
            query_bundle.query_str, self.settings, self.k, self.mode, self.where, self._embedder
        )
        out: list[NodeWithScore] = []
        for hit in hits:
            metadata = hit_metadata(hit)
            hidden = [key for key in metadata if key not in SHOWN]
            node = TextNode(
                id_=hit.id,
                text=hit.text,
                metadata=metadata,
                excluded_llm_metadata_keys=hidden,
                excluded_embed_metadata_keys=hidden,
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.path)},
            )
            out.append(NodeWithScore(node=node, score=hit.score))
        return out


__all__ = ["SHOWN", "ChromasyncRetriever"]
