"""Local state that heals, a lock that refuses, chunk-level deltas, the model rule."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import EmbeddingError, LockError, SourceError
from chromasync.metakeys import CHUNKING_VERSION_KEY, FILE_VERSION_KEY
from chromasync.state.lock import StoreLock
from chromasync.state.manifest import STATE_FILE
from chromasync.sync.ingest import IngestOptions

from ..conftest import run_cli, set_mtime, snapshot

SECTIONS = 60


def _long_doc(edited: int | None = None) -> str:
    parts = ["# Handbook\n"]
    for n in range(SECTIONS):
        body = f"Section {n} explains topic {n} with its own words and figures {n * 7}."
        if n == edited:
            body += " This sentence was added later."
        parts.append(f"## Topic {n}\n\n{body}\n")
    return "\n".join(parts)


def _run(
    root: Path, settings: Settings, embedder: HashEmbedder, label: str = "notes", **kw: object
):
    [summary] = api.ingest(
        [api.source_for(root, label)],
        settings,
        IngestOptions(**kw),
        embedder=embedder,  # type: ignore[arg-type]
    )
    return summary


def test_lost_state_rebuilt_without_embedding(
    notes: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    _run(notes, settings, embedder)
    before = snapshot(settings, vectors=True)
    for name in (STATE_FILE, STATE_FILE + "-wal", STATE_FILE + "-shm", "embeddings.sqlite3"):
        (settings.data_dir / name).unlink(missing_ok=True)
    calls = embedder.texts_embedded
    summary = _run(notes, settings, embedder)
    assert summary.chunks_embedded == 0 and embedder.texts_embedded == calls
    assert summary.files_unchanged == 5
    assert snapshot(settings, vectors=True) == before


def test_lost_state_after_a_chunker_change_chunks_again(
    notes: Path, settings: Settings, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The records say which chunker made them: a manifest rebuilt from an older one's
    records chunks every file again (embedding only text not seen before)."""
    from chromasync.plan import triage as plan
    from chromasync.sync import ingest

    current = plan.CHUNKING_VERSION
    with monkeypatch.context() as older:
        older.setattr(plan, "CHUNKING_VERSION", current - 1)
        older.setattr(ingest, "CHUNKING_VERSION", current - 1)
        _run(notes, settings, embedder)
    before = snapshot(settings)
    assert {dict(meta)[CHUNKING_VERSION_KEY] for meta, _ in before.values()} == {str(current - 1)}
    for name in (STATE_FILE, STATE_FILE + "-wal", STATE_FILE + "-shm"):
        (settings.data_dir / name).unlink(missing_ok=True)
    summary = _run(notes, settings, embedder)
    assert summary.chunks_embedded == 0  # the same chunk text: vectors from the cache
    after = snapshot(settings)
    assert {dict(meta)[CHUNKING_VERSION_KEY] for meta, _ in after.values()} == {str(current)}
    assert set(after) == set(before)
    assert _run(notes, settings, embedder).files_unchanged == 5


