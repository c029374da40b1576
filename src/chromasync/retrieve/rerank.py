"""Optional reranking with a local cross-encoder (a folder on disk; nothing is downloaded).

Design notes: docs/internals.md, `retrieve/rerank.py`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigError, EmbeddingError
from ..plugins import Registry
from ..records import Hit

log = logging.getLogger(__name__)

DEFAULT_DEPTH = 50


@runtime_checkable
class Reranker(Protocol):
    name: str

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...


class CrossEncoderReranker:
    """A transformers sequence-classification model in a local folder, run on the CPU."""

    name = "cross-encoder"

    def __init__(self, folder: Path, batch_size: int = 32, max_length: int = 512) -> None:
        if not (folder / "config.json").is_file():
            raise ConfigError(
                f"reranker model {str(folder)!r} is not a model folder (config.json missing); "
                "give the folder of a local cross-encoder"
            )
        self.folder = folder
        self.batch_size = batch_size
        self.max_length = max_length
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(str(self.folder), local_files_only=True)
            model = AutoModelForSequenceClassification.from_pretrained(
                str(self.folder), local_files_only=True
            )
            model.eval()
            self._model = model
            self._torch = torch
        except Exception as exc:
            raise EmbeddingError(f"cannot load the reranker at {self.folder}: {exc}") from exc

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if self._model is None:
            with _LOADING:  # two threads importing transformers at once: "cannot import name"
                if self._model is None:
                    self._load()
        out: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            part = list(texts[start : start + self.batch_size])
            batch = self._tokenizer(
                [query] * len(part),
                part,
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
            with self._torch.no_grad():
                logits = self._model(**batch).logits
            column = logits[:, 0] if logits.shape[1] == 1 else logits[:, -1]
            out += [float(x) for x in column]
        return out


RerankerFactory = Callable[[Mapping[str, Any]], Reranker]
#: One model load (its imports) at a time in the process: a daemon's warm-up and its first
#: request, two searches of a fresh session.
_LOADING = threading.Lock()


def _cross_encoder(options: Mapping[str, Any]) -> Reranker:
    folder = options.get("model")
    if not folder:
        raise ConfigError("the cross-encoder reranker needs a model folder")
    return CrossEncoderReranker(Path(str(folder)).expanduser())


#: Rerankers by name (`plugins.Registry`; entry point group `chromasync.rerankers`).
RERANKERS: Registry[RerankerFactory] = Registry(
    "reranker", "chromasync.rerankers", {"cross-encoder": _cross_encoder}
)


def make_reranker(model: str | None, name: str = "cross-encoder") -> Reranker | None:
    """The configured reranker, or None when no model is configured (reranking is off)."""
    if not model:
        return None
    return RERANKERS.get(name)({"model": model})


def rerank(
    query: str, hits: Sequence[Hit], reranker: Reranker, depth: int = DEFAULT_DEPTH
) -> list[Hit]:
    """The top `depth` hits reordered by the reranker's score (which becomes their score)."""
    head, tail = list(hits[:depth]), list(hits[depth:])
    if not head:
        return list(hits)
    scores = reranker.score(query, [h.text for h in head])
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
    reranked = [
        replace(head[i], score=scores[i], ranks={**head[i].ranks, "rerank": rank})
        for rank, i in enumerate(order, 1)
    ]
    return reranked + tail


__all__ = ["RERANKERS", "CrossEncoderReranker", "Reranker", "make_reranker", "rerank"]
