"""A hit survives its JSON form (REST, the owner's socket) whole: one constructor each way."""

from __future__ import annotations

import json

import pytest

from chromasync.records import Hit

HITS = [
    Hit("id-1", "notes/a.md", "notes", "A > B", 3, 9, 0.5, "text", "c", {"tags": ["x"]}),
    Hit(
        "id-2",
        "r.pdf",
        "docs",
        "",
        1,
        40,
        -1.25,
        "t",
        "c",
        {"doc_format": "pdf", "page": 2},
        ranks={"dense": 1, "keyword": 7},
        collapsed=3,
    ),
]


@pytest.mark.parametrize("hit", HITS, ids=lambda h: h.id)
def test_as_json_and_back(hit: Hit) -> None:
    again = Hit.from_json(json.loads(json.dumps(hit.as_json())))
    assert again == hit
    assert again.citation == hit.citation
