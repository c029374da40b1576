"""chromasync's search as a LangChain retriever (extra `langchain`: langchain-core).

Design notes: docs/internals.md, `adapters/langchain.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:  # pragma: no cover - the message is the test
    from ..errors import ConfigError

    raise ConfigError(
        "the LangChain adapter needs langchain-core: pip install 'chromasync[langchain]'"
    ) from exc
from pydantic import ConfigDict, PrivateAttr

from . import hit_metadata, search_hits


class ChromasyncRetriever(BaseRetriever):
    """Hybrid (or dense, or keyword) search over a chromasync index, as LangChain documents."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: Any
    k: int = 5
    mode: str = "hybrid"
    where: Mapping[str, Any] | None = None
    _embedder: Any = PrivateAttr(default=None)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        mode: str | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> list[Document]:
        mode = mode or self.mode
        if self._embedder is None and mode != "keyword":
            from .. import api

            self._embedder = api.make_embedder_for(self.settings)  # loaded once, kept
        hits = search_hits(
            query, self.settings, k or self.k, mode, where or self.where, self._embedder
        )
        return [Document(page_content=h.text, metadata=hit_metadata(h), id=h.id) for h in hits]


__all__ = ["ChromasyncRetriever"]
