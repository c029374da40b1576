"""Records another tool wrote into a collection chromasync uses are never touched.

Ownership is the marker chromasync writes on each record (`chromasync_source`), not a
match on the `source` label: a foreign record whose `source` equals a chromasync label is
still foreign. `verify` reports foreign records and passes; `--repair`, `sources remove`
and heal never delete or adopt them; `--reset` refuses, naming them. Each test here failed
before the marker existed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import EmbeddingError, StoreError
from chromasync.metakeys import OWNER_KEY
from chromasync.plan.upgrade import RECORDS_VERSION
from chromasync.store.chroma import Collection
from chromasync.store.peers import UPGRADED_PREFIX

from ..conftest import set_mtime

FOREIGN = {"source": "notes", "path": "elsewhere.md", "note": "written by another tool"}


def _raw(settings: Settings, name: str | None = None) -> Any:
    """The chromadb collection itself, as another tool sees it."""
    store = api.open_store(settings)
    return store._client.get_or_create_collection(name or settings.collection)


def _add_foreign(settings: Settings, embedder: HashEmbedder, n: int = 2) -> list[str]:
    ids = [f"foreign-{i}" for i in range(n)]
    _raw(settings).add(
        ids=ids,
        embeddings=[embedder.embed_query(f"foreign text {i}") for i in range(n)],
        documents=[f"foreign text {i}" for i in range(n)],
        metadatas=[dict(FOREIGN) for _ in ids],
    )
    return ids


def _still_there(settings: Settings, ids: list[str]) -> bool:
    got = _raw(settings).get(ids=ids, include=["metadatas", "documents"])
    return sorted(got["ids"]) == sorted(ids) and all(OWNER_KEY not in m for m in got["metadatas"])


def test_records_carry_the_ownership_marker(
    notes: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    metas = _raw(settings).get(include=["metadatas"])["metadatas"]
    assert metas and all(m[OWNER_KEY] == "notes" for m in metas)
    # `source` holds the file's path, where LangChain's loaders put it
    assert all(m["source"] == f"{notes}/{m['path']}" for m in metas)


def test_verify_reports_foreign_records_and_passes(
    notes: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    ids = _add_foreign(settings, embedder)
    checks = api.verify(settings)
    assert all(c.ok for c in checks), [c.as_json() for c in checks]
    [foreign] = [c for c in checks if c.foreign]
    assert foreign.foreign == 2 and foreign.foreign_sample == tuple(ids)
    assert foreign.as_json()["foreign_records"] == 2
    [ours] = [c for c in checks if c.source == "notes"]
    assert ours.orphans == () and ours.records > 0


def test_repair_and_remove_never_delete_foreign_records(
    notes: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    ids = _add_foreign(settings, embedder)
    (notes / "ideas.txt").write_text("A changed idea.\n")
    set_mtime(notes / "ideas.txt", 1_700_000_000)
    checks = api.verify(settings, repair=True, embedder=embedder)
    assert all(c.ok for c in checks) and any(c.repaired for c in checks)
    assert _still_there(settings, ids)
    removed = api.remove_source(settings, "notes")
    assert removed.records_deleted > 0
    assert _still_there(settings, ids)
    assert _raw(settings).count() == len(ids)


def test_heal_adopts_no_foreign_record(
    notes: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """A lost state is rebuilt from chromasync's records only: the foreign ones stay out
    of the manifest (and so out of every later deletion)."""
    from chromasync.state.manifest import STATE_FILE

    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    ids = _add_foreign(settings, embedder)
    (settings.data_dir / STATE_FILE).unlink()
    [summary] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert summary.chunks_embedded == 0
    assert _still_there(settings, ids)
    assert all(c.ok for c in api.verify(settings))


def test_reset_refuses_naming_foreign_records(
    notes: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    _add_foreign(settings, embedder, 1)
    with pytest.raises(StoreError, match=r"foreign-0.*--reset would drop them"):
        api.reset_collections(settings, [settings.collection])
    assert _still_there(settings, ["foreign-0"])


def test_an_empty_existing_collection_is_adopted_with_the_model(
    notes: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """Created empty by another tool: the first ingest writes chromasync's model into it,
    so the second ingest and a search are not refused."""
    _raw(settings)  # empty, no metadata
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    meta = _raw(settings).metadata or {}
    assert meta.get("chromasync_embedding_model") == embedder.model_id
    (notes / "ideas.txt").write_text("A changed idea about kites.\n")
    set_mtime(notes / "ideas.txt", 1_700_000_000)
    [second] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert second.files_updated == 1
    assert api.search("kites", settings, k=3, embedder=embedder)


def test_reembed_advice_on_a_foreign_collection_works(
    notes: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    ids = _add_foreign(settings, embedder)
    with pytest.raises(EmbeddingError, match="--reembed") as refused:
        api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert "another tool" in str(refused.value)
    options = api.IngestOptions(reembed=True)
    [summary] = api.ingest([api.source_for(notes)], settings, options, embedder=embedder)
    assert summary.chunks_embedded > 0
    assert _still_there(settings, ids)
    [again] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert again.chunks_embedded == 0
    assert all(c.ok for c in api.verify(settings))


def test_repair_ingests_into_the_collection_the_source_is_in(
    notes: Path, settings: Settings, embedder: HashEmbedder, data_dir: Path
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    moved = resolve_settings(
        {"data_dir": str(data_dir), "provider": "hash", "collection": "elsewhere"},
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    (notes / "ideas.txt").write_text("A changed idea.\n")
    set_mtime(notes / "ideas.txt", 1_700_000_000)
    checks = api.verify(moved, repair=True, embedder=embedder)
    assert [c.collection for c in checks if c.repaired] == [settings.collection]
    assert "elsewhere" not in api.open_store(moved).list_collections()
    docs = _raw(settings).get(where={"path": "ideas.txt"}, include=["documents"])["documents"]
    assert docs == ["A changed idea."]


def test_an_older_index_gets_the_marker_by_a_metadata_rewrite(
    notes: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """An index written before the marker: its records are marked once (no vector is
    written, nothing re-embedded); a foreign record with the same label is not."""
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    raw = _raw(settings)
    ours = raw.get(include=["embeddings"])
    stripped = {OWNER_KEY: None, "ref_doc_id": None, "document_id": None, "source": "notes"}
    raw.update(ids=ours["ids"], metadatas=[stripped] * len(ours["ids"]))
    assert all(OWNER_KEY not in m for m in raw.get(include=["metadatas"])["metadatas"])
    # ... and without the collection's note that its records were marked
    older = {k: v for k, v in raw.metadata.items() if not k.startswith(UPGRADED_PREFIX)}
    raw.modify(metadata={k: v for k, v in older.items() if not k.startswith("hnsw:")})
    ids = _add_foreign(settings, embedder, 1)
    checks = api.verify(settings)
    assert all(c.ok for c in checks) and sum(c.foreign for c in checks) == 1
    after = raw.get(ids=ours["ids"], include=["metadatas", "embeddings"])
    assert all(m[OWNER_KEY] == "notes" for m in after["metadatas"])
    assert all(m["ref_doc_id"] == m["document_id"] == m["path"] for m in after["metadatas"])
    assert all(m["source"] == f"{notes}/{m['path']}" for m in after["metadatas"])
    assert (after["embeddings"] == ours["embeddings"]).all()
    assert _still_there(settings, ids)


def test_legacy_records_are_looked_for_once(
    notes: Path, settings: Settings, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass that marks an older index's records runs once per label: a later writing
    run reads no record for it (it read every record of the source on each run before)."""
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert _raw(settings).metadata.get(UPGRADED_PREFIX + "notes") == RECORDS_VERSION
    reads: list[object] = []
    real = Collection.iter_records

    def counted(self: Collection, where: Any = None, documents: bool = False) -> Any:
        if where == {"source": "notes"}:
            reads.append(where)
        return real(self, where, documents)

    monkeypatch.setattr(Collection, "iter_records", counted)
    (notes / "ideas.txt").write_text("A changed idea, again.")
    set_mtime(notes / "ideas.txt", 2_000_000_000)
    [summary] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert summary.chunks_embedded >= 1
    assert reads == []


def test_verify_command_lists_foreign_records_and_exits_0(
    notes: Path, settings: Settings, embedder: HashEmbedder, cli_env: dict[str, str]
) -> None:
    from ..conftest import invoke_cli

    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    _add_foreign(settings, embedder)
    done = invoke_cli(["verify"], env=cli_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(another tool)" in done.stdout and "foreign-0" in done.stdout
