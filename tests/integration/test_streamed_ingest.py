"""A run writes each wave as soon as it is planned (memory bounded by a wave, issue 19),
with the same records, manifest and summary as the run planned whole."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.records import ChunkRecord, StoreLimits
from chromasync.state.manifest import State
from chromasync.store.chroma import Collection
from chromasync.sync import ingest as ingest_mod
from chromasync.sync import waves as waves_mod

from ..conftest import age_tree, snapshot

FILES = 24


@pytest.fixture(autouse=True)
def _small_waves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waves_mod, "WAVE_RECORDS", 4)
    monkeypatch.setattr(ingest_mod, "WAVE_RECORDS", 4)


def _tree(root: Path, files: int = FILES, big: str = "") -> Path:
    for n in range(files):
        folder = root / f"d{n // 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n:03}.md").write_text(f"# File {n}\n\nText of file {n}.\n")
    if big:
        (root / big).write_text("# Big\n\n" + "word " * 400 + "\n")
    age_tree(root)
    return root


def _fresh(tmp: Path) -> Settings:
    return resolve_settings(
        {"data_dir": str(tmp), "provider": "hash"}, {"CHROMASYNC_COLLECTIONS": "shared"}
    )


def _manifest(settings: Settings, label: str) -> dict[str, tuple[object, ...]]:
    with State.open(settings.data_dir) as state:
        rows = state.files(settings.collection, label)
    return {p: (s.size, s.file_hash, s.version, s.records, s.skip_reason) for p, s in rows.items()}


def _whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run planned whole, as before streaming."""
    monkeypatch.setattr(ingest_mod.Ingestor, "_can_stream", lambda self, *a: False)


def _figures(summary: api.IngestSummary) -> dict[str, object]:
    return {k: v for k, v in summary.as_json().items() if k not in ("duration_ms", "embed_ms")}


def test_waves_are_written_while_files_are_still_read(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    root = _tree(tmp_path / "docs")
    events: list[tuple[str, int, int]] = []
    [summary] = api.ingest(
        [api.source_for(root)],
        settings,
        embedder=embedder,
        progress=lambda phase, done, total: events.append((phase, done, total)),
    )
    assert summary.files_new == FILES
    phases = [phase for phase, _, _ in events]
    first_write = phases.index("write")
    last_read = len(phases) - 1 - phases[::-1].index("read")
    assert first_write < last_read  # planned whole, every read came before any write
    writes = [(done, total) for phase, done, total in events if phase == "write"]
    assert writes[-1] == (FILES, FILES)  # a stream's progress counts files
    assert len(snapshot(settings)) == summary.chunks_total


def test_a_streamed_run_stores_what_the_whole_plan_stores(
    tmp_path: Path, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "docs")
    streamed, whole = _fresh(tmp_path / "a"), _fresh(tmp_path / "b")
    steps: list[tuple[api.IngestSummary, api.IngestSummary]] = []

    def both() -> None:
        with monkeypatch.context() as m:
            [one] = api.ingest([api.source_for(root, "docs")], streamed, embedder=embedder)
            _whole(m)
            [two] = api.ingest([api.source_for(root, "docs")], whole, embedder=embedder)
        steps.append((one, two))
        assert _figures(one) == _figures(two)
        assert snapshot(streamed) == snapshot(whole)
        assert _manifest(streamed, "docs") == _manifest(whole, "docs")

    both()  # cold
    # edits, a rename, a deletion, a touch, a new file
    (root / "d0" / "f001.md").write_text("# File 1\n\nEdited.\n")
    (root / "d0" / "f002.md").rename(root / "d0" / "moved.md")
    (root / "d1" / "f010.md").unlink()
    (root / "d2" / "f020.md").write_text((root / "d2" / "f020.md").read_text())
    (root / "d2" / "new.md").write_text("# New\n\nA new file.\n")
    age_tree(root, 1_650_000_000)
    both()
    first, second = steps
    assert first[0].files_new == FILES
    # the rename is a new path and a gone one (its records' IDs follow the path)
    assert (second[0].files_new, second[0].files_updated, second[0].files_deleted) == (2, 1, 2)
    assert second[0].chunks_deleted >= 2


def test_an_oversized_file_in_a_stream_is_a_skip_and_the_rest_is_written(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "docs", big="d1/big.md")
    limits = StoreLimits(max_batch=100, max_document_bytes=600, name="Small store")
    monkeypatch.setattr(ingest_mod.Ingestor, "limits", lambda self, options: limits)
    [summary] = api.ingest([api.source_for(root, "docs")], settings, embedder=embedder)
    assert summary.files_skipped == {"too-large-for-store": 1}
    assert summary.files_new == FILES
    stored = snapshot(settings)
    assert len(stored) == summary.chunks_total
    assert not any("d1/big.md" in str(meta) for meta, _ in stored.values())
    assert _manifest(settings, "docs")["d1/big.md"][4] == "too-large-for-store"
    # a re-run remembers the skip: nothing read, nothing written
    [again] = api.ingest([api.source_for(root, "docs")], settings, embedder=embedder)
    assert again.files_unchanged == FILES and again.chunks_embedded == 0


def test_a_file_of_many_chunks_is_written_a_part_at_a_time(
    tmp_path: Path, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's records are embedded and upserted `PART_RECORDS` at a time (its vectors
    were all held at once: 12 KB a record), and store what one request stores."""
    root = tmp_path / "docs"
    root.mkdir()
    sections = (f"# Part {n}\n\n" + f"word{n} " * 300 + "\n\n" for n in range(14))
    (root / "big.md").write_text("".join(sections))
    age_tree(root)
    sizes: list[int] = []
    upsert = Collection.upsert

    def spy(self: Collection, records: Sequence[ChunkRecord], *args: object) -> None:
        sizes.append(len(records))
        upsert(self, records, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Collection, "upsert", spy)
    parted, whole = _fresh(tmp_path / "a"), _fresh(tmp_path / "b")
    monkeypatch.setattr(waves_mod, "PART_RECORDS", 4)
    [one] = api.ingest([api.source_for(root, "docs")], parted, embedder=embedder)
    assert one.chunks_total >= 14 and sizes == [4] * (one.chunks_total // 4) + (
        [one.chunks_total % 4] if one.chunks_total % 4 else []
    )
    monkeypatch.setattr(waves_mod, "PART_RECORDS", 1024)
    [two] = api.ingest([api.source_for(root, "docs")], whole, embedder=embedder)
    assert sizes[-1] == one.chunks_total  # one request
    assert _figures(one) == _figures(two)
    assert snapshot(parted) == snapshot(whole)
    assert _manifest(parted, "docs") == _manifest(whole, "docs")
