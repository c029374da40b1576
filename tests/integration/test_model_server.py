"""`chromasync model` against a real `chroma run` server: the side collections live on the
server beside the data dir's own (and beside other data dirs' collections), a build runs
while searches answer from the old ones, a killed build resumes without duplicates, `eval`
measures each index on its own collections only, `use` switches, `drop` deletes only the
profile's collections.

The second models are the local OpenAI-compatible embedding server and the `hash` provider
with another dimension, as in test_model_profiles.py.
"""

from __future__ import annotations

import json
import shutil
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from chromasync import api
from chromasync.cli.main import main
from chromasync.config.models import load_models
from chromasync.embed.hashing import HashEmbedder
from chromasync.store.connect import open_store_for
from chromasync.sync import models as side

from ..conftest import run_cli, unique_collection
from ..servers import HeldEmbeddingServer

KEY = "sk-test-server-71c2"


def _env(data: Path, url: str, collection: str, **extra: str) -> dict[str, str]:
    return {
        "CHROMASYNC_DATA_DIR": str(data),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_COLLECTIONS": "per-kind",
        "CHROMASYNC_COLLECTION": collection,
        "CHROMASYNC_CHROMA_URL": url,
        "CHROMASYNC_NO_DAEMON": "1",
        **extra,
    }


def _cli(args: Sequence[str], env: dict[str, str]) -> Any:
    result = CliRunner().invoke(main, list(args), env=env)
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def _home(data: Path, env: dict[str, str]) -> api.Settings:
    return api.configure({}, env, data, active_model=False)


def _on_server(home: api.Settings, prefix: str) -> dict[str, int]:
    """The server's collections whose names start with `prefix`, with their counts."""
    store = open_store_for(home, existing=True, reading=True)
    return {
        name: store.collection(name, create=False).count()
        for name in store.list_collections()
        if name.startswith(prefix)
    }


def test_model_path_on_a_chroma_server(notes: Path, tmp_path: Path, chroma_server: str) -> None:
    collection = unique_collection()
    data = tmp_path / "data"
    env = _env(data, chroma_server, collection, OPENAI_API_KEY=KEY)
    _cli(["ingest", str(notes), "--quiet"], env)
    # another data dir's index on the same server, of another model, with a note that
    # outranks ours on the judged query: never measured, searched or dropped by this one
    rival = tmp_path / "rival" / "notes"
    rival.mkdir(parents=True)
    (rival / "rival.md").write_text("# Grinder calibration\n\n" + "grinder calibration. " * 20)
    neighbour = _env(tmp_path / "other", chroma_server, f"{collection}x")
    _cli(["ingest", str(rival), "--quiet", "--embed-option", "dimension=16"], neighbour)
    home = _home(data, env)
    own = _on_server(home, collection + "-")
    assert list(own) == [f"{collection}-notes"] and own[f"{collection}-notes"] > 0

    reference = HashEmbedder(dimension=48)
    with HeldEmbeddingServer(reference.embed_documents, "hash-48", KEY) as server:
        _cli(
            [
                *("model", "add", "emb", "--provider", "openai", "--model", "hash-48"),
                *("--embedding-url", server.url),
            ],
            env,
        )
        built: list[Any] = []
        builder = threading.Thread(
            target=lambda: built.append(side.build_profile(home, "emb")), daemon=True
        )
        builder.start()
        assert server.waiting.wait(60), "the side build never asked for an embedding"
        assert load_models(data).profiles["emb"].state == "building"
        # the build is held at its first embedding: searches answer from the old collection
        during = json.loads(_cli(["search", "grinder calibration", "--json"], env).output)
        assert during["collections"] == [f"{collection}-notes"] and during["hits"]
        server.release()
        builder.join(60)
        assert built and sum(s.chunks_embedded for s in built[0]) > 0
        assert load_models(data).profiles["emb"].state == "built"
        assert _on_server(home, f"{collection}.emb") == {
            f"{collection}.emb-notes": own[f"{collection}-notes"]
        }

        rows = {r["name"]: r for r in json.loads(_cli(["model", "list", "--json"], env).output)}
        assert rows["default"]["collections"] == [f"{collection}-notes"]
        assert rows["emb"]["collections"] == [f"{collection}.emb-notes"]
        assert rows["emb"]["records"] == rows["default"]["records"] > 0
        assert rows["emb"]["model_id"] == "openai:hash-48"
        assert rows["default"]["model_id"] == "hash-64"

        queries = tmp_path / "q.jsonl"
        queries.write_text(
            json.dumps({"query": "grinder calibration", "relevant": ["guides/install.md"]}) + "\n"
        )
        modes = ("--mode", "keyword", "--mode", "hybrid")
        compared = json.loads(
            _cli(["model", "eval", "emb", str(queries), *modes, "--json"], env).output
        )
        assert set(compared["reports"]) == {"default", "emb"}
        for label in ("default", "emb"):  # each index on its own collections only
            report = compared["reports"][label]
            assert report["queries"] == 1
            assert report["modes"]["keyword"]["mrr"] == report["modes"]["hybrid"]["mrr"] == 1.0

        _cli(["model", "use", "emb"], env)
        before = len(server.requests)
        fresh = run_cli(["search", "espresso grinder", "--json"], env=env)
        assert fresh.returncode == 0, fresh.stderr
        found = json.loads(fresh.stdout)
        assert found["collections"] == [f"{collection}.emb-notes"] and found["hits"]
        assert ["espresso grinder"] in [r["input"] for r in server.requests[before:]]
        _cli(["model", "use", "default"], env)

    _cli(["model", "drop", "emb"], env)
    assert _on_server(home, f"{collection}.emb") == {}
    assert _on_server(home, collection + "-") == own
    assert list(_on_server(home, f"{collection}x-")) == [f"{collection}x-notes"]
    back = json.loads(_cli(["search", "grinder", "--json"], env).output)
    assert back["collections"] == [f"{collection}-notes"] and back["hits"]


