"""An unchanged re-run reads no file, imports no chromadb, loads no model, writes no vector."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import REPO, invoke_cli, set_mtime

PROBE = r"""
import json, sys
root = sys.argv[1]
opened = []
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].startswith(root):
        opened.append(args[0])
    if event == "os.open" and isinstance(args[0], str) and args[0].startswith(root):
        opened.append(args[0])
sys.addaudithook(hook)
from chromasync.cli.main import main
try:
    main(["ingest", root, "--json", "--quiet"], standalone_mode=False)
finally:
    heavy = sorted(m for m in ("chromadb", "onnxruntime", "torch", "tokenizers", "yaml",
                               "pydantic") if m in sys.modules)
    print(json.dumps({"opened": opened, "heavy": heavy}), file=sys.stderr)
"""


@pytest.mark.parametrize("touched", [False, True])
def test_unchanged_rerun_does_no_work(
    notes: Path, cli_env: dict[str, str], data_dir: Path, touched: bool
) -> None:
    (notes / "secret.md").write_text("---\nprivate: true\n---\nNot for the index.\n")
    set_mtime(notes / "secret.md", 1_600_000_000)  # a remembered skip is not re-read either
    assert invoke_cli(["ingest", str(notes), "--quiet"], env=cli_env).returncode == 0
    if touched:  # a touch is confirmed by one read; after that the stat fast path holds
        for path in notes.rglob("*.md"):
            set_mtime(path, 1_650_000_000)
        assert invoke_cli(["ingest", str(notes), "--quiet"], env=cli_env).returncode == 0
    chroma = data_dir / "chroma" / "chroma.sqlite3"
    before = chroma.stat().st_mtime_ns
    env = {**cli_env, "PYTHONPATH": str(REPO / "src")}
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(notes)],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, **env},
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr
    [summary] = json.loads(probe.stdout)  # a list, one row per source
    assert summary["files_unchanged"] == 5 and summary["chunks_embedded"] == 0
    report = json.loads(probe.stderr.strip().splitlines()[-1])
    assert report["opened"] == []
    assert report["heavy"] == []
    assert chroma.stat().st_mtime_ns == before
