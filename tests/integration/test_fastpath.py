"""The fast path of an unchanged re-run, end to end through `python -m chromasync`.

It must answer exactly what the full path answers, and step aside whenever anything the
full path would look at changed: files, ignore rules, config, environment, the state, the
lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..conftest import SHARED, run_cli, set_mtime

FULL = {"CHROMASYNC_NO_FASTPATH": "1"}


def _ingest(
    root: Path, env: dict[str, str], *extra: str, cwd: Path | None = None
) -> tuple[dict[str, object], bool]:
    """Run `ingest ROOT --json`; the summary, and whether the fast path answered it."""
    done = run_cli(
        ["ingest", str(root), "--json", "--quiet", *extra],
        env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "chromasync.fastpath" in imported
    [summary] = json.loads(done.stdout)  # a list for one source as for many
    return summary, "click" not in imported


def _without_time(summary: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in summary.items() if k != "duration_ms"}


def test_the_fast_answer_is_the_full_answer(notes: Path, cli_env: dict[str, str]) -> None:
    (notes / "image.png").write_bytes(b"\x89PNG\r\n")
    (notes / ".draft.md").write_text("# hidden\n")
    first, fast = _ingest(notes, cli_env)
    assert not fast and first["files_new"] == 5
    full, fast = _ingest(notes, {**cli_env, **FULL})
    assert not fast
    again, fast = _ingest(notes, cli_env)  # the full path, recording its no-op
    assert not fast and _without_time(again) == _without_time(full)
    quick, fast = _ingest(notes, cli_env)
    assert fast and _without_time(quick) == _without_time(full)
    assert quick["files_unchanged"] == 5 and quick["files_skipped"] == {"binary": 1, "hidden": 1}

    plain = run_cli(["ingest", str(notes)], env={**cli_env, **FULL}).stdout
    run_cli(["ingest", str(notes)], env=cli_env)  # records the plain command line's no-op
    fast_plain = run_cli(["ingest", str(notes)], env={**cli_env, "PYTHONPROFILEIMPORTTIME": "1"})
    assert "click" not in fast_plain.stderr
    assert _no_times(fast_plain.stdout) == _no_times(plain) and "5 unchanged" in plain

    status = run_cli(["status", "--json"], env=cli_env)
    row = json.loads(status.stdout)["sources"][0]
    stamp = max(p.stat().st_mtime_ns for p in (cli_env_dir(cli_env) / "fastpath").glob("*.ran"))
    assert row["last_finished_ns"] == stamp and row["last_outcome"] == "ok"


def _no_times(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("  time"))


def cli_env_dir(env: dict[str, str]) -> Path:
    return Path(env["CHROMASYNC_DATA_DIR"])


def _settle(root: Path, env: dict[str, str]) -> None:
    """Two runs: the first may do work, the second records the no-op; the next is fast."""
    _ingest(root, env)
    _ingest(root, env)
    assert _ingest(root, env)[1], "the fast path did not answer an unchanged re-run"


def test_every_change_goes_to_the_full_path(notes: Path, cli_env: dict[str, str]) -> None:
    _settle(notes, cli_env)
    page = sorted(notes.rglob("*.md"))[0]
    text = page.read_text()

    # a same-size rewrite with the old mtime put back: only ctime tells
    body = text.rstrip("\n")
    page.write_text(body[:-1] + ("x" if body[-1] != "x" else "y") + text[len(body) :])
    set_mtime(page, 1_600_000_000)
    summary, fast = _ingest(notes, cli_env)
    assert not fast and summary["files_updated"] == 1 and summary["chunks_embedded"] >= 1
    _settle(notes, cli_env)

    (notes / "new.md").write_text("# New\n\nA new page.\n")
    set_mtime(notes / "new.md", 1_600_000_000)
    summary, fast = _ingest(notes, cli_env)
    assert not fast and summary["files_new"] == 1
    _settle(notes, cli_env)

    (notes / "new.md").rename(notes / "renamed.md")
    summary, fast = _ingest(notes, cli_env)
    assert not fast and summary["files_new"] == 1 and summary["files_deleted"] == 1
    _settle(notes, cli_env)

    (notes / ".gitignore").write_text("renamed.md\n")
    summary, fast = _ingest(notes, cli_env)
    assert not fast and summary["files_deleted"] == 1
    _settle(notes, cli_env)

    (notes / "renamed.md").unlink()
    (notes / ".gitignore").unlink()
    summary, fast = _ingest(notes, cli_env)
    assert not fast and summary["files_seen"] == 5
    _settle(notes, cli_env)

    # settings: the environment, then the state file itself
    other = {**cli_env, "CHROMASYNC_COLLECTION": "elsewhere"}
    summary, fast = _ingest(notes, other)
    assert not fast and summary["files_new"] == 5 and summary["collection"] == "elsewhere"
    _settle(notes, cli_env)
    data = cli_env_dir(cli_env)
    for name in ("state.sqlite3", "state.sqlite3-wal", "state.sqlite3-shm"):
        (data / name).unlink(missing_ok=True)
    summary, fast = _ingest(notes, cli_env)
    assert not fast and summary["files_unchanged"] == 5 and summary["chunks_embedded"] == 0
    assert (data / "state.sqlite3").exists()  # rebuilt from the collection, not skipped
    _settle(notes, cli_env)


def test_a_racily_clean_file_is_not_trusted(notes: Path, cli_env: dict[str, str]) -> None:
    _settle(notes, cli_env)
    page = sorted(notes.rglob("*.md"))[0]
    page.write_text(page.read_text() + "\nMore.\n")
    # An mtime inside the racy window of the read, whatever the load: a minute ahead (a
    # plain "now" leaves the window when the run starts more than a second later).
    set_mtime(page, int(time.time()) + 60)
    summary, fast = _ingest(notes, cli_env)
    assert not fast and summary["files_updated"] == 1
    # modified within a second of being read: the next run must hash it again
    assert not list((cli_env_dir(cli_env) / "fastpath").glob("*.snap"))


def test_config_files_and_writers_void_the_snapshot(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    project = tmp_path / "project"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "notes", project / "notes")
    for path in project.rglob("*.md"):
        set_mtime(path, 1_600_000_000)
    config = project / "chromasync.yaml"
    config.write_text("version: 1\nsources:\n  - {label: notes, path: notes, include: true}\n")
    env = {k: v for k, v in cli_env.items() if k != "CHROMASYNC_DATA_DIR"}
    env["CHROMASYNC_CONFIG"] = ""

    def ingest() -> tuple[dict[str, object], bool]:
        done = run_cli(
            ["ingest", "--json"], env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, cwd=project
        )
        assert done.returncode == 0, done.stderr
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
        [row] = json.loads(done.stdout)
        return row, "click" not in imported

    summary, fast = ingest()
    assert not fast and summary["files_new"] == 5
    summary, fast = ingest()  # the first run recorded what its re-run would say
    assert fast and summary["files_unchanged"] == 5  # data dir ./.chromasync, found by guess

    config.write_text(config.read_text() + "privacy_keys: [private, secret]\n")
    assert not ingest()[1]
    assert ingest()[1]

    # any writer takes the lock, and so voids the snapshot: here `verify`
    assert run_cli(["verify"], env=env, cwd=project).returncode == 0
    assert not ingest()[1]

    # a holder of the lock: the full path answers, naming it
    lock = os.open(project / ".chromasync" / "lock", os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        refused = run_cli(["ingest", "--json"], env=env, cwd=project)
        assert refused.returncode == 1 and "in use" in refused.stderr
    finally:
        os.close(lock)
    assert ingest()[1]

    # a killed run leaves no snapshot behind: its lock voided it before it wrote
    page = project / "notes" / sorted(p.name for p in (project / "notes").glob("*.md"))[0]
    page.write_text(page.read_text() + "\nOne more line.\n")
    set_mtime(page, 1_600_000_000)
    killed = run_cli(
        ["ingest", "--json"], env={**env, "CHROMASYNC_CRASH_AT": "after-upsert"}, cwd=project
    )
    assert killed.returncode != 0
    assert not list((project / ".chromasync" / "fastpath").glob("*.snap"))
    summary, fast = ingest()
    assert not fast and summary["files_updated"] == 1


def test_an_edited_sources_file_voids_the_snapshot(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """The key names the config file's bytes, not those of the sources file it names (or
    `--sources-file` names); the snapshot checks the files the settings were read from, so
    a source added there is ingested, by either way of naming the file."""
    project = tmp_path / "project"
    for name in ("a", "b"):
        (project / name).mkdir(parents=True)
        page = project / name / f"{name}.md"
        page.write_text(f"# {name}\n\nA page of {name}.\n")
        set_mtime(page, 1_600_000_000)
    listed = project / "content-sources.md"
    entry = "  - {{path: ./{0}, label: {0}, include: true}}\n"
    one = "---\ncontent_sources:\n" + entry.format("a") + "---\n"
    both = "---\ncontent_sources:\n" + entry.format("a") + entry.format("b") + "---\n"
    env = {k: v for k, v in cli_env.items() if k != "CHROMASYNC_DATA_DIR"}
    env["CHROMASYNC_CONFIG"] = ""

    def ingest(*extra: str) -> tuple[list[str], bool]:
        done = run_cli(
            ["ingest", "--json", *extra], env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, cwd=project
        )
        assert done.returncode == 0, done.stderr
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
        return sorted(r["source"] for r in json.loads(done.stdout)), "click" not in imported

    named = (("sources_file: content-sources.md\n", ()), (None, ("--sources-file", str(listed))))
    for config, extra in named:
        shutil.rmtree(project / ".chromasync", ignore_errors=True)
        (project / "chromasync.yaml").unlink(missing_ok=True)
        if config is not None:
            (project / "chromasync.yaml").write_text("version: 1\n" + config)
        listed.write_text(one)
        assert ingest(*extra) == (["a"], False)
        assert ingest(*extra) == (["a"], True)
        listed.write_text(both)
        assert ingest(*extra) == (["a", "b"], False), extra


def test_the_fast_path_opens_no_indexed_file(notes: Path, cli_env: dict[str, str]) -> None:
    _settle(notes, cli_env)
    probe = r"""
