"""`chromasync verify [--repair]` finds and mends every kind of drift."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.metakeys import FILE_HASH_KEY
from chromasync.records import ChunkRecord
from chromasync.state.manifest import STATE_FILE

from ..conftest import invoke_cli, set_mtime, snapshot


def test_clean_index_verifies(notes: Path, settings: Settings, embedder: HashEmbedder) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    [check] = api.verify(settings)
    assert check.ok and check.files == 5 and check.records > 0


def test_drift_found_and_repaired(notes: Path, settings: Settings, embedder: HashEmbedder) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    clean = snapshot(settings)
    collection = api.open_store(settings).collection(settings.collection, create=False)
    victim, *_ = sorted(clean)
    collection.delete([victim])  # missing
    record = ChunkRecord(
        "orphan-1",
        "x",
        "y",
        "stray text",
        # chromasync's (its ownership marker): an orphan, where another tool's would be kept
        {
            "source": "notes",
            "chromasync_source": "notes",
            "path": "ghost.md",
            "chunk_index": 0,
            FILE_HASH_KEY: "z",
        },
    )
    collection.upsert([record], [embedder.embed_query("stray text")])  # orphan
    db = sqlite3.connect(settings.data_dir / STATE_FILE)
    with db:
        db.execute("DELETE FROM chunks WHERE rowid IN (SELECT rowid FROM chunks LIMIT 1)")
    db.close()
    (notes / "ideas.txt").write_text("A changed idea.\n")  # stale
    set_mtime(notes / "ideas.txt", 1_700_000_000)

    [check] = api.verify(settings)
    assert not check.ok
    assert check.missing == (victim,)
    assert check.orphans == ("orphan-1",)
    assert len(check.keyword_missing) == 1
    assert check.stale_files == ("ideas.txt",)

    calls = embedder.texts_embedded
    [repaired] = api.verify(settings, repair=True, embedder=embedder)
    assert repaired.ok and repaired.repaired
    assert embedder.texts_embedded - calls <= 1  # the changed file only
    assert "orphan-1" not in snapshot(settings)


def test_cli_verify_exit_codes(notes: Path, cli_env: dict[str, str], data_dir: Path) -> None:
    assert invoke_cli(["ingest", str(notes), "--quiet"], env=cli_env).returncode == 0
    ok = invoke_cli(["verify", "--json"], env=cli_env)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)[0]["ok"] is True
    (notes / "new.md").write_text("# New\n\nUnindexed so far.\n")
    differs = invoke_cli(["verify"], env=cli_env)
    assert differs.returncode == 1
    assert "unindexed_files: 1" in differs.stdout
    fixed = invoke_cli(["verify", "--repair", "--json"], env=cli_env)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert json.loads(fixed.stdout)[0]["repaired"] is True
