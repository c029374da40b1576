"""Triage suggestions (`suggest`) against a real Chroma with the hash embedder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.embed.querycache import QueryCache
from chromasync.errors import ConfigError

from ..conftest import invoke_cli

TOPICS = {
    "coffee": [
        "espresso grinder burrs calibration crema portafilter tamp",
        "pour over kettle bloom coffee beans roast grinder",
        "espresso shot crema portafilter beans roast",
    ],
    "cycling": [
        "bicycle chain derailleur tyres saddle gears ride",
        "studded tyres winter ride bicycle coastal loop gears",
        "saddle height derailleur chain ride climb",
    ],
    "garden": [
        "tomatoes compost seedlings watering soil mulch",
        "pruning roses compost mulch soil beds",
        "seedlings greenhouse tomatoes watering beds",
    ],
}

CAPTURE = "# Dialing in\n\nThe espresso grinder burrs and the portafilter tamp; crema and roast.\n"


def _write(root: Path) -> Path:
    for folder, texts in TOPICS.items():
        for index, text in enumerate(texts):
            path = root / folder / f"note{index}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# {folder} {index}\n\n{text}\n")
    return root


@pytest.fixture
def indexed(tmp_path: Path, embedder: HashEmbedder) -> tuple[Path, Settings]:
    root = _write(tmp_path / "notes")
    settings = api.resolve_settings({"data_dir": str(tmp_path / "data"), "provider": "hash"}, {})
    api.ingest([api.source_for(root)], settings, embedder=embedder)
    return root, settings


def test_suggests_the_folder_of_an_unindexed_capture(
    indexed: tuple[Path, Settings], tmp_path: Path, embedder: HashEmbedder
) -> None:
    root, settings = indexed
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    capture = inbox / "capture.md"
    capture.write_text(CAPTURE)
    result = api.suggest(capture, settings, group_by="path:1", embedder=embedder)
    groups = [g.group for g in result.groups]
    assert groups[0] == "coffee"
    assert sorted(groups) == ["coffee", "cycling", "garden"]
    top = result.groups[0]
    assert top.score > result.groups[1].score
    assert top.margin == pytest.approx(top.score - result.groups[1].score)
    assert 0 < len(top.best) <= 2
    assert all(h.path.startswith("coffee/") for h in top.best)
    assert sum(g.score for g in result.groups) == pytest.approx(1.0)
    assert result.similar.excluded is None
    assert not [d for d in result.similar.documents if d.duplicate]
    # nothing was written: the capture is not indexed
    status = api.similar(capture, settings, k=20, embedder=embedder)
    assert "capture.md" not in {Path(d.path).name for d in status.documents}

    # moving it into the suggested folder embeds its chunks once; moving it there after
    # it was indexed elsewhere embeds nothing
    shutil.move(str(capture), root / "cycling" / "capture.md")
    first = api.ingest([api.source_for(root)], settings, embedder=embedder)
    assert first[0].chunks_embedded > 0
    shutil.move(str(root / "cycling" / "capture.md"), root / top.group / "capture.md")
    moved = api.ingest([api.source_for(root)], settings, embedder=embedder)
    assert moved[0].chunks_embedded == 0


def test_an_indexed_file_does_not_vote_for_itself(
    indexed: tuple[Path, Settings], embedder: HashEmbedder
) -> None:
    root, settings = indexed
    target = root / "garden" / "note0.md"
    result = api.suggest(target, settings, group_by="path:1", embedder=embedder)
    assert result.similar.excluded == "notes:garden/note0.md"
    for group in result.groups:
        assert all(h.path != "garden/note0.md" for h in group.best)
    assert result.groups[0].group == "garden"


def test_duplicates_beside_the_groups_and_bands(
    indexed: tuple[Path, Settings], tmp_path: Path, embedder: HashEmbedder
) -> None:
    root, settings = indexed
    copy = tmp_path / "copy.md"
    copy.write_text((root / "cycling" / "note1.md").read_text())
    result = api.suggest(copy, settings, group_by="source", embedder=embedder)
    assert [g.group for g in result.groups] == ["notes"]
    assert (result.groups[0].score, result.groups[0].band) == (pytest.approx(1.0), "high")
    duplicates = [d for d in result.similar.documents if d.duplicate]
    assert [d.path for d in duplicates][:1] == ["cycling/note1.md"]
    data = result.as_json()
    assert data["duplicates"] and data["groups"][0]["confidence"] == "high"
    with pytest.raises(ConfigError):
        api.suggest(copy, settings, group_by="path:0", embedder=embedder)


def test_cli_suggest_json(indexed: tuple[Path, Settings], tmp_path: Path) -> None:
    _, settings = indexed
    capture = tmp_path / "capture.md"
    capture.write_text(CAPTURE)
    env = {"CHROMASYNC_DATA_DIR": str(settings.data_dir), "CHROMASYNC_EMBEDDING_PROVIDER": "hash"}
    done = invoke_cli(["suggest", str(capture), "--group-by", "path:1", "--json"], env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["groups"][0]["group"] == "coffee"
    assert len(data["groups"]) == 3
    assert {"score", "confidence", "margin", "best_chunks"} <= set(data["groups"][0])


def test_rest_suggest(indexed: tuple[Path, Settings], embedder: HashEmbedder) -> None:
    from fastapi.testclient import TestClient

    from chromasync.owner.service import Service
    from chromasync.rest import create_app

    _, settings = indexed
    with (
        Service(settings, "serve", embedder=embedder) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as client,
    ):
        params = {"source": "notes", "path": "garden/note1.md", "group_by": "path:1"}
        body = client.get("/suggest", params=params).json()
        assert body["groups"][0]["group"] == "garden"
        assert body["excluded"] == "notes:garden/note1.md"
        for bad in ("/etc/passwd", "../notes/garden/note1.md", "garden/../../x"):
            refused = client.get("/suggest", params={**params, "path": bad})
            assert refused.status_code == 400, bad
        missing = client.get("/suggest", params={**params, "path": "garden/none.md"})
        assert missing.status_code == 404
        assert client.get("/suggest", params={**params, "group_by": "path:0"}).status_code == 400
        assert client.get("/suggest", params={"source": "notes", "path": "x.md"}).status_code in (
            400,
            422,
        )


def test_mcp_suggest(indexed: tuple[Path, Settings], tmp_path: Path) -> None:
    import os
    import sys

    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from ..conftest import REPO

    _, settings = indexed
    env = {
        **os.environ,
        "CHROMASYNC_DATA_DIR": str(settings.data_dir),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "PYTHONPATH": str(REPO / "src"),
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "chromasync", "mcp"], env=env
    )
    out: dict[str, object] = {}

    async def session() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            result = await client.call_tool(
                "suggest", {"path": "cycling/note2.md", "source": "notes", "group_by": "path:1"}
            )
            assert not result.is_error, result.content
            out["data"] = result.structured_content or json.loads(result.content[0].text)
            bad = await client.call_tool(
                "suggest", {"path": "/etc/passwd", "source": "notes", "group_by": "path:1"}
            )
            out["bad"] = bad.is_error

    anyio.run(session)
    data = out["data"]
    assert isinstance(data, dict) and data["groups"][0]["group"] == "cycling"
    assert out["bad"] is True


def test_an_empty_query_cache_is_the_embedder_used(
    indexed: tuple[Path, Settings], tmp_path: Path
) -> None:
    """The owner hands its query cache to `similar` and `suggest`: empty (no search yet), it
    was falsy and `embedder or embedder_for(settings)` loaded a second embedder instead."""
    _, settings = indexed
    capture = tmp_path / "capture.md"
    capture.write_text(CAPTURE)
    inner = HashEmbedder()
    api.suggest(capture, settings, group_by="path:1", embedder=QueryCache(inner))
    api.similar(capture, settings, embedder=QueryCache(inner))
    assert inner.texts_embedded > 0
