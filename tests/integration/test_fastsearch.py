"""The keyword-search fast path, end to end through `python -m chromasync`.

A keyword search answered from the state's FTS5 index by a fresh process must print what
the full path prints (`--json` byte for byte, plain lines in a pipe), load no chromadb,
model, click or rich, and step aside whenever the full path would decide differently: a
writer ran, a service owns the data dir, the index does not cover the collection.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import run_cli

FULL = {"CHROMASYNC_NO_FASTPATH": "1"}
HEAVY = ("chromadb", "onnxruntime", "click", "rich", "pydantic", "yaml", "numpy", "httpx")


@pytest.fixture(autouse=True)
def _embedded_only(server_flags: dict[str, str]) -> None:
    if server_flags:
        pytest.skip("the fast path serves embedded stores only (a server changes unlocked)")


def _search(env: dict[str, str], query: str, *extra: str) -> tuple[str, bool]:
    """Run `search QUERY --mode keyword`; its stdout, and whether the fast path answered."""
    done = run_cli(
        ["search", query, "--mode", "keyword", *extra],
        env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
    )
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "chromasync.fastsearch" in imported
    return done.stdout, "click" not in imported


def _ingest(notes: Path, env: dict[str, str]) -> None:
    done = run_cli(["ingest", str(notes), "--json", "--quiet"], env={**env, **FULL})
    assert done.returncode == 0, done.stderr


def _full(env: dict[str, str], query: str, *extra: str) -> str:
    done = run_cli(["search", query, "--mode", "keyword", *extra], env={**env, **FULL})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_fast_answer_is_the_full_answer(notes: Path, cli_env: dict[str, str]) -> None:
    _ingest(notes, cli_env)
    for extra in (("--json",), ("--json", "--k", "3", "--per-doc"), ()):
        first, fast = _search(cli_env, "grinder calibration", *extra)  # records
        assert not fast
        assert first == _full(cli_env, "grinder calibration", *extra)
        for query in ("sourdough starter", "ride", "nothing-matches-this-word"):
            quick, fast = _search(cli_env, query, *extra)
            assert fast, (query, extra)
            assert quick == _full(cli_env, query, *extra)
    assert json.loads(_search(cli_env, "sourdough", "--json")[0])["hits"]
    assert _search(cli_env, "nothing-matches-this-word")[0] == "no hits\n"


def test_filters_are_recorded_with_the_command_line(notes: Path, cli_env: dict[str, str]) -> None:
    _ingest(notes, cli_env)
    extra = ("--json", "--path", "*.md", "--where", "source_kind=notes")
    _search(cli_env, "coffee", *extra)
    quick, fast = _search(cli_env, "bread", *extra)
    assert fast and quick == _full(cli_env, "bread", *extra)
    other, fast = _search(cli_env, "bread", "--json", "--path", "nothing/*.md")
    assert not fast and json.loads(other)["hits"] == []  # another command line: its own key


def test_a_writer_or_an_owner_sends_it_back_to_the_full_path(
    notes: Path, cli_env: dict[str, str]
) -> None:
    _ingest(notes, cli_env)
    _search(cli_env, "coffee", "--json")
    assert _search(cli_env, "bread", "--json")[1]
    page = next(iter(sorted(notes.rglob("*.md"))))
    page.write_text(page.read_text() + "\nA new word: zanzibarite.\n")
    _ingest(notes, cli_env)  # takes the lock: every snapshot goes
    found, fast = _search(cli_env, "zanzibarite", "--json")
    assert not fast and json.loads(found)["hits"]
    assert _search(cli_env, "zanzibarite", "--json")[1]

    data_dir = Path(cli_env["CHROMASYNC_DATA_DIR"])
    (data_dir / "owner.json").write_text("{}")  # a service's advertisement (stale here)
    assert not _search(cli_env, "bread", "--json")[1]
    (data_dir / "owner.json").unlink()
    assert _search(cli_env, "bread", "--json")[1]


def test_an_index_that_does_not_cover_the_collection_is_not_recorded(
    notes: Path, cli_env: dict[str, str]
) -> None:
    _ingest(notes, cli_env)
    state = Path(cli_env["CHROMASYNC_DATA_DIR"]) / "state.sqlite3"
    db = sqlite3.connect(state)
    with db:
        db.execute("DELETE FROM chunks WHERE rowid = (SELECT MIN(rowid) FROM chunks)")
    db.close()
    first, fast = _search(cli_env, "coffee", "--json")  # served by the mirror
    assert not fast
    again, fast = _search(cli_env, "coffee", "--json")
    assert not fast and again == first
    assert not list((Path(cli_env["CHROMASYNC_DATA_DIR"]) / "fastpath").glob("*.search"))


def test_editor_links_are_not_recorded(notes: Path, cli_env: dict[str, str]) -> None:
    """The fast path does not render `open_url`: with `editor_uri` set, nothing is recorded
    and every `--json` search keeps its links."""
    _ingest(notes, cli_env)
    env = {**cli_env, "CHROMASYNC_EDITOR_URI": "vscode://file{path}:{line}"}
    for query in ("grinder calibration", "sourdough starter"):
        found, fast = _search(env, query, "--json")
        hits = json.loads(found)["hits"]
        assert not fast and hits and all(h["open_url"].startswith("vscode://file/") for h in hits)
    assert not list((Path(cli_env["CHROMASYNC_DATA_DIR"]) / "fastpath").glob("*.search"))


def test_the_fast_path_loads_no_store_model_or_cli(notes: Path, cli_env: dict[str, str]) -> None:
    _ingest(notes, cli_env)
    _search(cli_env, "coffee", "--json")
    probe = r"""
import sys
imported = []
def hook(event, args):
    if event == "import":
        imported.append(args[0])
sys.addaudithook(hook)
sys.argv = ["chromasync", "search", "sourdough", "--mode", "keyword", "--json"]
from chromasync.fastpath import main
code = main()
import json
print(json.dumps({"code": code, "modules": sorted(sys.modules), "imported": imported}),
      file=sys.stderr)
"""
    env = {**os.environ, **cli_env}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0
    assert json.loads(done.stdout)["hits"]
    loaded = set(report["modules"]) | set(report["imported"])
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}
    ours = {m for m in loaded if m.startswith("chromasync.")}
    assert "chromasync.retrieve.engine" not in ours and "chromasync.api" not in ours
    assert "chromasync.retrieve.bm25" in ours