import sys
root = sys.argv[1]
opened = []
def hook(event, args):
    if event in ("open", "os.open") and isinstance(args[0], str) and args[0].startswith(root):
        opened.append(args[0])
sys.addaudithook(hook)
sys.argv = ["chromasync", "ingest", root, "--json", "--quiet"]
from chromasync.fastpath import main
code = main()
modules = sorted(sys.modules)
import json
print(json.dumps({"opened": opened, "code": code, "modules": modules}), file=sys.stderr)
"""
    env = {**os.environ, **cli_env}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    done = subprocess.run(
        [sys.executable, "-c", probe, str(notes)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0 and report["opened"] == []
    assert json.loads(done.stdout)[0]["files_unchanged"] == 5
    ours = {m for m in report["modules"] if m.startswith("chromasync")}
    # The stage packages' __init__ hold a docstring only (test_layers keeps them so).
    # (`--json`: the plain-lines renderer `sync.summary` and the search fast path stay out)
    lean = {
        "fastpath",
        "cmdline",
        "datadir",
        "versions",
        "corpus",
        "corpus.listing",
        "state",
        "state.snapshots",
    }
    assert ours == {"chromasync"} | {f"chromasync.{m}" for m in lean}
    assert not {"click", "rich", "sqlite3", "json", "dataclasses"} & set(report["modules"])


def test_after_any_run_the_full_path_finds_nothing_to_do(
    notes: Path, cli_env: dict[str, str]
) -> None:
    """Random edits, each followed by two runs that may take the fast path; the full path
    must then find nothing left to do (had a fast answer hidden a change, it would)."""
    import random

    rng = random.Random(20261130)
    (notes / "build").mkdir()
    (notes / ".gitignore").write_text("build/\n")

    def pages() -> list[Path]:
        return sorted(p for p in notes.rglob("*.md") if "build" not in p.parts)

    def old(path: Path) -> None:
        set_mtime(path, 1_600_000_000 + rng.randrange(1000))

    def same_size_rewrite() -> None:
        page = rng.choice(pages())
        text = page.read_text()
        body = text.rstrip("\n")
        page.write_text(body[:-1] + ("x" if body[-1] != "x" else "y") + text[len(body) :])
        old(page)

    def append() -> None:
        page = rng.choice(pages())
        page.write_text(page.read_text() + f"\nAdded line {rng.random()}.\n")
        if rng.random() < 0.5:
            old(page)

    def create() -> None:
        folder = notes / rng.choice(["", "sub", "sub/deeper"])
        folder.mkdir(parents=True, exist_ok=True)
        page = folder / f"new-{rng.randrange(10**6)}.md"
        page.write_text(f"# New {page.stem}\n\nText {rng.random()}.\n")
        old(page)

    def delete() -> None:
        if len(pages()) > 2:
            rng.choice(pages()).unlink()

    def rename() -> None:
        page = rng.choice(pages())
        page.rename(page.with_name(f"renamed-{rng.randrange(10**6)}.md"))

    def rename_folder() -> None:
        if (notes / "sub").exists():
            (notes / "sub").rename(notes / f"sub-{rng.randrange(10**6)}")

    def chmod() -> None:
        page = rng.choice(pages())
        page.chmod(0o600 if page.stat().st_mode & 0o004 else 0o644)

    def ignored_and_hidden() -> None:
        (notes / "build" / f"out-{rng.randrange(10**6)}.md").write_text("# built\n")
        (notes / ".scratch").write_text(str(rng.random()))

    def gitignore() -> None:
        page = rng.choice(pages())
        rule = page.relative_to(notes).as_posix()
        text = (notes / ".gitignore").read_text()
        (notes / ".gitignore").write_text(text + rule + "\n" if rule not in text else "build/\n")

    def symlink_swap() -> None:
        page = rng.choice(pages())
        target = rng.choice(pages())
        if page != target:
            page.unlink()
            page.symlink_to(target)

    edits = [
        same_size_rewrite,
        append,
        create,
        delete,
        rename,
        rename_folder,
        chmod,
        ignored_and_hidden,
        gitignore,
        symlink_swap,
        lambda: None,
    ]
    _ingest(notes, cli_env)
    fast_answers = 0
    for step in range(14):
        edit = rng.choice(edits)
        edit()
        for _ in range(2):
            fast_answers += _ingest(notes, cli_env)[1]
        check, fast = _ingest(notes, {**cli_env, **FULL})
        assert not fast
        work = {k: check[k] for k in ("files_new", "files_updated", "files_deleted")}
        assert work == {"files_new": 0, "files_updated": 0, "files_deleted": 0}, (step, edit)
        assert check["chunks_embedded"] == 0 and check["chunks_deleted"] == 0, (step, edit)
    assert fast_answers >= 10  # the fast path did answer most re-runs


def test_the_nasty_corpus_through_the_fast_path(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """Odd names, symlinks of every kind, FIFOs, unreadable files: the fast answer is the
    full one, and the corpus's own mutations all reach the full path."""
    tool = SHARED / "tools" / "make_nasty_corpus.py"
    out = tmp_path / "nasty"
    subprocess.run([sys.executable, str(tool), str(out)], check=True, capture_output=True)
    corpus = out / "corpus"
    _ingest(corpus, cli_env)
    full, _ = _ingest(corpus, {**cli_env, **FULL})
    _ingest(corpus, cli_env)  # the full path again, recording
    quick, fast = _ingest(corpus, cli_env)
    assert fast and _without_time(quick) == _without_time(full)
    assert quick["files_skipped"]["symlink-loop"] > 0

    subprocess.run(
        [sys.executable, str(tool), str(out), "--mutate"], check=True, capture_output=True
    )
    changed, fast = _ingest(corpus, cli_env)
    assert not fast and changed["chunks_embedded"] > 0
    _ingest(corpus, cli_env)
    check, _ = _ingest(corpus, {**cli_env, **FULL})
    assert (check["files_new"], check["files_updated"], check["files_deleted"]) == (0, 0, 0)


