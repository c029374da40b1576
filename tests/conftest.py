"""Shared fixtures: a tiny deterministic embedder, temporary data dirs, corpora, the CLI.

Tests never write into ../shared: corpora are copied to a temporary folder first.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import types
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from chromasync.config.resolve import resolve_settings
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.metakeys import FILE_VERSION_KEY, RECORD_HASH_KEY

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
HUGO = SHARED / "corpora" / "hugo-docs"
SCIFACT = SHARED / "corpora" / "scifact"
#: Set to a Chroma server URL to run the integration tests against it instead of the
#: embedded store (each test then gets a collection of its own).
TEST_CHROMA_URL = os.environ.get("CHROMASYNC_TEST_CHROMA_URL") or None
#: No test's `search` or `ask` leaves a daemon behind unless it asks for one (its env sets
#: CHROMASYNC_NO_DAEMON to ""): tests/integration/test_daemon.py does.
os.environ.setdefault("CHROMASYNC_NO_DAEMON", "1")
#: Tests never read or write the user's ~/.cache/chroma: Chroma's model folder is
#: CHROMA_HOME/.cache/chroma/onnx_models for the whole session (made once, from the offline
#: weights, by the first test that needs it), so that a subprocess run with HOME=CHROMA_HOME
#: (a plain chromadb client, chroma-mcp) finds the same files chromasync put there.
CHROMA_HOME = Path(tempfile.mkdtemp(prefix="chromasync-test-home-"))
atexit.register(shutil.rmtree, CHROMA_HOME, True)
os.environ.setdefault(
    "CHROMASYNC_CHROMA_MODELS", str(CHROMA_HOME / ".cache" / "chroma" / "onnx_models")
)


def set_mtime(path: Path, seconds: float) -> None:
    """Give a file an explicit, old mtime (never race the clock; see docs/reliability.md)."""
    os.utime(path, ns=(int(seconds * 1e9), int(seconds * 1e9)))


def age_tree(root: Path, seconds: float = 1_600_000_000) -> None:
    """Set every file under `root` to an old mtime, so none of them is 'racily clean'."""
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            set_mtime(path, seconds)


#: Fixtures that start a real `chroma run` server (or stand for one): their tests are marked
#: `server` at collection, so `-m "not server"` leaves every one of them out.
SERVER_FIXTURES = frozenset({"chroma_server", "chroma_url"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)


@pytest.fixture(autouse=True)
def _timing_needs_its_marker(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tests/doubling.assert_linear` measures only in a test marked `timing`, which
    `make test` runs alone (see tests/doubling.py)."""
    from . import doubling

    monkeypatch.setattr(doubling, "marked", request.node.get_closest_marker("timing") is not None)