def test_corrupt_state_moved_aside_and_healed(
    notes: Path, settings: Settings, embedder: HashEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    _run(notes, settings, embedder)
    before = snapshot(settings)
    for name in (STATE_FILE + "-wal", STATE_FILE + "-shm"):
        (settings.data_dir / name).unlink(missing_ok=True)
    (settings.data_dir / STATE_FILE).write_bytes(b"this is not a database" * 100)
    summary = _run(notes, settings, embedder)
    assert summary.chunks_embedded == 0
    assert "unusable" in caplog.text
    assert list(settings.data_dir.glob(STATE_FILE + ".corrupt-*"))
    assert snapshot(settings) == before


def test_one_section_edit_embeds_one_chunk(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    root = tmp_path / "book"
    root.mkdir()
    (root / "handbook.md").write_text(_long_doc())
    set_mtime(root / "handbook.md", 1_600_000_000)
    first = _run(root, settings, embedder)
    # small sections merge up to half the budget: 60 short sections still make many chunks
    assert first.chunks_total >= 6
    (root / "handbook.md").write_text(_long_doc(edited=31))
    set_mtime(root / "handbook.md", 1_600_000_100)
    second = _run(root, settings, embedder)
    assert 1 <= second.chunks_embedded <= 2
    assert second.chunks_reused == second.chunks_total - second.chunks_embedded
    stored = snapshot(settings)
    assert len(stored) == second.chunks_total
    collection = api.open_store(settings).collection(settings.collection, create=False)
    assert {r.metadata[FILE_VERSION_KEY] for r in collection.iter_records()} == {2}


def test_rename_and_move_between_sources_embed_nothing(
    notes: Path, tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    _run(notes, settings, embedder)
    calls = embedder.texts_embedded
    (notes / "guides").rename(notes / "howto")
    renamed = _run(notes, settings, embedder)
    assert renamed.chunks_embedded == 0 and embedder.texts_embedded == calls
    assert renamed.files_new == 2 and renamed.files_deleted == 2
    paths = {dict(m)["path"] for m, _ in snapshot(settings).values()}  # type: ignore[arg-type]
    assert not any(p.startswith("guides/") for p in paths)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    shutil.move(str(notes / "ideas.txt"), inbox / "ideas.txt")
    _run(notes, settings, embedder)
    moved = _run(inbox, settings, embedder, label="inbox")
    assert moved.files_new == 1 and moved.chunks_embedded == 0
    assert embedder.texts_embedded == calls


def test_front_matter_edit_rewrites_metadata_only(
    notes: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    _run(notes, settings, embedder)
    note = notes / "guides" / "sourdough.md"
    note.write_text(note.read_text().replace("tags: [baking]", "tags: [baking, bread]"))
    set_mtime(note, 1_700_000_000)
    summary = _run(notes, settings, embedder)
    assert summary.files_updated == 1 and summary.chunks_embedded == 0
    tags = [
        dict(m).get("tags")
        for m, _ in snapshot(settings).values()
        if dict(m)["path"] == "guides/sourdough.md"  # type: ignore[arg-type]
    ]
    assert tags and all(t == str(["baking", "bread"]) for t in tags)


def test_model_change_refused_unless_reembed(notes: Path, settings: Settings) -> None:
    _run(notes, settings, HashEmbedder(64))
    with pytest.raises(EmbeddingError, match="--reembed"):
        _run(notes, settings, HashEmbedder(32))
    other = HashEmbedder(32)
    summary = _run(notes, settings, other, reembed=True)
    assert summary.chunks_embedded == summary.chunks_total
    collection = api.open_store(settings).collection(settings.collection, create=False)
    vectors = collection.embeddings([r.id for r in collection.iter_records()])
    assert {len(v) for v in vectors.values()} == {32}
    assert _run(notes, settings, other).chunks_embedded == 0


def test_second_ingest_refused_while_one_runs(
    notes: Path, data_dir: Path, cli_env: dict[str, str]
) -> None:
    with StoreLock(data_dir):
        refused = run_cli(["ingest", str(notes), "--quiet"], env=cli_env)
        assert refused.returncode == 1
        assert "in use by another process (pid" in refused.stderr
        with pytest.raises(LockError):
            StoreLock(data_dir).acquire()


def test_wait_for_the_lock(notes: Path, data_dir: Path, cli_env: dict[str, str]) -> None:
    lock = StoreLock(data_dir)
    lock.acquire()
    timer = threading.Timer(1.0, lock.release)
    timer.start()
    started = time.monotonic()
    waited = run_cli(["ingest", str(notes), "--quiet", "--wait"], env=cli_env)
    timer.join()
    assert waited.returncode == 0, waited.stderr
    assert time.monotonic() - started >= 1.0


def test_state_of_another_schema_is_rebuilt(
    notes: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    import sqlite3

    _run(notes, settings, embedder)
    before = snapshot(settings)
    db = sqlite3.connect(settings.data_dir / STATE_FILE)
    with db:
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
        db.execute("ALTER TABLE files DROP COLUMN inode")  # an older layout
    db.close()
    summary = _run(notes, settings, embedder)
    assert summary.chunks_embedded == 0 and summary.files_unchanged == 5
    assert snapshot(settings) == before
    assert list(settings.data_dir.glob(STATE_FILE + ".corrupt-*"))


def test_mass_deletion_refused_but_a_renamed_folder_is_a_move(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    root = tmp_path / "vault"
    (root / "all").mkdir(parents=True)
    for n in range(30):
        (root / "all" / f"note{n}.md").write_text(f"# Note {n}\n\nBody of note number {n}.\n")
        set_mtime(root / "all" / f"note{n}.md", 1_600_000_000)
    first = _run(root, settings, embedder, label="vault")
    assert first.files_new == 30

    (root / "all").rename(root / "everything")  # every path gone, every file back elsewhere
    moved = _run(root, settings, embedder, label="vault")
    assert (moved.files_new, moved.files_deleted, moved.chunks_embedded) == (30, 30, 0)

    for n in range(25):  # more than 20 files and more than half of the source
        (root / "everything" / f"note{n}.md").unlink()
    with pytest.raises(SourceError, match="25 of 30 indexed files are gone"):
        _run(root, settings, embedder, label="vault")
    assert len(snapshot(settings)) == 30  # nothing deleted
    allowed = _run(root, settings, embedder, label="vault", allow_mass_delete=True)
    assert allowed.files_deleted == 25 and len(snapshot(settings)) == 5


def test_a_heal_trusts_the_stat_of_untouched_files(
    notes: Path, settings: Settings, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest rebuilt from the collection keeps each file's stat (ctime and inode too),
    so the run after a heal reads only what changed, not the whole source."""
    from chromasync.state.manifest import State
    from chromasync.sync import ingest as ingest_module

    _run(notes, settings, embedder)
    edited = next(iter(sorted(notes.rglob("*.md"))))
    edited.write_text(edited.read_text() + "\nA line added while the state was dirty.\n")
    set_mtime(edited, 1_700_000_000)
    state = State.open(settings.data_dir)
    state.mark_dirty(settings.collection, "notes")
    state.close()
    read: list[str] = []
    real = ingest_module.read_file

    def counting(file, *a, **kw):  # type: ignore[no-untyped-def]
        read.append(file.rel_path)
        return real(file, *a, **kw)

    monkeypatch.setattr(ingest_module, "read_file", counting)
    summary = _run(notes, settings, embedder)
    assert read == [edited.relative_to(notes).as_posix()]
    assert (summary.files_updated, summary.files_unchanged) == (1, 4)


def test_manifest_rows_committed_once_per_wave(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One manifest transaction per write wave, not one per file (ingest's own time)."""
    from chromasync.state.manifest import State
    from chromasync.sync import waves

    root = tmp_path / "many"
    root.mkdir()
    for n in range(25):
        (root / f"note-{n:02}.md").write_text(f"# Note {n}\n\nShort note number {n}.\n")
    monkeypatch.setattr(waves, "WAVE_RECORDS", 10)  # one chunk a file: waves of 10 files
    commits: list[int] = []
    original = State.commit_files

    def counting(self: State, collection: str, source: str, states, records, **kw):  # type: ignore[no-untyped-def]
        commits.append(len(states))
        return original(self, collection, source, states, records, **kw)

    monkeypatch.setattr(State, "commit_files", counting)
    summary = _run(root, settings, embedder, label="many")
    assert summary.files_new == 25 and summary.chunks_embedded == 25
    assert commits == [10, 10, 5]
    assert _run(root, settings, embedder, label="many").files_unchanged == 25
