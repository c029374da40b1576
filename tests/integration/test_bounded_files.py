"""Per-file bounds where the bytes are read: the size limit, and the read+chunk time budget."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.corpus.read import read_file
from chromasync.embed.hashing import HashEmbedder
from chromasync.records import FileStat
from chromasync.sync import ingest as ingest_mod
from chromasync.sync.ingest import IngestOptions

from ..conftest import set_mtime


def _paths(settings: Settings) -> dict[str, int]:
    collection = api.open_store(settings).collection(settings.collection, create=False)
    counts: dict[str, int] = {}
    for record in collection.iter_records():
        path = str(record.metadata["path"])
        counts[path] = counts.get(path, 0) + 1
    return counts


def test_read_refuses_a_file_that_grew_past_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("small\n")
    listed = FileStat("a.txt", str(path), 6, 0)
    path.write_text("word " * 100_000)  # replaced by a bigger file after the walk
    outcome = read_file(listed, max_bytes=1000)
    assert outcome.document is None and outcome.skip is not None
    assert outcome.skip.reason == "too-large"
    assert "1000" in outcome.skip.detail
    assert read_file(listed).document is not None  # without a limit: read whole, as before


def test_read_never_reads_more_than_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even when fstat understates the size (procfs, a file growing), the read stops at
    limit + 1 bytes."""
    path = tmp_path / "a.txt"
    path.write_text("x " * 50_000)
    real_fstat, real_read = os.fstat, os.read
    read_bytes: list[int] = []

    class Small:
        def __init__(self, st: os.stat_result) -> None:
            self.st_mode, self.st_size, self.st_mtime_ns = st.st_mode, 10, st.st_mtime_ns

    def fstat(fd: int) -> Small:
        return Small(real_fstat(fd))

    def counting_read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        read_bytes.append(len(data))
        return data

    monkeypatch.setattr("chromasync.corpus.read.os.fstat", fstat)
    monkeypatch.setattr("chromasync.corpus.read.os.read", counting_read)
    outcome = read_file(FileStat("a.txt", str(path), 10, 0), max_bytes=1000)
    assert outcome.skip is not None and outcome.skip.reason == "too-large"
    assert sum(read_bytes) == 1001


def test_ingest_skips_a_file_swapped_for_a_bigger_one_before_the_read(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "keep.md").write_text("# Keep\n\nkept text\n")
    (root / "grow.md").write_text("# Grow\n\nsmall\n")
    for p in root.iterdir():
        set_mtime(p, 1_600_000_000)

    def swap(phase: str, done: int, total: int) -> None:
        if phase == "read" and done == 1:
            (root / "grow.md").write_text("# Grow\n\n" + "word " * 400_000)

    options = IngestOptions(max_file_bytes=100_000)
    [summary] = api.ingest(
        [api.source_for(root)], settings, options, embedder=embedder, progress=swap
    )
    assert summary.files_skipped.get("too-large") == 1
    assert set(_paths(settings)) == {"keep.md"}


def test_a_file_past_its_time_budget_is_a_too_slow_skip(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "slow.md").write_text("".join(f"# h{i}\n" for i in range(2000)))
    (root / "fast.md").write_text("# Fast\n\nquick\n")
    for p in root.iterdir():
        set_mtime(p, 1_600_000_000)
    # the first run indexes both files
    [first] = api.ingest([api.source_for(root)], settings, embedder=embedder)
    assert first.files_new == 2
    before = _paths(settings)

    # a fake clock: 1 s per reading, so a file whose chunking reads it often runs out
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr(ingest_mod, "FILE_CLOCK", clock)
    monkeypatch.setattr(ingest_mod, "FILE_SECONDS", 5.0)
    (root / "slow.md").write_text("".join(f"# g{i}\n" for i in range(2000)))
    (root / "fast.md").write_text("# Fast\n\nquicker\n")
    for p in root.iterdir():
        set_mtime(p, 1_700_000_000)
    [second] = api.ingest([api.source_for(root)], settings, embedder=embedder)
    assert second.files_skipped == {"too-slow": 1}
    assert second.files_updated == 1  # fast.md
    after = _paths(settings)
    assert after["slow.md"] == before["slow.md"]  # earlier records kept, nothing deleted

    monkeypatch.setattr(ingest_mod, "FILE_SECONDS", 1e9)
    [third] = api.ingest([api.source_for(root)], settings, embedder=embedder)
    assert third.files_updated == 1 and not third.files_skipped  # retried, then indexed


#: What a save caught halfway leaves that counts as `empty` (issue 40's variants): nothing,
#: whitespace, a BOM (with line ends), front matter without a title or description.
CAUGHT_EMPTY = ["", " \n\t\n  ", "\ufeff", "\ufeff\r\n\r\n", "---\ntags: [x]\n---\n"]


@pytest.mark.parametrize("caught", CAUGHT_EMPTY)
def test_a_file_caught_empty_mid_rewrite_keeps_its_records_until_removed(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder, caught: str
) -> None:
    """A non-atomic save truncates first: a run that sees the file empty keeps its records
    (a counted `empty` skip), as `too-slow` does; verify agrees and repair changes nothing;
    the text back is indexed as an edit; the file removed from disk is deleted."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "note.md").write_text("# Note\n\nthe grinder burrs\n")
    (root / "other.md").write_text("# Other\n\nsourdough\n")
    for p in root.iterdir():
        set_mtime(p, 1_600_000_000)
    api.ingest([api.source_for(root)], settings, embedder=embedder)
    before = _paths(settings)

    (root / "note.md").write_text(caught, newline="")
    set_mtime(root / "note.md", 1_700_000_000)
    [emptied] = api.ingest([api.source_for(root)], settings, embedder=embedder)
    assert emptied.files_skipped == {"empty": 1}
    assert _paths(settings) == before  # nothing deleted
    [check] = api.verify(settings)
    assert check.ok, check.as_json()
    [repaired] = api.verify(settings, repair=True)
    assert repaired.ok and _paths(settings) == before
    [again] = api.ingest([api.source_for(root)], settings, embedder=embedder)
    assert again.chunks_deleted == 0 and _paths(settings) == before

    (root / "note.md").write_text("# Note\n\nthe grinder burrs, cleaned\n")
    set_mtime(root / "note.md", 1_700_000_100)
    [back] = api.ingest([api.source_for(root)], settings, embedder=embedder)
    assert back.files_updated == 1

    (root / "note.md").write_text("")
    set_mtime(root / "note.md", 1_700_000_200)
    api.ingest([api.source_for(root)], settings, embedder=embedder)
    (root / "note.md").unlink()
    [removed] = api.ingest([api.source_for(root)], settings, embedder=embedder)
    assert removed.files_deleted == 1 and set(_paths(settings)) == {"other.md"}
