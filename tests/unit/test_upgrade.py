"""plan/upgrade: the keys an older record lacks, and the context it was embedded with,
found from its own metadata and checked against its chunk_hash."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from chromasync.metakeys import (
    BOOKKEEPING_KEYS,
    CHUNK_HASH_KEY,
    CONTEXT_KEY,
    OWNER_KEY,
    normalise_for_hash,
)
from chromasync.plan.upgrade import embedded_context, may_have_context, missing_keys

DOC = "Turn the ring clockwise.  \nThen back off two steps.\n"
LONG = "Store." + "very_long_member_name_" * 20


def _hash(context: str, document: str = DOC) -> str:
    text = normalise_for_hash(context + document)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


CASES: dict[str, tuple[dict[str, Any], str, str]] = {
    # name: (metadata but chunk_hash, the next chunk's symbol, the context embedded)
    "none": ({"heading": "Guide > Install"}, "", ""),
    "heading path": ({"heading": "Guide > Install > Linux"}, "", "Guide > Install > Linux\n\n"),
    "trimmed path": ({"heading": "Guide > Install > Linux"}, "", "Guide > Install\n\n"),
    "symbol": ({"symbol": "Store.open", "language": "python"}, "", "Store.open\n\n"),
    "a lead's member": ({"symbol": "Store"}, "Store.open", "Store.open\n\n"),
    "a cut name": ({"symbol": LONG}, "", f"{LONG[:90].rstrip()} …\n\n"),
    "description": (
        {"heading": "Guide", "description": "How  to\nbrew.", "chunk_index": 0},
        "",
        "Guide\nHow to brew.\n\n",
    ),
    "description alone": (
        {"heading": "Guide", "description": "How to brew.", "chunk_index": 0},
        "",
        "How to brew.\n\n",
    ),
    "a cut description": (
        {"heading": "Guide", "description": "word " * 80, "chunk_index": 0},
        "",
        f"Guide\n{('word ' * 30).rstrip()} …\n\n",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_embedded_context_is_found_and_checked(name: str) -> None:
    meta, after, context = CASES[name]
    metadata = {**meta, "chunk_hash": _hash(context)}
    assert embedded_context(DOC, metadata, after) == context


def test_no_candidate_reproducing_the_hash_is_none() -> None:
    metadata = {"heading": "Guide", "chunk_hash": _hash("Elsewhere\n\n")}
    assert embedded_context(DOC, metadata) is None
    assert embedded_context(DOC, {"heading": "Guide"}) is None  # no hash: nothing is guessed
    # a description only counts on a page's first chunk
    later = {
        "description": "How to brew.",
        "chunk_index": 1,
        "chunk_hash": _hash("How to brew.\n\n"),
    }
    assert embedded_context(DOC, later) is None


def test_missing_keys_from_the_record_itself() -> None:
    older = {"source": "notes", "path": "guides/a.md", "chunk_hash": "x"}
    assert missing_keys("notes", older, "/srv/notes") == {
        OWNER_KEY: "notes",
        "source": "/srv/notes/guides/a.md",
        "document_id": "guides/a.md",
        "ref_doc_id": "guides/a.md",
        CHUNK_HASH_KEY: "x",
        "chunk_hash": None,  # removed by Chroma's update
    }
    marked = {OWNER_KEY: "notes", "document_id": "id-7", "path": "a.md"}  # no ref_doc_id yet
    assert missing_keys("notes", marked) == {"document_id": "id-7", "ref_doc_id": "id-7"}
    current = {OWNER_KEY: "notes", "document_id": "a.md", "ref_doc_id": "a.md"}
    assert missing_keys("notes", current) == {}


def test_bookkeeping_keys_are_renamed_with_their_values() -> None:
    """Records version 3: each bookkeeping key an older release wrote moves to its
    `chromasync_` name, value unchanged, the older name removed; other keys stay."""
    values = {"file_hash": "f" * 64, "chunk_hash": "c" * 64, "record_hash": "r" * 64}
    values |= {"chunking_version": 5, "embedding_model": "all-MiniLM-L6-v2", "version": 4}
    v2 = {OWNER_KEY: "notes", "document_id": "a.md", "ref_doc_id": "a.md", "path": "a.md"}
    added = missing_keys("notes", {**v2, **values, "heading": "Guide", "start_line": 3})
    assert added == {
        **{BOOKKEEPING_KEYS[old]: value for old, value in values.items()},
        **dict.fromkeys(values),
    }
    assert set(BOOKKEEPING_KEYS) == set(values)
    assert (
        missing_keys("notes", {**v2, **{BOOKKEEPING_KEYS[k]: v for k, v in values.items()}}) == {}
    )
    # the context is found from a record of either records version
    found = {"heading": "Guide", CHUNK_HASH_KEY: _hash("Guide\n\n")}
    assert embedded_context(DOC, found) == "Guide\n\n"


def test_only_records_that_could_have_a_context_are_read() -> None:
    assert may_have_context({"heading": "Guide"})
    assert may_have_context({"symbol": "f"})
    assert may_have_context({}, next_symbol="Store.open")
    assert may_have_context({"description": "How to brew.", "chunk_index": 0})  # no heading
    assert not may_have_context({"description": "How to brew.", "chunk_index": 2})
    assert not may_have_context({"heading": "", "symbol": ""})
    assert not may_have_context({"heading": "Guide", CONTEXT_KEY: "Guide\n\n"})
