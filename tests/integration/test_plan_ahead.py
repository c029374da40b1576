"""Planning ahead (issue 19): a run with many files to read reads and chunks them in a second
process while this one writes. It stores exactly what planning in-process stores; an error
there is the same error here; a worker that dies fails the run (the next run heals); a
worker whose parent is gone ends. The hash provider, a real Chroma, real PDFs."""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import EmbeddingError, SourceError, StoreError
from chromasync.plan.triage import Triage
from chromasync.records import FileStat, FileState, IngestSummary, StoreLimits
from chromasync.state.manifest import State
from chromasync.sync import ahead
from chromasync.sync import ingest as ingest_mod
from chromasync.sync import waves as waves_mod
from chromasync.sync.jobs import default_options
from chromasync.sync.waves import Tally

from ..conftest import REPO, SHARED, age_tree, set_mtime, snapshot

FILES = 30
PDF = SHARED / "corpora" / "pdf-samples" / "text" / "file_pdfjs_test.pdf"
OTHER_PDF = SHARED / "corpora" / "pdf-samples" / "text" / "issue840.pdf"


@pytest.fixture(autouse=True)
def _small_waves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waves_mod, "WAVE_RECORDS", 8)
    monkeypatch.setattr(ingest_mod, "WAVE_RECORDS", 8)


def _tree(root: Path) -> Path:
    for n in range(FILES):
        folder = root / f"d{n // 10}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"## Part {k}\n\nText {k} of file {n}. " * 3 for k in range(n % 4))
        (folder / f"f{n:03}.md").write_text(f"# File {n}\n\n{body}\n")
    (root / "private.md").write_text("---\nprivate: true\n---\n# Secret\n\nHidden.\n")
    (root / "blob.md").write_bytes(b"\x00\x01\x02binary")
    (root / "big.md").write_text("# Big\n\n" + "word " * 400 + "\n")
    (root / "broken.py").write_text("def f(:\n    return 1\n\nclass (\n")
    shutil.copy(PDF, root / "report.pdf")
    (root / "report.md").write_text(
        "---\ntitle: The report\ntags: [annual]\nbinary_asset:\n  filename: report.pdf\n---\n"
        "# About the report\n\nIts notes.\n"
    )
    age_tree(root)
    return root


def _settings(tmp: Path) -> Settings:
    return resolve_settings(
        {"data_dir": str(tmp), "provider": "hash"}, {"CHROMASYNC_COLLECTIONS": "shared"}
    )


def _run(root: Path, settings: Settings, mode: str, **kw: object) -> IngestSummary:
    [summary] = api.ingest(
        [api.source_for(root, "docs")],
        settings,
        default_options(settings, plan_ahead=mode),
        embedder=HashEmbedder(),
        **kw,  # type: ignore[arg-type]
    )
    return summary


def _figures(summary: IngestSummary) -> dict[str, object]:
    return {k: v for k, v in summary.as_json().items() if k not in ("duration_ms", "embed_ms")}


def _manifest(settings: Settings) -> dict[str, tuple[object, ...]]:
    with State.open(settings.data_dir) as state:
        rows = state.files(settings.collection, "docs")
    return {
        p: (s.size, s.file_hash, s.version, s.records, s.skip_reason, s.asset, s.asset_issue)
        for p, s in rows.items()
    }


def test_use_plans_ahead_with_a_second_core_and_enough_files() -> None:
    many = ahead.AHEAD_MIN_FILES
    assert ahead.use("auto", many, cpus=2)
    assert not ahead.use("auto", many - 1, cpus=2)
    assert not ahead.use("auto", many, cpus=1)
    assert ahead.use("on", 1, cpus=1) and not ahead.use("on", 0, cpus=2)
    assert not ahead.use("off", many * 10, cpus=8)
    # a model on this machine's cores: `auto` leaves them to it, `on` still plans ahead
    assert not ahead.use("auto", many * 10, cpus=8, model_on_cores=True)
    assert ahead.use("on", 1, cpus=2, model_on_cores=True)
    with pytest.MonkeyPatch.context() as m:  # a frozen app has no `python -m` to run
        m.setattr(sys, "frozen", True, raising=False)
        assert not ahead.use("auto", many, cpus=2)


