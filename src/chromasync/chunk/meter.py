"""What the chunkers need of a tokenizer: count word pieces, and cut a text at a budget.

The concrete meter (the embedding model's own tokenizer) lives in `embed.tokens`; the chunkers
take any object with these methods, so that they never import a later stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

#: Characters at which two excerpts may be joined without changing how either tokenizes.
JOINS = " \t\n"


class TokenMeter(Protocol):
    """Measures text in the embedding model's word pieces, special tokens excluded."""

    def count(self, text: str) -> int: ...

    def cut(self, text: str, max_tokens: int) -> int:
        """The end offset of the longest prefix of `text` within `max_tokens` (> 0)."""
        ...


def count_all(meter: TokenMeter, texts: Sequence[str]) -> list[int]:
    """`meter.count` of each text, in one batched call when the meter offers one."""
    many = getattr(meter, "count_many", None)
    if many is not None:
        return list(many(texts))
    return [meter.count(t) for t in texts]
