"""The NATS surface's requests against a real index (embedded Chroma, the hash embedder):
each request field filters as its configured metadata key means, a client_id selects its
collections, and the reply carries each hit's metadata under the design's names. The
handlers are called directly here (no NATS server: `test_nats.py` runs them over one)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.nats.handlers import Handlers
from chromasync.owner.service import Service

NOTES = {
    "acme-soil.md": (
        "funder: acme\nrecord: u-acme-1\nrecord_id: acme-2024-0012\npublished_at: 2024-03-01\n"
        "pack_id: 12\n"
        "title: Acme soil grants\ntags: [climate, soil]",
        "Soil carbon grants from the Acme fund for farmers.",
    ),
    "acme-water.md": (
        "funder: acme\nrecord: u-acme-2\npublished_at: 2025-02-01\npack_id: 13\n"
        "title: Acme water\ntags: [water]",
        "Water grants from the Acme fund for soil and rivers.",
    ),
    "other-soil.md": (
        "funder: other\nrecord: u-other-1\npublished_at: 2024-06-01\npack_id: '12'\n"
        "title: Other soil\ntags: [soil]",
        "Soil carbon grants from another fund.",
    ),
}


@pytest.fixture
def handlers(tmp_path: Path, settings: Settings) -> Any:
    corpus = tmp_path / "corpus"
    grants = corpus / "grants"
    grants.mkdir(parents=True)
    for name, (front, body) in NOTES.items():
        (grants / name).write_text(f"---\n{front}\n---\n# {name}\n\n{body}\n")
    api.ingest([api.source_for(grants)], settings)
    configured = dataclasses.replace(
        settings,
        nats_fields={"funder_slug": "funder", "record_uuid": "record"},
        nats_clients={"lens": [settings.collection], "ghost": ["no-such-collection"]},
        nats_corpus_root=str(corpus),
    )
    with Service(configured, "nats") as service:
        roots = {"grants": str(grants.resolve())}
        yield Handlers(service, configured, lambda: roots)


def ask(handlers: Any, **fields: Any) -> dict[str, Any]:
    body = {"client_id": "lens", "query": "soil carbon grants", **fields}
    return handlers.retrieve(json.dumps(body).encode())  # type: ignore[no-any-return]


def paths(reply: dict[str, Any]) -> set[str]:
    assert "hits" in reply, reply
    return {h["corpus_path"] for h in reply["hits"]}


def test_each_field_filters_on_its_configured_key(handlers: Any) -> None:
    everything = paths(ask(handlers))
    assert everything == {f"grants/{n}" for n in NOTES}
    assert paths(ask(handlers, funder_slug="acme")) == {
        "grants/acme-soil.md",
        "grants/acme-water.md",
    }
    assert paths(ask(handlers, record_uuid="u-other-1")) == {"grants/other-soil.md"}
    # 12 as front matter typed it (a number) and '12' (a string) both match
    assert paths(ask(handlers, pack_id="12")) == {"grants/acme-soil.md", "grants/other-soil.md"}
    assert paths(ask(handlers, published_after="2024-05-01")) == {
        "grants/acme-water.md",
        "grants/other-soil.md",
    }
    assert paths(ask(handlers, published_before="2024-05-01")) == {"grants/acme-soil.md"}
    assert paths(ask(handlers, tags=["water"])) == {"grants/acme-water.md"}
    assert paths(ask(handlers, funder_slug="acme", tags=["soil"])) == {"grants/acme-soil.md"}
    assert ask(handlers, funder_slug="nobody") == {"hits": []}
    assert len(ask(handlers, top_k=1)["hits"]) == 1


def test_the_reply_carries_the_hits_metadata_under_the_designs_names(handlers: Any) -> None:
    [hit] = ask(handlers, record_uuid="u-acme-1")["hits"]
    assert hit["record_uuid"] == "u-acme-1"
    assert hit["funder_slug"] == "acme"
    assert hit["title"] == "Acme soil grants"
    assert hit["published_at"] == "2024-03-01"
    assert hit["corpus_path"] == "grants/acme-soil.md"
    assert hit["chunk_index"] == 0 and "Acme fund" in hit["chunk_text"]
    assert 0 < hit["similarity"] <= 1 and hit["record_id"] == "acme-2024-0012"
    [bare] = ask(handlers, record_uuid="u-acme-1", include_chunks=False)["hits"]
    assert "chunk_text" not in bare and bare["record_id"] == hit["record_id"]
    [other] = ask(handlers, record_uuid="u-other-1")["hits"]
    assert other["record_id"] is None  # the file has no record_id: null, as the others


def test_a_bad_date_is_named_as_the_request_spells_it(handlers: Any) -> None:
    for name in ("published_after", "published_before"):
        reply = ask(handlers, **{name: "last tuesday"})
        assert reply["error"]["kind"] == "invalid_request", reply
        message = reply["error"]["message"]
        assert message.startswith(f"{name} takes a date") and "--" not in message, message


def test_a_client_id_selects_its_collections_or_is_refused(handlers: Any) -> None:
    assert ask(handlers)["hits"]
    unknown = ask(handlers, client_id="chat")
    assert unknown["error"]["kind"] == "unknown_client"
    assert "nats.clients" in unknown["error"]["message"]
    missing = ask(handlers, client_id="ghost")
    assert missing["error"]["kind"] == "not_found"
    assert "no-such-collection" in missing["error"]["message"]


def test_asking_returns_a_cited_answer(handlers: Any) -> None:
    body = {"client_id": "lens", "query": "Who funds soil carbon grants?", "funder_slug": "acme"}
    reply = handlers.ask(json.dumps({**body, "fallback": "extractive"}).encode())
    assert reply["answer"] and reply["citations"]
    assert {c["path"] for c in reply["citations"]} <= {"acme-soil.md", "acme-water.md"}
    refused = handlers.ask(json.dumps({**body, "include_chunks": False}).encode())
    assert refused["error"]["kind"] == "unknown_field"
