"""Nothing lost, whatever the user or the machine does (docs/reliability.md, "Nothing lost").

Each test here failed before its fix: a label shared by two folders, relative roots, a small
source on a vanished mount, racing `POST /sources`, a state file that is merely unusable,
records the state does not know, and a data dir readable by other users.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import StoreError
from chromasync.state.manifest import STATE_FILE, State
from chromasync.sync.ingest import IngestOptions
from chromasync.sync.registry import status

from ..conftest import TEST_CHROMA_URL, age_tree, invoke_cli, snapshot


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
    with pytest.raises(StoreError, match=r"cannot use the state file .*left as it is"):
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

    monkeypatch.setattr(manifest, "open_db", refuse)
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
            done = invoke_cli(["ingest", str(notes), "-q"], cli_env)
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


# -- a source's identity is its resolved absolute root -------------------------------------


def test_two_folders_with_one_name_are_refused(
    tmp_path: Path, data_dir: Path, cli_env: dict[str, str], settings: Settings
) -> None:
    first = _folder(tmp_path / "a" / "notes", 3, "kite")
    second = _folder(tmp_path / "b" / "notes", 2, "boat")
    done = invoke_cli(["ingest", "a/notes", "-q"], cli_env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    before = snapshot(settings)
    assert len(before) == 3
    clash = invoke_cli(["ingest", "b/notes", "-q"], cli_env, cwd=tmp_path)
    assert clash.returncode == 1
    assert str(first) in clash.stderr and str(second) in clash.stderr
    assert "--source LABEL" in clash.stderr
    assert snapshot(settings) == before  # nothing deleted
    other = invoke_cli(["ingest", "b/notes", "--source", "boats", "-q"], cli_env, cwd=tmp_path)
    assert other.returncode == 0, other.stderr
    assert len(snapshot(settings)) == 5


def test_roots_are_stored_absolute_and_old_relative_ones_are_not_guessed(
    tmp_path: Path, settings: Settings, cli_env: dict[str, str], embedder: HashEmbedder
) -> None:
    from chromasync.errors import SourceError

    notes = _folder(tmp_path / "home" / "notes", 3, "kite")
    done = invoke_cli(["ingest", "notes", "-q"], cli_env, cwd=notes.parent)
    assert done.returncode == 0, done.stderr
    [row] = status(settings)
    assert row.root == str(notes.resolve())
    # a state written by an older version: the root as typed
    db = sqlite3.connect(settings.data_dir / STATE_FILE)
    with db:
        db.execute("UPDATE sources SET root = 'notes'")
    db.close()
    before = snapshot(settings)
    elsewhere = _folder(tmp_path / "elsewhere" / "notes", 2, "boat")
    old = os.getcwd()
    os.chdir(elsewhere.parent)  # a `serve` started from another folder
    try:
        with pytest.raises(SourceError, match="relative root 'notes'"):
            api.known_specs(settings, ["notes"])
        assert api.known_specs(settings) == []  # left out (with a warning), not guessed
        with pytest.raises(SourceError, match="relative root"):
            api.read_indexed_file(settings, "notes", "kite0.md")
        with pytest.raises(SourceError):  # the same-named folder here: all "gone", refused
            _run(elsewhere, settings, embedder, label="notes")
    finally:
        os.chdir(old)
    assert snapshot(settings) == before
    # naming the folder again records it absolute, with nothing re-embedded
    [summary] = _run(notes, settings, embedder, label="notes")
    assert summary.chunks_embedded == 0 and summary.files_deleted == 0
    assert [r.root for r in status(settings)] == [str(notes.resolve())]


# -- a vanished or empty root deletes nothing, whatever the source's size --------------------


@pytest.mark.parametrize("files", [1, 3, 20])
def test_small_source_on_a_vanished_mount_is_kept(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder, files: int
) -> None:
    from chromasync.errors import SourceError

    mount = _folder(tmp_path / "mnt", files, "kite")
    _run(mount, settings, embedder)
    before = snapshot(settings)
    for child in mount.iterdir():  # the mount point is there, empty
        child.unlink()
    with pytest.raises(SourceError, match=r"all .* indexed file.* are gone"):
        _run(mount, settings, embedder)
    assert snapshot(settings) == before
    mount.rmdir()  # the mount point itself gone
    with pytest.raises(SourceError, match="does not exist"):
        _run(mount, settings, embedder)
    assert snapshot(settings) == before
    mount.mkdir()
    [allowed] = _run(mount, settings, embedder, allow_mass_delete=True)
    assert allowed.files_deleted == files and snapshot(settings) == {}


def test_a_vanished_sub_folder_deletes_nothing(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    from chromasync.records import SourceSpec

    root = tmp_path / "site"
    _folder(root / "a", 2, "kite")
    _folder(root / "b", 2, "boat")
    spec = SourceSpec(label="site", root=root, subdirs=("a", "b"))
    api.ingest([spec], settings, IngestOptions(), embedder=embedder)  # type: ignore[arg-type]
    before = snapshot(settings)
    for child in (root / "b").iterdir():
        child.unlink()
    (root / "b").rmdir()
    [summary] = api.ingest([spec], settings, IngestOptions(), embedder=embedder)  # type: ignore[arg-type]
    assert summary.files_deleted == 0 and snapshot(settings) == before


# -- racing POST /sources ------------------------------------------------------------------


def test_racing_add_source_requests_cannot_repoint_a_label(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    import threading

    from fastapi.testclient import TestClient

    from chromasync.owner.service import Service
    from chromasync.rest import create_app

    roots = [_folder(tmp_path / f"f{n}", 3, f"word{n}") for n in range(4)]
    with (
        Service(settings, "serve", embedder=embedder, allow_roots=[tmp_path]) as svc,
        TestClient(create_app(svc), base_url="http://127.0.0.1") as client,
    ):
        answers: list[tuple[int, dict]] = []
        start = threading.Barrier(len(roots))

        def post(root: Path) -> None:
            start.wait()
            r = client.post("/sources", json={"path": str(root), "label": "kites"})
            answers.append((r.status_code, r.json()))

        threads = [threading.Thread(target=post, args=(r,)) for r in roots]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        codes = sorted(code for code, _ in answers)
        assert codes == [202, 400, 400, 400], answers
        [won] = [body for code, body in answers if code == 202]
        for _ in range(600):
            job = client.get(f"/jobs/{won['job']['id']}").json()
            if job["status"] in ("done", "failed"):
                break
            import time

            time.sleep(0.05)
        assert job["status"] == "done", job
        [row] = status(settings)
        assert row.root == won["source"]["root"] and row.files == 3
    assert len(snapshot(settings)) == 3


# -- one label rule for the config, the CLI, REST and MCP -----------------------------------


@pytest.mark.parametrize(
    ("label", "ok"),
    [
        ("notes", True),
        ("hugo/content", True),
        ("org/repo@main", True),
        ("My Notes", True),
        ("a" * 128, True),
        ("a" * 129, False),
        ("", False),
        ("../x", False),
        ("a/./b", False),
        ("a//b", False),
        ("/abs", False),
        ("tab\there", False),
        (" lead", False),
        ("back\\slash", False),
    ],
)
def test_one_label_rule(label: str, ok: bool) -> None:
    from chromasync.config.labels import label_problem

    assert (label_problem(label) is None) == ok


def test_a_discovered_label_is_reachable_through_rest(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    from fastapi.testclient import TestClient

    from chromasync.owner.service import Service
    from chromasync.rest import create_app

    content = _folder(tmp_path / "hugo" / "content", 2, "kite")
    _run(content, settings, embedder, label="hugo/content")
    with (
        Service(settings, "serve", embedder=embedder, allow_roots=[tmp_path]) as svc,
        TestClient(create_app(svc), base_url="http://127.0.0.1") as client,
    ):
        read = client.get("/file", params={"source": "hugo/content", "path": "kite0.md"})
        assert read.status_code == 200, read.text
        again = client.post("/reindex", json={"source": "hugo/content"})
        assert again.status_code == 202, again.text
        bad = client.post("/reindex", json={"source": "../etc"})
        assert bad.status_code in (400, 422)
        gone = client.delete("/sources/hugo/content")
        assert gone.status_code == 200, gone.text
        assert gone.json()["records_deleted"] == 2
        # the collection it emptied is dropped too (issue 29): nothing of it is left
        assert gone.json()["collections_dropped"] == [settings.collection]
    assert settings.collection not in api.open_store(settings).list_collections()


# -- verify sees records the state does not know --------------------------------------------


def test_verify_reports_records_unknown_to_the_state_and_repair_adopts_them(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from chromasync.config.file import load_config_file

    notes = _folder(tmp_path / "notes", 3, "kite")
    stray = _folder(tmp_path / "stray", 2, "boat")
    config = tmp_path / "chromasync.yaml"
    config.write_text(f"version: 1\nsources:\n  - {{path: {notes}, label: notes}}\n")
    configured = dataclasses.replace(settings, config_file=load_config_file(config))
    _run(notes, configured, embedder, label="notes")
    _run(stray, configured, embedder, label="stray")
    before = snapshot(configured)
    for name in (STATE_FILE, STATE_FILE + "-wal", STATE_FILE + "-shm"):
        (settings.data_dir / name).unlink(missing_ok=True)  # the state lost

    checks = api.verify(configured, embedder=embedder)
    found = {c.source: len(c.orphans) for c in checks}
    assert found == {"notes": 3, "stray": 2}
    assert not any(c.ok for c in checks)

    repaired = {c.source: c for c in api.verify(configured, repair=True, embedder=embedder)}
    assert repaired["notes"].ok and repaired["notes"].repaired
    assert not repaired["stray"].ok  # no root known for it: reported and kept
    assert [r.source for r in status(configured)] == ["notes"]
    assert snapshot(configured) == before  # adopted, nothing deleted, nothing re-embedded
    removed = api.remove_source(configured, "stray")  # what verify suggests for the rest
    assert removed.records_deleted == 2
    assert {c.source for c in api.verify(configured, embedder=embedder)} == {"notes"}


@pytest.mark.skipif(TEST_CHROMA_URL is not None, reason="the embedded store's own folder")
def test_a_store_deleted_and_made_again_while_this_process_had_it_open(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """chromadb keeps one system per folder for a process's life: once another process had
    deleted the store (`model drop`, a data dir wiped) and it was made again, this process
    could neither write nor read it ("attempt to write a readonly database", "no such
    table: embeddings"). It is opened anew now, and what it writes is in the new file."""
    import shutil

    root = _folder(tmp_path / "notes", 3, "kite")
    _run(root, settings, embedder)
    assert len(snapshot(settings)) == 3
    shutil.rmtree(settings.data_dir)
    [again] = _run(root, settings, embedder)
    assert again.files_new == 3 and len(snapshot(settings)) == 3
    counted = subprocess.run(
        [sys.executable, "-c", COUNT, str(settings.data_dir / "chroma"), settings.collection],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert counted.stdout.split() == ["3"], counted.stderr[-2000:]


#: A fresh process's count of one collection's records, with a plain chromadb client.
COUNT = """
import sys, chromadb
client = chromadb.PersistentClient(path=sys.argv[1])
print(client.get_collection(sys.argv[2]).count())
"""
