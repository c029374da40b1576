"""What the chunkers need of a tokenizer: count word pieces, and cut a text at a budget.

The concrete meter (the embedding model's own tokenizer) lives in `embed.tokens`; the chunkers
take any object with these methods, so that they never import a later stage.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Sequence
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


class PieceStarts:
    """Where the word pieces of a text start: a bit a character and a count a 64, a quarter
    of a byte a character whatever the text (an array of starts took 4 bytes a word piece:
    32 MB for 8 M `>` characters).

    Offsets are added in order (`add`) and then `close`d; a piece that starts where the
    one before it does (a Hangul syllable is several jamo pieces) is kept in `_extra`.
    """

    __slots__ = ("_cum", "_extra", "_last", "_words")

    def __init__(self, size: int) -> None:
        self._words = array("Q", [0]) * (size // 64 + 1)  # bit i of word j: a piece at 64j+i
        self._extra = array("i" if size < 2**31 else "q")  # a repeated start, once a repeat
        self._cum = array("q")  # pieces (less repeats) before each word, and in all
        self._last = -1

    def add(self, offsets: Iterable[int]) -> None:
        words, extra, last = self._words, self._extra, self._last
        for offset in offsets:
            if offset == last:
                extra.append(offset)
            else:
                words[offset >> 6] |= 1 << (offset & 63)
                last = offset
        self._last = last

    def close(self) -> PieceStarts:
        total, cum = 0, self._cum
        for word in self._words:
            cum.append(total)
            total += word.bit_count()
        cum.append(total)
        return self

    def __len__(self) -> int:
        return self._cum[-1] + len(self._extra)

    def rank(self, offset: int) -> int:
        """How many pieces start before `offset`."""
        offset = min(max(offset, 0), len(self._words) * 64 - 1)
        j = offset >> 6
        below = (self._words[j] & ((1 << (offset & 63)) - 1)).bit_count()
        repeats = bisect.bisect_left(self._extra, offset) if self._extra else 0
        return self._cum[j] + below + repeats

    def select(self, index: int) -> int:
        """Where piece `index` (0-based, `< len(self)`) starts."""
        if self._extra:  # the first offset with more than `index` pieces up to it
            low, high = 0, len(self._words) * 64
            while low < high:
                middle = (low + high) // 2
                if self.rank(middle + 1) > index:
                    high = middle
                else:
                    low = middle + 1
            return low
        j = bisect.bisect_right(self._cum, index) - 1
        word = self._words[j]
        for _ in range(index - self._cum[j]):
            word &= word - 1  # drop the lowest piece
        return j * 64 + (word & -word).bit_length() - 1