def test_planned_ahead_stores_what_planned_here_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "docs")
    there, here = _settings(tmp_path / "a"), _settings(tmp_path / "b")
    limits = StoreLimits(max_batch=100, max_document_bytes=1100, name="Small store")
    monkeypatch.setattr(ingest_mod.Ingestor, "limits", lambda self, options: limits)
    started: list[object] = []
    worker = ahead._Worker
    monkeypatch.setattr(ahead, "_Worker", lambda job: started.append(job) or worker(job))

    def both() -> IngestSummary:
        one = _run(root, there, "on")
        two = _run(root, here, "off")
        assert _figures(one) == _figures(two)
        assert snapshot(there) == snapshot(here)
        assert _manifest(there) == _manifest(here)
        return one

    cold = both()
    assert len(started) == 1
    assert cold.files_new == FILES + 3  # the report, its sidecar, broken.py
    assert cold.files_skipped == {"private": 1, "binary": 1, "too-large-for-store": 1}
    assert cold.documents_read == {"pdf": 1} and cold.pages_read == 5
    assert _manifest(there)["report.md"][5] == "report.pdf"
    # an edit, a rename, a deletion, a touch, a new file, the sidecar's tags
    (root / "d0" / "f001.md").write_text("# File 1\n\nEdited.\n")
    (root / "d0" / "f002.md").rename(root / "d0" / "moved.md")
    (root / "d1" / "f010.md").unlink()
    (root / "d2" / "f020.md").write_text((root / "d2" / "f020.md").read_text())
    (root / "d2" / "new.md").write_text("# New\n\nA new file.\n")
    sidecar = root / "report.md"
    sidecar.write_text(sidecar.read_text().replace("[annual]", "[annual, final]"))
    age_tree(root, 1_650_000_000)
    warm = both()
    assert len(started) == 2
    assert (warm.files_new, warm.files_deleted) == (2, 2)
    assert warm.files_updated >= 2 and warm.chunks_embedded < cold.chunks_embedded
    # the document alone changes: its unchanged sidecar is read too (a group read), with
    # the manifest row the worker was sent for it
    shutil.copy(OTHER_PDF, root / "report.pdf")
    set_mtime(root / "report.pdf", 1_700_000_000)
    again = both()
    assert len(started) == 3
    assert again.files_updated == 1 and again.documents_read == {"pdf": 1}
    assert again.pages_read == 2


def test_the_worker_is_sent_the_rows_it_can_read() -> None:
    def row(path: str, asset: str = "") -> FileState:
        return FileState(path, 1, 1, "h", 1, 1, (), asset=asset)

    manifest = {p: row(p) for p in ("a.md", "b.md", "c.md", "doc.pdf", "deck.pptx")} | {
        "side.md": row("side.md", asset="doc.pdf")
    }
    stat = FileStat("a.md", "/x/a.md", 1, 2)
    sorted_ = Triage(unchanged=("b.md", "c.md"), remembered_skips={}, to_read=(stat,), gone=())
    sent = ahead.readable_rows(manifest, sorted_)
    assert sorted(sent) == ["a.md", "deck.pptx", "doc.pdf", "side.md"]


def test_progress_and_log_records_come_from_the_worker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = _tree(tmp_path / "docs")
    events: list[tuple[str, int, int]] = []
    caplog.set_level(logging.DEBUG, logger="chromasync")
    _run(
        root,
        _settings(tmp_path / "data"),
        "on",
        progress=lambda phase, done, total: events.append((phase, done, total)),
    )
    reads = [e for e in events if e[0] == "read"]
    assert reads and reads[0][2] >= FILES
    said = [r.getMessage() for r in caplog.records if r.name == "chromasync.chunk.code"]
    assert said == ["broken.py: syntax errors at the top level; splitting by lines"]


