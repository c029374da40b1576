"""A full disk, a read-only data dir and missing permissions are clear errors naming the
data dir, never raw `OSError`/`sqlite3.OperationalError` tracebacks."""

from __future__ import annotations

import dataclasses
import errno
import os
import sqlite3
import subprocess
import types
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import StoreError, storage_error
from chromasync.retrieve import session
from chromasync.state import manifest

from ..conftest import run_cli


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (sqlite3.OperationalError("database or disk is full"), "is full"),
        (OSError(errno.ENOSPC, "No space left on device"), "is full"),
        (OSError(errno.EROFS, "Read-only file system"), "read-only"),
        (sqlite3.OperationalError("attempt to write a readonly database"), "read-only"),
        (StoreError("cannot open Chroma: attempt to write a readonly database"), "read-only"),
        (PermissionError(errno.EACCES, "Permission denied"), "permission denied"),
    ],
)  # fmt: skip
def test_storage_errors_name_the_data_dir(exc: BaseException, words: str) -> None:
    found = storage_error(exc, "/srv/index")
    assert found is not None and words in str(found) and "/srv/index" in str(found)


def test_a_failed_store_write_on_a_full_disk_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma's embedded store words a full disk its own way; the free space tells."""
    chroma = StoreError(
        "Chroma at d/chroma: upsert failed: InternalError: Error in compaction: Failed to "
        "apply logs to the metadata segment"
    )
    assert storage_error(chroma, tmp_path) is None  # this disk has room: left alone
    full = types.SimpleNamespace(f_bavail=0, f_frsize=4096)
    monkeypatch.setattr(os, "statvfs", lambda path: full)
    found = storage_error(chroma, tmp_path / "data")
    assert found is not None and "is full" in str(found) and str(tmp_path) in str(found)
    assert storage_error(ValueError("bad"), tmp_path) is None  # not a store error


def test_other_errors_are_left_alone() -> None:
    assert storage_error(sqlite3.OperationalError("no such table: x"), "/d") is None
    assert storage_error(ValueError("bad"), "/d") is None
    assert storage_error(StoreError("another process owns the data dir"), "/d") is None


def test_ingest_on_a_full_disk_is_a_store_error(
    notes: Path, settings: Settings, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    (notes / "new.md").write_text("# New\n\nkites\n")

    def full(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(manifest.State, "commit_files", full)
    with pytest.raises(StoreError, match="is full") as info:
        api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert str(settings.data_dir) in str(info.value)


def test_search_of_a_read_only_chroma_names_the_data_dir(
    notes: Path, settings: Settings, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)

    def read_only(*args: object, **kwargs: object) -> None:
        raise StoreError("cannot open Chroma at x: attempt to write a readonly database")

    monkeypatch.setattr(session, "open_store_for", read_only)  # where a search opens it
    with pytest.raises(StoreError, match="read-only") as info:
        api.search("kites", settings, embedder=embedder)
    assert str(settings.data_dir) in str(info.value)


def _can_mount() -> bool:
    return os.geteuid() == 0 and os.path.exists("/bin/mount")


@pytest.mark.skipif(not _can_mount(), reason="needs root to mount a tmpfs")
@pytest.mark.parametrize(
    "size", ["600k", pytest.param("4m", marks=pytest.mark.slow)]
)  # 4m: full mid-run, and Chroma's words are "Error in compaction"
def test_cli_on_a_tiny_tmpfs_says_the_disk_is_full(tmp_path: Path, size: str) -> None:
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)])
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        for i in range(300):
            (corpus / f"n{i}.md").write_text(f"# Note {i}\n\n" + os.urandom(1500).hex() + "\n")
        env = {"CHROMASYNC_DATA_DIR": str(mount / "data"), "CHROMASYNC_PROVIDER": "hash"}
        result = run_cli(["ingest", str(corpus)], env=env)
        assert result.returncode == 1
        assert "Traceback" not in result.stderr
        assert "is full" in result.stderr and str(mount / "data") in result.stderr
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.skipif(not _can_mount(), reason="needs root to bind-mount a folder read-only")
def test_a_read_only_index_is_still_searchable(
    notes: Path, tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """A data dir on a read-only mount: search (keyword, dense, hybrid) and status work,
    from a temporary copy of the store, and nothing is written there."""
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    mount = tmp_path / "ro"
    mount.mkdir()
    if subprocess.run(
        ["mount", "--bind", "-o", "ro", str(settings.data_dir), str(mount)]
    ).returncode:
        pytest.skip("cannot bind-mount here")
    try:
        if os.access(mount, os.W_OK):
            pytest.skip("the bind mount is not read-only here")
        before = sorted(p.name for p in mount.rglob("*"))
        ro = dataclasses.replace(settings, data_dir=mount)
        for mode in ("keyword", "dense", "hybrid"):
            hits = api.search("grinder calibration", ro, embedder=embedder, mode=mode, k=3)
            assert hits and hits[0].path == "guides/install.md", mode
        assert {row.source for row in api.status(ro)} == {"notes"}
        assert sorted(p.name for p in mount.rglob("*")) == before
    finally:
        subprocess.run(["umount", str(mount)], check=False)
