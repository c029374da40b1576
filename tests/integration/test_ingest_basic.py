"""The foundation: ingest a folder, re-run, edit, delete, dry-run, against a real Chroma."""

from __future__ import annotations

import json
from pathlib import Path

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.metakeys import (
    BOOKKEEPING_KEYS,
    CHUNK_HASH_KEY,
    CHUNKING_VERSION_KEY,
    EMBEDDING_MODEL_KEY,
    FILE_HASH_KEY,
    FILE_VERSION_KEY,
    RECORD_HASH_KEY,
)
from chromasync.sync.ingest import IngestOptions

from ..conftest import invoke_cli, set_mtime


def _collection_ids(settings: Settings) -> dict[str, dict[str, object]]:
    collection = api.open_store(settings).collection(settings.collection, create=False)
    return {r.id: dict(r.metadata) for r in collection.iter_records()}


def test_first_run_then_unchanged(notes: Path, settings: Settings, embedder: HashEmbedder) -> None:
    [first] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert first.files_new == 5 and first.files_unchanged == 0
    assert first.chunks_embedded == first.chunks_total > 0
    stored = _collection_ids(settings)
    assert len(stored) == first.chunks_total
    meta = next(iter(stored.values()))
    for key in (
        "source",
        "path",
        FILE_HASH_KEY,
        CHUNK_HASH_KEY,
        "chunk_index",
        "chunk_count",
        "heading",
        "start_line",
        "end_line",
        CHUNKING_VERSION_KEY,
        EMBEDDING_MODEL_KEY,
        RECORD_HASH_KEY,
        FILE_VERSION_KEY,
    ):
        assert key in meta, key
    assert not set(BOOKKEEPING_KEYS) & set(meta)  # the older names: none

    calls = embedder.calls
    [second] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert second.files_unchanged == 5
    assert second.chunks_embedded == 0 and second.files_new == 0
    assert embedder.calls == calls
    assert _collection_ids(settings) == stored


def test_edit_delete_add_converge(notes: Path, settings: Settings, embedder: HashEmbedder) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    (notes / "ideas.txt").write_text("Only one idea now: water the plants.\n")
    set_mtime(notes / "ideas.txt", 1_700_000_000)
    (notes / "journal" / "2026-05-01.md").unlink()
    (notes / "new.md").write_text("# New\n\nA brand new note about kites.\n")
    set_mtime(notes / "new.md", 1_700_000_000)
    [summary] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert (summary.files_new, summary.files_updated, summary.files_deleted) == (1, 1, 1)
    stored = _collection_ids(settings)
    paths = {m["path"] for m in stored.values()}
    assert "journal/2026-05-01.md" not in paths
    assert {"new.md", "ideas.txt"} <= paths
    assert len(stored) == summary.chunks_total


def test_removed_front_matter_field_leaves_the_stored_records(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """Chroma's upsert merges a record's metadata with what it held: a field removed from
    the front matter must be unset, not kept, or filters still find the note by it."""
    root = tmp_path / "vault"
    root.mkdir()
    note = root / "n.md"
    note.write_text("---\ntags: [stale]\nauthor: Ann\n---\n# Note\n\nBody text.\n")
    set_mtime(note, 1_600_000_000)
    api.ingest([api.source_for(root)], settings, embedder=embedder)
    note.write_text("---\nauthor: Ann\n---\n# Note\n\nBody text.\n")
    set_mtime(note, 1_600_000_100)
    [edited] = api.ingest([api.source_for(root)], settings, embedder=embedder)
    assert edited.chunks_embedded == 0 and edited.files_updated == 1
    stored = list(_collection_ids(settings).values())
    assert stored and all("tags" not in m and m["author"] == "Ann" for m in stored)
    collection = api.open_store(settings).collection(settings.collection, create=False)
    assert list(collection.iter_records(where={"tags": {"$contains": "stale"}})) == []


def test_touch_embeds_nothing(notes: Path, settings: Settings, embedder: HashEmbedder) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    for path in notes.rglob("*.md"):
        set_mtime(path, 1_700_000_000)
    calls = embedder.calls
    [summary] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert summary.chunks_embedded == 0
    assert embedder.calls == calls
    assert summary.files_unchanged == 5


def test_dry_run_writes_nothing(notes: Path, settings: Settings, embedder: HashEmbedder) -> None:
    [plan] = api.ingest(
        [api.source_for(notes)], settings, IngestOptions(dry_run=True), embedder=embedder
    )
    assert plan.dry_run and plan.files_new == 5 and plan.chunks_embedded > 0
    assert embedder.calls == 0
    assert not (settings.data_dir / "chroma").exists()


def test_cli_json_summary(notes: Path, cli_env: dict[str, str]) -> None:
    result = invoke_cli(["ingest", str(notes), "--json"], env=cli_env)
    assert result.returncode == 0, result.stderr
    [data] = json.loads(result.stdout)  # one shape for one source or many: a list
    assert set(data) == {
        "collection",
        "source",
        "files_seen",
        "files_new",
        "files_updated",
        "files_unchanged",
        "files_deleted",
        "files_skipped",
        "chunks_total",
        "chunks_embedded",
        "chunks_reused",
        "chunks_deleted",
        "duration_ms",
        "embed_ms",
        "dry_run",
        "metadata_keys_dropped",
        "documents_read",
        "pages_read",
        "warnings",
    }
    assert data["files_new"] == 5
    search = invoke_cli(["search", "grinder calibration", "--json", "--k", "3"], env=cli_env)
    assert search.returncode == 0, search.stderr
    hits = json.loads(search.stdout)["hits"]
    assert hits and {
        "id",
        "path",
        "source",
        "heading",
        "start_line",
        "end_line",
        "score",
        "text",
    } <= set(hits[0])
