"""The page's script parses (a syntax error once left the whole search page dead, with only
the Chromium test, skipped where no browser is installed, to notice)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "src" / "chromasync" / "static"


def test_app_js_parses() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node to check the script's syntax")
    done = subprocess.run(
        [node, "--check", str(STATIC / "app.js")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