def test_an_error_in_the_worker_is_the_same_error_here(tmp_path: Path) -> None:
    root = _tree(tmp_path / "docs")
    missing = str(tmp_path / "no-such-tokenizer.json")
    errors = []
    for mode, data in (("on", "a"), ("off", "b")):
        settings = _settings(tmp_path / data)
        with pytest.raises(EmbeddingError) as caught:
            api.ingest(
                [api.source_for(root, "docs")],
                settings,
                default_options(settings, plan_ahead=mode),
                embedder=HashEmbedder(tokenizer_path=missing),
            )
        errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1]
    assert "no-such-tokenizer.json" in errors[0][1]


#: The real worker, cut off after its first two frames of changes: it dies mid-frame, with
#: exit code 3.
CUT_SHORT = """
import pickle, subprocess, sys
real = subprocess.Popen(sys.argv[1:], stdin=sys.stdin, stdout=subprocess.PIPE)
out, sent = sys.stdout.buffer, 0
while sent < 2:
    frame = pickle.load(real.stdout)
    sent += frame[0] == "changes"
    pickle.dump(frame, out)
out.write(pickle.dumps(pickle.load(real.stdout))[:20])
out.flush()
real.kill()
sys.exit(3)
"""


def test_a_worker_that_dies_fails_the_run_and_the_next_run_heals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "docs")
    for n in range(200):  # more than two frames' worth
        (root / "more" / f"m{n:03}.md").parent.mkdir(exist_ok=True)
        (root / "more" / f"m{n:03}.md").write_text(f"# More {n}\n\nMore text {n}.\n")
    age_tree(root)
    settings = _settings(tmp_path / "data")
    real = ahead.command()
    monkeypatch.setattr(ahead, "command", lambda: [sys.executable, "-c", CUT_SHORT, *real])
    with pytest.raises(SourceError, match="exit code 3"):
        _run(root, settings, "on")
    with State.open(settings.data_dir) as state:
        written = state.files(settings.collection, "docs")
        source = state.source(settings.collection, "docs")
    assert 0 < len(written) < FILES + 200  # waves before the death were written
    assert source is not None and source.status == "running"
    monkeypatch.undo()
    healed = _run(root, settings, "on")
    assert healed.files_new + healed.files_unchanged == FILES + 204
    clean = _settings(tmp_path / "clean")
    _run(root, clean, "off")
    assert snapshot(settings) == snapshot(clean)
    assert _manifest(settings) == _manifest(clean)
    [check] = api.verify(settings)
    assert check.ok


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["no-such-python"], "cannot start the planning process"),
        ([sys.executable, "-c", "import sys; sys.exit(5)"], "ended at its start (exit code 5)"),
    ],
)
def test_a_worker_that_cannot_begin_leaves_the_planning_here(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    command: list[str],
    said: str,
) -> None:
    root = _tree(tmp_path / "docs")
    if command[0] == "no-such-python":
        command = [str(tmp_path / "no-such-python")]
    monkeypatch.setattr(ahead, "command", lambda: command)
    there, here = _settings(tmp_path / "a"), _settings(tmp_path / "b")
    one, two = _run(root, there, "on"), _run(root, here, "off")
    assert _figures(one) == _figures(two)
    assert snapshot(there) == snapshot(here)
    assert _manifest(there) == _manifest(here)
    assert said in caplog.text and "planning in this one" in caplog.text