def test_a_snapshot_that_cannot_be_written_fails_nothing(
    notes: Path, cli_env: dict[str, str]
) -> None:
    data = cli_env_dir(cli_env)
    data.mkdir(parents=True)
    (data / "fastpath").write_text("a file where the folder goes\n")
    first, _ = _ingest(notes, cli_env)
    again, fast = _ingest(notes, cli_env)
    assert first["files_new"] == 5 and again["files_unchanged"] == 5 and not fast


def test_several_sources_in_several_collections(tmp_path: Path, cli_env: dict[str, str]) -> None:
    project = tmp_path / "project"
    examples = Path(__file__).resolve().parents[2] / "examples" / "notes"
    shutil.copytree(examples, project / "notes")
    shutil.copytree(examples / "guides", project / "docs")
    for path in project.rglob("*.md"):
        set_mtime(path, 1_600_000_000)
    (project / "chromasync.yaml").write_text(
        "version: 1\nsources:\n"
        "  - {label: notes, path: notes, include: true}\n"
        "  - {label: docs, path: docs, kind: docs, include: true}\n"
    )
    env = {k: v for k, v in cli_env.items() if k != "CHROMASYNC_COLLECTIONS"}
    env["CHROMASYNC_CONFIG"] = ""

    def ingest(extra: dict[str, str]) -> tuple[list[dict[str, object]], bool]:
        done = run_cli(
            ["ingest", "--json"],
            env={**env, **extra, "PYTHONPROFILEIMPORTTIME": "1"},
            cwd=project,
        )
        assert done.returncode == 0, done.stderr
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
        return json.loads(done.stdout), "click" not in imported

    first, fast = ingest({})
    assert not fast and [s["collection"] for s in first] == ["chromasync-notes", "chromasync-docs"]
    full, _ = ingest(FULL)
    ingest({})
    quick, fast = ingest({})
    assert fast and [_without_time(s) for s in quick] == [_without_time(s) for s in full]
    plain = run_cli(["ingest"], env={**env, **FULL}, cwd=project).stdout
    run_cli(["ingest"], env=env, cwd=project)
    fast_plain = run_cli(["ingest"], env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, cwd=project)
    assert "click" not in fast_plain.stderr and "\ntotal\n" in plain
    assert _no_times(fast_plain.stdout) == _no_times(plain)
