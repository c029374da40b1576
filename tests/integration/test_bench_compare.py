"""Smoke test of benchmarks/compare.py, so the benchmark does not rot.

Thirty SciFact files, the hashing stand-in, chromasync and the naive script only (the peers
live in the `bench` extra): every scenario runs, every collection is read back and checked
against the disk, and the figures that do not depend on the machine are asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import REPO, SHARED

COMPARE = REPO / "benchmarks" / "compare.py"


def test_compare_runs_every_scenario_and_checks_the_collections(tmp_path: Path) -> None:
    if not (SHARED / "tools" / "materialize_scifact.py").is_file():
        pytest.skip("../shared/tools/materialize_scifact.py is not present")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [
            sys.executable,
            str(COMPARE),
            "--corpus=scifact",
            "--limit=30",
            "--tools=chromasync,naive",
            "--rate-sample=0",
            f"--out={out}",
            f"--cache={tmp_path / 'cache'}",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((out / "results.json").read_text(encoding="utf-8"))
    rows = {(r["scenario"], r["tool"]): r for r in report["rows"]}
    assert sorted(rows) == sorted(
        (s, t) for s in ("S1", "S2", "S3", "S4", "S5") for t in ("chromasync", "naive")
    )
    for row in rows.values():
        assert "error" not in row, row
        check = row["check"]
        assert check["records"] > 30
        assert (check["orphans"], check["stale"], check["duplicates"], check["missing"]) == (
            0,
            0,
            0,
            0,
        ), row
    texts = {key: row["texts"] for key, row in rows.items()}
    assert texts["S1", "chromasync"] > 30
    assert texts["S2", "chromasync"] == texts["S3", "chromasync"] == 0
    assert 2 <= texts["S4", "chromasync"] <= 6  # one file edited, one added
    assert 1 <= texts["S5", "chromasync"] <= 2  # one section of the long file
    assert texts["S2", "naive"] == texts["S1", "naive"]
    assert report["corpora"]["scifact"]["changes"]["S4"] == {
        "touched": 0,
        "edited": 1,
        "deleted": 1,
        "added": 1,
    }
    table = (out / "table.md").read_text(encoding="utf-8")
    assert table.count("| chromasync |") == 5