def test_a_worker_whose_parent_is_gone_ends(tmp_path: Path) -> None:
    """The pipe closes with its reader: the worker's next frame fails and it exits."""
    root = tmp_path / "docs"
    root.mkdir()
    for n in range(400):
        (root / f"f{n:03}.md").write_text(f"# File {n}\n\n" + f"Words of file {n}. " * 60)
    jobs: list[ahead.AheadJob] = []
    real = ahead._Worker

    def capture(job: ahead.AheadJob) -> object:
        jobs.append(job)
        return real(job)

    settings = _settings(tmp_path / "data")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ahead, "_Worker", capture)
        _run(root, settings, "on")
    [job] = jobs
    proc = subprocess.Popen(
        ahead.command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdin is not None and proc.stdout is not None
    assert job.nice == 0  # the hash provider runs on no cores of its own
    with proc.stdin:
        pickle.dump(replace(job, nice=ahead.NICE), proc.stdin)
    first = pickle.load(proc.stdout)
    assert first[0] in ("read", "changes")  # nothing but frames on the pipe
    if hasattr(os, "getpriority"):  # beside a model on this machine's cores, it yields
        assert os.getpriority(os.PRIO_PROCESS, proc.pid) == ahead.NICE
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0


def test_the_worker_runs_this_checkout_and_never_puts_site_packages_first() -> None:
    src = Path("/work/checkout/src")
    assert ahead.child_env(src, {"PYTHONPATH": "/x"})["PYTHONPATH"] == f"{src}{os.pathsep}/x"
    assert ahead.child_env(src, {})["PYTHONPATH"] == str(src)
    installed = Path("/venv/lib/python3.11/site-packages")
    assert "PYTHONPATH" not in ahead.child_env(installed, {"HOME": "/h"})
    assert ahead.child_env(installed, {"PYTHONPATH": "/x"})["PYTHONPATH"] == "/x"


def test_merge_counts_keeps_the_skips_added_here() -> None:
    run = Tally()
    run.skipped.update({"binary": 1, "private": 2})
    before = run.skipped.copy()
    planned = Tally()
    planned.skipped.update({"binary": 1, "too-slow": 1})  # private ones read again: gone
    planned.files_unchanged, planned.pages = 7, 5
    planned.documents.update({"pdf": 1})
    run.skipped["too-large-for-store"] += 1  # fitted here while the worker planned
    ahead.merge_counts(run, before, planned)
    assert run.skipped == {"binary": 1, "too-slow": 1, "too-large-for-store": 1}
    assert (run.files_unchanged, run.pages, dict(run.documents)) == (7, 5, {"pdf": 1})


# A run that fails (a full disk) while its worker reads, its planner left in a reference
# cycle that only the collection at interpreter shutdown ends: `stop` used to run then, and
# the process aborted (exit 134, "_enter_buffered_busy ... daemon threads").
FAILS_WHILE_PLANNING = """
import os, sys
from chromasync.sync import ahead
child = "import pickle, sys, time; sys.stdin.buffer.read(); " \\
    "pickle.dump(('read', 1, 2), sys.stdout.buffer); sys.stdout.flush(); time.sleep(30)"
ahead.command = lambda: [sys.executable, "-c", child]

def changes():
    worker = ahead._Worker(None)
    try:
        while True:
            yield worker.next()
    finally:
        worker.stop()

def run():
    planner = changes()
    print(next(planner), flush=True)
    try:
        raise OSError(28, "No space left on device")
    except OSError as exc:
        cycle = exc  # this frame holds the error, whose traceback holds this frame
        raise SystemExit("error: the disk holding the data dir is full") from exc

run()
"""


def test_a_run_failing_while_its_worker_reads_exits_without_aborting(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text(FAILS_WHILE_PLANNING)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60
    )
    assert "Fatal Python error" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr
    assert "the data dir is full" in done.stderr and "('read', 1, 2)" in done.stdout


def test_a_failed_write_stops_the_worker_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The error (kept here, with its traceback and so the planner's frames) does not keep
    the worker running: the run closes its planner when a write fails."""
    root = tmp_path / "docs"
    root.mkdir()
    for n in range(60):
        (root / f"f{n:03}.md").write_text(f"# File {n}\n\n" + f"Words of file {n}. " * 60)

    def full(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(State, "commit_files", full)
    with pytest.raises(StoreError, match="is full") as info:
        _run(root, _settings(tmp_path / "data"), "on")
    assert not list(ahead._LIVE), info.value  # stopped, its process gone
