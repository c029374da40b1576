"""Nothing lost, whatever the user or the machine does (docs/reliability.md, "Nothing lost").

Each test here failed before its fix: a label shared by two folders, relative roots, a small
source on a vanished mount, racing `POST /sources`, a state file that is merely unusable,
records the state does not know, and a data dir readable by other users.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import StoreError
from chromasync.state.manifest import STATE_FILE, State
from chromasync.sync.ingest import IngestOptions
from chromasync.sync.registry import status

from ..conftest import age_tree, run_cli, snapshot


def _folder(root: Path, files: int, word: str) -> Path:
    root.mkdir(parents=True)
    for n in range(files):
        (root / f"{word}{n}.md").write_text(f"# {word} {n}\n\nAbout {word} number {n}.\n")
    age_tree(root)
    return root


def _run(root: Path, settings: Settings, embedder: HashEmbedder, label: str | None = None, **kw):
    return api.ingest(
        [api.source_for(root, label)],
        settings,
        IngestOptions(**kw),
        embedder=embedder,  # type: ignore[arg-type]
    )


def _files(data_dir: Path) -> dict[str, tuple[int, int]]:
    """Every file under the data dir with its size and mtime."""
    out = {}
    for path in sorted(data_dir.rglob("*")):
        if path.is_file():
            st = path.stat()
            out[str(path.relative_to(data_dir))] = (st.st_size, st.st_mtime_ns)
    return out


# -- the state file: only proven corruption moves it aside ---------------------------------


def test_unopenable_state_is_an_error_that_moves_nothing(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    notes = _folder(tmp_path / "notes", 3, "kite")
    _run(notes, settings, embedder)
    before = snapshot(settings)
    state = settings.data_dir / STATE_FILE
    (settings.data_dir / (STATE_FILE + "-wal")).unlink(missing_ok=True)
    (settings.data_dir / (STATE_FILE + "-wal")).mkdir()  # SQLite: "unable to open database file"
    content = state.read_bytes()
    with pytest.raises(StoreError, match="cannot use the state file .*left as it is"):
        _run(notes, settings, embedder)
    with pytest.raises(StoreError, match="cannot use the state file"):
        status(settings)
    assert state.read_bytes() == content
    assert not list(settings.data_dir.glob(STATE_FILE + ".corrupt-*"))
    (settings.data_dir / (STATE_FILE + "-wal")).rmdir()
    assert [r.source for r in status(settings)] == ["notes"]  # the sources are all still known
    assert snapshot(settings) == before


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (8, "attempt to write a readonly database"),
        (13, "database or disk is full"),
        (5, "database is locked"),
        (3, "access permission denied"),
    ],
)
def test_unwritable_state_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, message: str
) -> None:
    from chromasync.state import manifest

    data_dir = tmp_path / "data"
    State.open(data_dir).close()
    content = (data_dir / STATE_FILE).read_bytes()

    def refuse(path: Path) -> sqlite3.Connection:
        exc = sqlite3.OperationalError(message)
        exc.sqlite_errorcode = code  # type: ignore[attr-defined]
        raise exc

    monkeypatch.setattr(manifest, "_connect", refuse)
    with pytest.raises(StoreError, match=message):
        State.open(data_dir)
    assert (data_dir / STATE_FILE).read_bytes() == content
    assert not list(data_dir.glob(STATE_FILE + ".corrupt-*"))


def test_read_only_commands_never_write(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    assert status(settings) == [] and not settings.data_dir.exists()  # nothing created
    notes = _folder(tmp_path / "notes", 3, "kite")
    _run(notes, settings, embedder)
    before = _files(settings.data_dir)
    assert [r.source for r in status(settings)] == ["notes"]
    api.list_sources(settings)
    api.health(settings)
    after = _files(settings.data_dir)
    # a reader of a WAL database may leave SQLite's empty shared-memory files; nothing else
    for name in (STATE_FILE + "-wal", STATE_FILE + "-shm"):
        if name not in before and name in after:
            assert name.endswith("-shm") or after.pop(name)[0] == 0
            after.pop(name, None)
    assert after == before
    # a damaged state: status says so, and moves nothing (the next ingest rebuilds it)
    for name in (STATE_FILE + "-wal", STATE_FILE + "-shm"):
        (settings.data_dir / name).unlink(missing_ok=True)
    (settings.data_dir / STATE_FILE).write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="damaged"):
        status(settings)
    assert not list(settings.data_dir.glob(STATE_FILE + ".corrupt-*"))


# -- the data dir is private ---------------------------------------------------------------


def test_data_dir_is_private(tmp_path: Path, data_dir: Path, cli_env: dict[str, str]) -> None:
    from chromasync.owner.locate import OwnerInfo, write_owner

    notes = _folder(tmp_path / "notes", 3, "kite")
    old = os.umask(0o022)
    try:
        for _ in range(2):  # the second run is answered by the fast path (a snapshot stamp)
            done = run_cli(["ingest", str(notes), "-q"], cli_env)
            assert done.returncode == 0, done.stderr
        write_owner(data_dir, OwnerInfo(pid=os.getpid(), role="serve", socket="x"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    ours = [p for p in data_dir.rglob("*") if "chroma" not in p.relative_to(data_dir).parts]
    names = {p.name for p in ours}
    assert {STATE_FILE, "embeddings.sqlite3", "owner.json", "fastpath"} <= names, names
    assert any(n.endswith(".snap") for n in names) and any(n.endswith(".ran") for n in names)
    for path in ours:
        want = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == want, path
    if (data_dir / "chroma").exists():
        assert stat.S_IMODE((data_dir / "chroma").stat().st_mode) == 0o700
