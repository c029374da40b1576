"""The operator's workflow on a monorepo-like tree built from hugo-docs and SciFact copies:
discover, curate, ingest exactly the curated roots, restrict, gc-only, privacy, remove."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from chromasync import api
from chromasync.cli.main import main

from ..conftest import SHARED, age_tree, set_mtime

BODY = "\n# Curation notes\r\n\nKeep *hugo* small; SciFact is a test set.  \n\n- trailing\n"


@pytest.fixture(scope="module")
def scifact_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tool = SHARED / "tools" / "materialize_scifact.py"
    if not tool.is_file():
        pytest.skip("materialize_scifact.py is not present")
    out = tmp_path_factory.mktemp("scifact") / "scifact"
    subprocess.run(
        [sys.executable, str(tool), str(out), "--limit", "300"], check=True, capture_output=True
    )
    return out


@pytest.fixture
def mono(tmp_path: Path, hugo_copy: Path, scifact_files: Path) -> Path:
    root = tmp_path / "mono"
    shutil.copytree(hugo_copy, root / "sites" / "hugo")
    shutil.copytree(scifact_files, root / "data" / "scifact")
    (root / "README.md").write_text("# Monorepo\n")
    (root / "notes").mkdir()
    for i in range(3):  # too few to be a content root
        (root / "notes" / f"n{i}.md").write_text(f"# N{i}\n")
    for build in (
        "apps/web/node_modules/pkg",
        "apps/web/dist/docs",
        "build/docs",
        ".venv/lib/python3.11/site-packages/pkg",
        "tools/env/share/doc",
        "sites/hugo/public/en",
    ):
        folder = root / build
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(12):
            (folder / f"page{i}.md").write_text(f"# Build output {i}\n")
    (root / "tools" / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    age_tree(root)
    return root


def run(args: list[str], cwd: Path, **env: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        main, args, env={"CHROMASYNC_CONFIG": "", "COLUMNS": "250", **env}, catch_exceptions=False
    )
    return result.exit_code, result.stdout, result.stderr


def test_monorepo_workflow(mono: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "ops"
    work.mkdir()
    monkeypatch.chdir(work)
    sources = work / "content-sources.md"
    sources.write_bytes(("---\n# curated by hand\ncontent_sources: []\n---\n" + BODY).encode())
    data = str(tmp_path / "data")
    common = ["--sources-file", str(sources), "--data-dir", data, "--provider", "hash"]

    code, out, err = run(["discover", str(mono), "--json", *common], work)
    assert code == 0, err
    found = json.loads(out)
    rel = sorted(str(Path(p).relative_to(mono)) for p in found["candidates"])
    assert rel == ["data/scifact", "sites/hugo/content"]
    assert len(found["added"]) == 2 and found["known"] == []
    first = sources.read_bytes()
    assert first.endswith(BODY.encode()) and b"# curated by hand" in first
    assert first.count(b"include: false") == 2

    code, out, err = run(["discover", str(mono), *common], work)
    assert code == 0, err
    assert "0 added, 2 already listed" in out
    assert sources.read_bytes() == first  # idempotent, byte for byte

    # Curate: SciFact in full, the hugo tree restricted to one section.
    text = first.decode()
    text = re.sub(
        r"(path: \S+/data/scifact\n\s+kind: )docs(\n\s+include: )false",
        r"\1papers\2true",
        text,
    )
    text = re.sub(
        r"(path: \S+/sites/hugo/content\n\s+label: hugo/content\n\s+kind: docs\n"
        r"(\s+)include: )false",
        r"\1true\n\2subdirs: [en/commands]",
        text,
    )
    assert text.count("include: true") == 2, text
    sources.write_bytes(text.encode())

    code, out, err = run(["ingest", "--json", "-q", *common], work)
    assert code == 0, err
    summaries = {s["source"]: s for s in json.loads(out)}
    assert set(summaries) == {"scifact", "hugo/content"}
    assert summaries["scifact"]["files_new"] == 300
    assert summaries["scifact"]["collection"] == "chromasync-papers"
    settings = api.configure({"data_dir": data, "provider": "hash"}, {}, work, sources_file=sources)

    def paths(collection: str) -> set[str]:
        store = api.open_store(settings)
        return {
            str(r.metadata["path"])
            for r in store.collection(collection, create=False).iter_records()
        }

    hugo_paths = paths("chromasync-docs")
    assert hugo_paths and all(p.startswith("en/commands/") for p in hugo_paths)
    assert len(paths("chromasync-papers")) == 300
    assert sources.read_bytes().endswith(BODY.encode())

    # --source restricts the run to one source.
    code, out, err = run(["ingest", "--source", "hugo/content", "--json", "-q", *common], work)
    assert code == 0, err
    [only] = json.loads(out)
    assert only["source"] == "hugo/content" and only["files_unchanged"] == len(hugo_paths)

    # --gc-only deletes what left the disk, and nothing else happens.
    papers = sorted((mono / "data" / "scifact").glob("*.md"))
    for gone in papers[:5]:
        gone.unlink()
    edited = papers[10]
    edited.write_text("# Edited\n\nnew words that must not be indexed by gc-only\n")
    set_mtime(edited, 1_700_000_000)
    secret = mono / "data" / "scifact" / "zz-private.md"
    secret.write_text("---\nPRIVATE: yes\n---\n# Secret\n\nprivate-canary-monorepo\n")
    code, out, err = run(["ingest", "--gc-only", "--source", "scifact", "--json", *common], work)
    assert code == 0, err
    [gc] = json.loads(out)
    assert gc["files_deleted"] == 5 and gc["files_new"] == 0 and gc["chunks_embedded"] == 0
    left = paths("chromasync-papers")
    assert len(left) == 295 and edited.name in left
    assert not {p.name for p in papers[:5]} & left

    code, out, err = run(["ingest", "--source", "scifact", "--json", *common], work)
    assert code == 0, err
    [full] = json.loads(out)
    assert full["files_updated"] == 1 and full["files_skipped"]["private"] == 1
    store = api.open_store(settings)
    docs = store.collection("chromasync-papers", create=False).iter_records(documents=True)
    texts = [r.document or "" for r in docs]
    assert any("must not be indexed by gc-only" in t for t in texts)
    assert not any("private-canary-monorepo" in t for t in texts)

    # Removing one source leaves the other intact.
    before = paths("chromasync-docs")
    code, out, err = run(["sources", "remove", "scifact", *common], work)
    assert code == 0, err
    assert "declaration removed" in out
    # its collection held nothing else: dropped, not left empty (issue 29)
    assert "dropped the emptied collection(s) chromasync-papers" in out
    assert "chromasync-papers" not in api.open_store(settings).list_collections()
    assert paths("chromasync-docs") == before
    after = sources.read_bytes()
    assert after.endswith(BODY.encode()) and b"scifact" not in after
    assert b"# curated by hand" in after
