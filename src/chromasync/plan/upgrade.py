"""What a record written by an older chromasync lacks, found from the index alone.

Design notes: docs/internals.md, `plan/upgrade.py`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..metakeys import (
    BOOKKEEPING_KEYS,
    CHUNK_HASH_KEY,
    CONTEXT_KEY,
    OWNER_KEY,
    bookkeeping,
    normalise_for_hash,
)
from .triage import source_path

#: The version of the keys every record carries: a collection records it per source label
#: once its records are upgraded, so later runs read nothing for the upgrade. 2: the marker,
#: `source` as a path, the document keys, the context; 3: the bookkeeping keys renamed
#: (`metakeys.BOOKKEEPING_KEYS`: `chunk_hash` -> `chromasync_chunk_hash`, values unchanged).
RECORDS_VERSION = 3
#: How many leading characters of a name a cut label may keep (`Layout.label` keeps at most
#: the char limit's quarter, about 256 for the default model): longer names are tried whole.
MAX_CUT = 512
#: What `Layout.label` appends to a name it cut to its share of the budget.
ELLIPSIS = " …"


def missing_keys(label: str, metadata: Mapping[str, Any], root: str = "") -> dict[str, Any]:
    """The keys (but the context) `label`'s record lacks, made from its own metadata:
    the ownership marker, `source` as the file's path in `root` (an older record's `source`
    held the label), the document keys LlamaIndex reads, and each bookkeeping key under
    today's name with its older name removed (None: what Chroma's update deletes)."""
    added: dict[str, Any] = {}
    for old, new in BOOKKEEPING_KEYS.items():
        if old in metadata:
            added[new] = metadata[old] if new not in metadata else metadata[new]
            added[old] = None
    path = str(metadata.get("path", ""))
    if OWNER_KEY not in metadata:
        added[OWNER_KEY] = label
        if root:
            added["source"] = source_path(root, path)
    if "ref_doc_id" not in metadata:
        document = str(metadata.get("document_id") or path)
        added["document_id"] = document
        added["ref_doc_id"] = document
    return added


def may_have_context(metadata: Mapping[str, Any], next_symbol: str = "") -> bool:
    """True when the record lacks `chromasync_context` and a chunker could have embedded
    one (it has a heading or a symbol, the next chunk has a symbol, or it is a page's
    first chunk with a description): only these need their document read."""
    if CONTEXT_KEY in metadata:
        return False
    first_of_page = metadata.get("chunk_index") == 0 and bool(metadata.get("description"))
    return bool(metadata.get("heading") or metadata.get("symbol") or next_symbol) or first_of_page


def embedded_context(
    document: str, metadata: Mapping[str, Any], next_symbol: str = ""
) -> str | None:
    """The context prefix `document` was embedded with ("" for none), or None when no
    candidate reproduces the record's `chunk_hash`. `next_symbol`: the symbol of the next
    chunk of the same file (a member's leading comment is embedded under its name)."""
    chunk_hash = bookkeeping(metadata, CHUNK_HASH_KEY)
    if not isinstance(chunk_hash, str) or not chunk_hash:
        return None
    heading = str(metadata.get("heading") or "")
    symbol = str(metadata.get("symbol") or "")
    names = [n for n in dict.fromkeys((_clean(symbol), _clean(next_symbol))) if n]
    description = metadata.get("description")  # a page's first chunk embeds it too
    summary = ""
    if metadata.get("chunk_index") == 0 and isinstance(description, str):
        summary = " ".join(_clean(description).split())
    for context in _candidates(heading, names, summary):
        if _sha(normalise_for_hash(context + document)) == chunk_hash:
            return context
    return None


def _candidates(heading: str, names: list[str], summary: str = "") -> Iterator[str]:
    yield ""
    parts = heading.split(" > ") if heading else []
    paths = [" > ".join(parts[:end]) for end in range(len(parts), 0, -1)]  # then trimmed
    for path in paths:
        yield f"{path}\n\n"
    for name in names:
        yield f"{name}\n\n"
    if summary:  # the path (or none), then the page's description on a line of its own
        for path in [*paths, ""]:
            yield f"{path}\n{summary}\n\n" if path else f"{summary}\n\n"
    for name in names:  # a long name cut to its share of the budget
        yield from (f"{cut}{ELLIPSIS}\n\n" for cut in _cuts(name))
    if summary:  # a description cut to what the path left of that share (a trimmed path
        for cut in _cuts(summary):  # labels the cut one again, which may add a second mark)
            for mark in (ELLIPSIS, ELLIPSIS * 2):
                for path in [*paths, ""]:
                    yield f"{path}\n{cut}{mark}\n\n" if path else f"{cut}{mark}\n\n"


def _cuts(name: str) -> Iterable[str]:
    seen: set[str] = set()
    for end in range(min(len(name), MAX_CUT), 0, -1):
        cut = name[:end].rstrip()
        if cut and cut not in seen:
            seen.add(cut)
            yield cut


def _clean(name: str) -> str:
    """A name as `Layout.label` writes it: lone surrogates replaced, stripped."""
    return name.encode("utf-16", "surrogatepass").decode("utf-16", "replace").strip()


def _sha(text: str) -> str:  # as `plan.triage` hashes an embedding input
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


__all__ = [
    "RECORDS_VERSION",
    "embedded_context",
    "may_have_context",
    "missing_keys",
]
