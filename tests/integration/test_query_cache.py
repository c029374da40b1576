"""A long-running service embeds a repeated query once (`embed.querycache`), through every
surface that goes through its `Service`: REST here, the owner's socket and MCP alike."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.owner.service import Service
from chromasync.rest import create_app


class Counting(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return super().embed_query(text)


def test_a_service_embeds_a_repeated_query_once(notes: Path, settings: Settings) -> None:
    inner = Counting()
    api.ingest([api.source_for(notes)], settings, embedder=inner)
    with (
        Service(settings, "serve", embedder=inner) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as client,
    ):
        first = client.get("/search", params={"q": "espresso grinder", "k": 3}).json()
        again = client.get("/search", params={"q": "espresso grinder", "k": 3, "per_doc": 1})
        assert again.status_code == 200 and first["hits"]
        hits = service.search(api.SearchArgs("espresso grinder", k=3)).hits
        assert [h.id for h in hits] == [h["id"] for h in first["hits"]]
        assert inner.queries == ["espresso grinder"]
        client.get("/search", params={"q": "sourdough", "mode": "dense"})
        client.get("/search", params={"q": "sourdough", "mode": "keyword"})  # no embedding
        assert inner.queries == ["espresso grinder", "sourdough"]
