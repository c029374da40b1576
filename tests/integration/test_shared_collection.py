"""Several ingesters (CI jobs of several repositories) writing different sources into one
shared collection on one Chroma server at the same time never damage each other's records.

Each process has its own data dir (manifest, cache, lock); the collection is shared. Record
IDs are namespaced by source label, healing reads `where source = label`, and deletions
name only the ingester's own IDs, so the runs commute: the result equals what clean solo
runs build, per source, whatever the interleaving.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chromasync.config.resolve import resolve_settings

from ..conftest import REPO, age_tree, oracle, set_mtime, snapshot, unique_collection
from ..servers import pythonpath_env

pytestmark = [pytest.mark.server, pytest.mark.slow]


def _corpus(root: Path, label: str, files: int) -> Path:
    root.mkdir(parents=True)
    shutil.copytree(REPO / "examples" / "notes", root / "notes")
    for i in range(files):
        (root / f"{label}-{i:03d}.md").write_text(
            f"# {label} note {i}\n\nBody of note {i} from {label}, about kites and tea.\n\n"
            f"## Details\n\nMore about {label} {i}.\n"
        )
    age_tree(root)
    return root


def _start(root: Path, label: str, data: Path, url: str, collection: str) -> subprocess.Popen[str]:
    env = pythonpath_env(REPO)
    env.update(
        {
            "CHROMASYNC_DATA_DIR": str(data),
            "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
            "CHROMASYNC_COLLECTIONS": "shared",
            "CHROMASYNC_COLLECTION": collection,
            "CHROMASYNC_CHROMA_URL": url,
        }
    )
    return subprocess.Popen(
        [sys.executable, "-m", "chromasync", "ingest", str(root), "--source", label, "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run_together(*procs: subprocess.Popen[str]) -> None:
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err


def _of(rows: dict[str, tuple[object, ...]], label: str) -> dict[str, tuple[object, ...]]:
    return {i: r for i, r in rows.items() if ("chromasync_source", label) in r[0]}  # type: ignore[operator]


def test_concurrent_ingesters_share_a_collection(tmp_path: Path, chroma_server: str) -> None:
    collection = unique_collection()
    a = _corpus(tmp_path / "repo-a", "alpha", 40)
    b = _corpus(tmp_path / "repo-b", "beta", 40)
    _run_together(
        _start(a, "alpha", tmp_path / "data-a", chroma_server, collection),
        _start(b, "beta", tmp_path / "data-b", chroma_server, collection),
    )
    shared = resolve_settings(
        {
            "data_dir": str(tmp_path / "reader"),
            "chroma_url": chroma_server,
            "collection": collection,
        },
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    rows = snapshot(shared)
    assert _of(rows, "alpha") == oracle(a, tmp_path / "oracle-a1", "alpha")
    assert _of(rows, "beta") == oracle(b, tmp_path / "oracle-b1", "beta")
    assert len(rows) == len(_of(rows, "alpha")) + len(_of(rows, "beta"))

    # round two, again at the same time: alpha deletes and edits, beta adds and edits
    for i in range(0, 40, 2):
        (a / f"alpha-{i:03d}.md").unlink()
    shutil.rmtree(a / "notes" / "journal")
    (a / "alpha-001.md").write_text("# alpha note 1\n\nRewritten entirely.\n")
    for i in range(40, 60):
        (b / f"beta-{i:03d}.md").write_text(f"# beta note {i}\n\nA later note {i}.\n")
    (b / "beta-003.md").write_text("# beta note 3\n\nEdited.\n")
    for path in (*a.rglob("*.md"), *b.rglob("*.md")):
        set_mtime(path, 1_700_000_000)
    _run_together(
        _start(a, "alpha", tmp_path / "data-a", chroma_server, collection),
        _start(b, "beta", tmp_path / "data-b", chroma_server, collection),
    )
    rows = snapshot(shared)
    assert _of(rows, "alpha") == oracle(a, tmp_path / "oracle-a2", "alpha")
    assert _of(rows, "beta") == oracle(b, tmp_path / "oracle-b2", "beta")
    assert len(rows) == len(_of(rows, "alpha")) + len(_of(rows, "beta"))