def test_killed_side_build_on_a_server_resumes(
    notes: Path, tmp_path: Path, chroma_server: str
) -> None:
    collection = unique_collection()
    data = tmp_path / "data"
    env = _env(data, chroma_server, collection)
    more = tmp_path / "more"
    shutil.copytree(notes, more)
    _cli(["ingest", str(notes), "--quiet"], env)
    _cli(["ingest", str(more), "--quiet"], env)
    _cli(["model", "add", "h32", "--provider", "hash", "--embed-option", "dimension=32"], env)
    # killed after the second source's vectors reach the server, before its manifest rows
    killed = run_cli(
        ["model", "build", "h32"], env={**env, "CHROMASYNC_CRASH_AT": "after-upsert:2"}
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert load_models(data).profiles["h32"].state == "building"
    assert "incomplete" in _cli(["model", "list"], env).output
    # meanwhile the data dir's own index answers as before
    during = json.loads(_cli(["search", "grinder", "--json"], env).output)
    assert during["collections"] == [f"{collection}-notes"] and during["hits"]

    home = _home(data, env)
    summaries = {s.source: s for s in side.build_profile(home, "h32")}
    assert summaries["notes"].files_unchanged == summaries["notes"].files_seen > 0
    assert load_models(data).profiles["h32"].state == "built"
    own = _on_server(home, collection + "-")
    assert _on_server(home, f"{collection}.h32") == {
        f"{collection}.h32-notes": own[f"{collection}-notes"]
    }  # the records written before the kill are not doubled
    rows = {r.name: r for r in side.profile_rows(home)}
    assert rows["h32"].model_id == "hash-32" and rows["h32"].records == rows["default"].records
    _cli(["model", "use", "h32"], env)
    verified = run_cli(["verify"], env=env)  # the side index against its files
    assert verified.returncode == 0, (verified.stdout, verified.stderr)
    hits = api.search("grinder calibration", api.configure({}, env, tmp_path), k=3)
    assert hits and {h.collection for h in hits} == {f"{collection}.h32-notes"}
    _cli(["model", "use", "default"], env)
    _cli(["model", "drop", "h32"], env)
    assert _on_server(home, f"{collection}.h32") == {}


def test_a_side_build_never_writes_into_a_collection_it_does_not_own(
    notes: Path, tmp_path: Path, chroma_server: str
) -> None:
    """A source indexed under another collection name (`ingest --collection`) would be
    rebuilt into that very collection on the server, beside the old model's vectors: the
    build refuses first, naming the source, and writes nothing."""
    collection = unique_collection()
    data = tmp_path / "data"
    env = _env(data, chroma_server, collection)
    _cli(["ingest", str(notes), "--quiet", "--collection", f"{collection}y"], env)
    _cli(["model", "add", "h32", "--provider", "hash", "--embed-option", "dimension=32"], env)
    refused = CliRunner().invoke(main, ["model", "build", "h32"], env=env)
    assert refused.exit_code == 2, (refused.output, refused.exception)
    assert "'notes'" in refused.output and f"{collection}y-notes" in refused.output
    home = _home(data, env)
    assert list(_on_server(home, collection)) == [f"{collection}y-notes"]
    assert load_models(data).profiles["h32"].state == "new"
    # the fix the message names: the build run as that index
    _cli(["model", "build", "h32", "--collection", f"{collection}y"], env)
    assert set(_on_server(home, collection)) == {f"{collection}y-notes", f"{collection}y.h32-notes"}
