"""`chromasync watch` as a real subprocess while files are edited, created, renamed and
deleted: the index follows exactly, a burst is one run, Ctrl-C stops it cleanly, and a
restart re-embeds nothing that did not change."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.errors import NotFound
from chromasync.owner.client import OwnerClient
from chromasync.owner.locate import find_owner, read_owner
from chromasync.state.lock import lock_holder

from ..servers import CommandProcess

TIMEOUT = 60.0


@pytest.fixture
def start_watch(cli_env: dict[str, str]) -> Iterator[Callable[[Path], CommandProcess]]:
    started: list[CommandProcess] = []
    env = {**cli_env, "CHROMASYNC_API_TOKEN": ""}

    def start(notes: Path) -> CommandProcess:
        proc = CommandProcess("watch", [str(notes), "--debounce", "0.2", "--max-delay", "2"], env)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()


def until(check: Callable[[], bool], what: str) -> float:
    """Poll `check` until true; returns how long it took (for the report, not asserted)."""
    began = time.monotonic()
    while time.monotonic() - began < TIMEOUT:
        try:
            if check():
                return time.monotonic() - began
        except NotFound:
            pass
        time.sleep(0.05)
    raise AssertionError(f"the index never showed: {what}")


def text_of(client: OwnerClient, path: str) -> str:
    return "\n".join(h.text for h in client.get_document(path))


def missing(client: OwnerClient, path: str) -> bool:
    try:
        client.get_document(path)
    except NotFound:
        return True
    return False


def test_watch_follows_edits_exactly(
    notes: Path, data_dir: Path, start_watch: Callable[[Path], CommandProcess], settings: Settings
) -> None:
    watcher = start_watch(notes)
    watcher.expect("watching notes")
    first = watcher.expect("synced notes")
    assert "5 new" in first
    owner = find_owner(data_dir)
    assert owner is not None and owner.role == "watch"
    latencies: dict[str, float] = {}
    with OwnerClient(owner) as client:
        # edit
        install = notes / "guides" / "install.md"
        install.write_text(install.read_text() + "\nThe wombatquartz gasket goes last.\n")
        latencies["edit"] = until(
            lambda: "wombatquartz" in text_of(client, "guides/install.md"), "the edit"
        )
        hits = client.search(api.SearchArgs("wombatquartz gasket", k=20)).hits  # from Chroma
        assert any(h.path == "guides/install.md" and "wombatquartz" in h.text for h in hits)
        # create
        (notes / "journal" / "new.md").write_text("# New\n\nA narwhalpepper recipe.\n")
        latencies["create"] = until(
            lambda: "narwhalpepper" in text_of(client, "journal/new.md"), "the new file"
        )
        # rename
        (notes / "ideas.txt").rename(notes / "ideas-renamed.txt")
        latencies["rename"] = until(
            lambda: missing(client, "ideas.txt") and bool(text_of(client, "ideas-renamed.txt")),
            "the rename",
        )
        # delete
        (notes / "journal" / "2026-05-01.md").unlink()
        latencies["delete"] = until(
            lambda: missing(client, "journal/2026-05-01.md"), "the deletion"
        )
        # a burst of saves is one run (or two, if the burst straddles a run)
        watcher.drain()
        runs_before = sum("synced notes" in line for line in watcher.seen)
        sourdough = notes / "guides" / "sourdough.md"
        for i in range(10):
            sourdough.write_text(f"# Sourdough\n\nburst save number burstsave{i}\n")
        latencies["burst"] = until(
            lambda: "burstsave9" in text_of(client, "guides/sourdough.md"), "the last save"
        )
        time.sleep(1.0)
        runs = sum("synced notes" in line for line in watcher.drain()) - runs_before
        assert 1 <= runs <= 2, watcher.seen
        status = client.status()
        assert sum(row.files for row in status.sources) == 5
    print("change -> searchable (s):", {k: round(v, 2) for k, v in latencies.items()})

    assert watcher.interrupt() == 0
    assert "chromasync watch: stopped" in watcher.drain()[-1]
    assert read_owner(data_dir) is None and lock_holder(data_dir) is None

    # the index is exactly what a clean run would build: a delta run finds nothing to do
    [check] = api.ingest([api.source_for(notes)], settings)
    assert (check.files_new, check.files_updated, check.files_deleted) == (0, 0, 0)
    assert check.chunks_embedded == 0
    stored = api.open_store(settings).collection(settings.collection, create=False)
    paths = {str(r.metadata["path"]) for r in stored.iter_records()}
    on_disk = {p.relative_to(notes).as_posix() for p in notes.rglob("*") if p.is_file()}
    assert paths == on_disk

    # a restart catches up with a change made while nobody watched, and re-embeds nothing else
    (notes / "ideas-renamed.txt").write_text("Only one idea: water the ferns.\n")
    again = start_watch(notes)
    line = again.expect("synced notes")
    assert "1 updated" in line and "4 unchanged" in line and "1 chunk(s) embedded" in line
    assert again.interrupt() == 0