@pytest.fixture(autouse=True)
def _real_model_needs_its_marker(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that loads the real default model in this process must be marked `model`,
    so that `-m "not model"` means it: unmarked, the load fails the test. (Subprocesses,
    such as `run_cli`, are not watched: their tests choose the `hash` provider.)"""
    if request.node.get_closest_marker("model") is not None:
        return
    from chromasync.embed.local import LocalEmbedder

    def refuse(self: LocalEmbedder) -> None:
        raise AssertionError(
            f"{request.node.nodeid} loads {self.model_id} without @pytest.mark.model"
        )

    monkeypatch.setattr(LocalEmbedder, "_load_unlocked", refuse)


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def unique_collection() -> str:
    return f"t-{uuid.uuid4().hex[:16]}"


@pytest.fixture
def server_flags() -> dict[str, str]:
    """With CHROMASYNC_TEST_CHROMA_URL: that server and a fresh collection; else nothing."""
    if TEST_CHROMA_URL is None:
        return {}
    return {"chroma_url": TEST_CHROMA_URL, "collection": unique_collection()}


@pytest.fixture
def settings(data_dir: Path, server_flags: dict[str, str]) -> Settings:
    """Hash embedder, one shared collection (`settings.collection`); the default layout,
    one collection per source kind, is tested in tests/integration/test_sources.py."""
    return resolve_settings(
        {"data_dir": str(data_dir), "provider": "hash", **server_flags},
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real Chroma server: CHROMASYNC_TEST_CHROMA_URL, or a `chroma run` on a
    free loopback port, started once per session and ready-checked through its heartbeat."""
    if TEST_CHROMA_URL is not None:
        yield TEST_CHROMA_URL
        return
    from .servers import ChromaServer

    server = ChromaServer(tmp_path_factory.mktemp("chroma-server") / "db").start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A copy of examples/notes with old mtimes."""
    root = tmp_path / "notes"
    shutil.copytree(REPO / "examples" / "notes", root)
    age_tree(root)
    return root


@pytest.fixture(scope="session")
def hugo_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A read-only-by-convention copy of hugo-docs; copy it again before mutating."""
    if not HUGO.is_dir():
        pytest.skip("../shared/corpora/hugo-docs is not present")
    root = tmp_path_factory.mktemp("hugo") / "hugo-docs"
    shutil.copytree(HUGO, root, symlinks=True)
    age_tree(root)
    return root


def run_cli(
    args: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `python -m chromasync` in a subprocess with this checkout's sources first."""
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "chromasync", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=600,
    )


def invoke_cli(
    args: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the console script in this process, as `run_cli` runs it in a child: Click's
    `CliRunner` isolates stdin, stdout, stderr and `env` (restored after), `cwd` is entered
    and left, and the entry is `fastpath.main` itself (the unchanged re-run's and the keyword
    search's fast paths, the daemon client, then click, recording this command line's
    snapshot), so a test asserts the same exit code, stdout and stderr, each on its own.

    Use `run_cli` where the test is about a process: the console script's entry as a
    program, signals, the daemon, an exit under kill, a fresh interpreter's imports.
    """
    from click.testing import CliRunner

    from chromasync import fastpath

    runner = CliRunner()
    argv = [sys.executable, "-m", "chromasync", *args]
    with contextlib.ExitStack() as stack:
        stdout, stderr, _ = stack.enter_context(runner.isolation(env=env))
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        # What `python -m chromasync` has: its argv[0] and its `__main__`, whose package click
        # reads for the program's name in usage lines ("Usage: python -m chromasync ...").
        saved_argv, sys.argv = sys.argv, [str(REPO / "src" / "chromasync" / "__main__.py"), *args]
        stack.callback(setattr, sys, "argv", saved_argv)
        as_main = types.ModuleType("__main__")
        as_main.__package__ = "chromasync"
        saved_main, sys.modules["__main__"] = sys.modules["__main__"], as_main
        stack.callback(sys.modules.__setitem__, "__main__", saved_main)
        try:
            code = fastpath.main() or 0
        except SystemExit as exit_:  # click's standalone mode, or the command's own exit
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            if isinstance(exit_.code, str):
                sys.stderr.write(exit_.code + "\n")
        sys.stdout.flush()
        sys.stderr.flush()
        out = stdout.getvalue().decode("utf-8", "replace")
        err = stderr.getvalue().decode("utf-8", "replace")
    return subprocess.CompletedProcess(argv, code, out, err)


@pytest.fixture
def cli_env(data_dir: Path, server_flags: dict[str, str]) -> Iterator[dict[str, str]]:
    env = {
        "CHROMASYNC_DATA_DIR": str(data_dir),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_COLLECTIONS": "shared",
    }
    if server_flags:
        env["CHROMASYNC_CHROMA_URL"] = server_flags["chroma_url"]
        env["CHROMASYNC_COLLECTION"] = server_flags["collection"]
    yield env


#: Metadata that legitimately differs between an incremental run and a clean one: the
#: file's revision, and when a record was written and the file's mtime then (a record
#: that did not change is not written again, `test_record_fields.py`).
HISTORY_KEYS = frozenset({FILE_VERSION_KEY, RECORD_HASH_KEY, "ingested_at", "last_modified_mtime"})


def snapshot(settings: Settings, vectors: bool = False) -> dict[str, tuple[object, ...]]:
    """The collection as comparable rows: id -> (metadata without history, document[, vector])."""
    from chromasync import api

    collection = api.open_store(settings).collection(settings.collection, create=False)
    rows: dict[str, tuple[object, ...]] = {}
    for record in collection.iter_records(documents=True):
        meta = tuple(
            sorted((k, str(v)) for k, v in record.metadata.items() if k not in HISTORY_KEYS)
        )
        rows[record.id] = (meta, record.document)
    if vectors:
        found = collection.embeddings(list(rows))
        rows = {i: (*row, tuple(round(x, 5) for x in found[i])) for i, row in rows.items()}
    return rows


def oracle(root: Path, tmp: Path, label: str, **spec: object) -> dict[str, tuple[object, ...]]:
    """What a clean run over `root` builds, in a fresh data dir."""
    from chromasync import api

    settings = resolve_settings(
        {"data_dir": str(tmp), "provider": "hash"}, {"CHROMASYNC_COLLECTIONS": "shared"}
    )
    api.ingest([api.source_for(root, label, **spec)], settings, embedder=HashEmbedder())
    return snapshot(settings)


@pytest.fixture(scope="session", autouse=True)
def _release_clients() -> Iterator[None]:
    """Drop cached Chroma clients at the end, so their HTTP sockets close before pytest's
    summary (not as ResourceWarning noise at interpreter exit)."""
    yield
    import gc
    import warnings

    try:
        from chromadb.api.client import SharedSystemClient

        SharedSystemClient.clear_system_cache()
    except Exception:  # chromadb internals moved: nothing to release
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
