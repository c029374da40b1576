"""Words of a question or a sentence, as the extractive answer compares them.

`terms_of`: the lower-case words (letters and digits), stop words dropped, each through a
light English stemmer (`stem`), in order. Linear in the text.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+")
_VOWEL = re.compile(r"[aeiouy]")
_SIBILANT_ES = ("sses", "ches", "shes", "xes", "zes")
#: Words that carry no meaning of their own in a question or a sentence.
_STOP_TEXT = (
    "a an and are as at be but by for if in into is it no not of on or such that the "
    "their then there these they this to was will with what which who whom how when where "
    "why does do did can could should would may might has have had been being from than "
    "so its our we you your i me my he she his her them those about over also more most "
    "other some any each per via"
)
STOP_WORDS = frozenset(_STOP_TEXT.split())


def stem(word: str) -> str:
    """A light English stemmer: the plural, then an -ing or -ed ending (enough for term
    overlap). A word and its plural share a stem ("rune"/"runes", "string"/"strings"):
    -es is an ending only after a sibilant ("matches", "boxes"), and -ing/-ed only where a
    vowel is left before it ("string" keeps its "ing", "meetings" is "meet")."""
    if word.endswith("ies") and len(word) >= 6:
        word = word[:-3] + "y"
    elif word.endswith(_SIBILANT_ES) and len(word) >= 5:
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        word = word[:-1]
    for suffix in ("ing", "ed"):
        head = word[: -len(suffix)]
        if word.endswith(suffix) and len(head) >= 3 and _VOWEL.search(head):
            return head
    return word


def terms_of(text: str) -> tuple[str, ...]:
    """The text's lower-case, stemmed words, stop words dropped, in order."""
    return tuple(stem(w) for w in (m.lower() for m in _WORD.findall(text)) if w not in STOP_WORDS)


__all__ = ["STOP_WORDS", "stem", "terms_of"]
