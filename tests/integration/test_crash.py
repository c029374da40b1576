"""SIGKILL at each named crash point, and at random moments: a re-run converges on the oracle.

The oracle is what a clean run over the same final tree builds in a fresh data dir: the
same IDs, documents and metadata (history fields aside), no orphan, no duplicate.
"""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chromasync.config.resolve import resolve_settings

from ..conftest import REPO, age_tree, oracle, run_cli, set_mtime, snapshot


@pytest.fixture(scope="module")
def small_hugo(hugo_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 90 hugo docs: enough chunks (~300) for two write waves."""
    root = tmp_path_factory.mktemp("crash") / "docs"
    files = sorted((hugo_copy / "content" / "en").rglob("*.md"))[:90]
    for path in files:
        target = root / path.relative_to(hugo_copy)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    age_tree(root)
    return root


def _mutate(root: Path) -> None:
    files = sorted(root.rglob("*.md"))
    for path in files[:8]:
        path.write_text(path.read_text() + "\n\n## Appended\n\nA new section about crash safety.\n")
        set_mtime(path, 1_700_000_000)
    for path in files[8:12]:
        path.unlink()
    for n in range(4):
        (root / f"added-{n}.md").write_text(f"# Added {n}\n\nNew document number {n}.\n")
        set_mtime(root / f"added-{n}.md", 1_700_000_000)


def _env(data: Path, crash: str | None = None, plan_ahead: str = "auto") -> dict[str, str]:
    env = {
        "CHROMASYNC_DATA_DIR": str(data),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_COLLECTIONS": "shared",
        "CHROMASYNC_PLAN_AHEAD": plan_ahead,
    }
    if crash:
        env["CHROMASYNC_CRASH_AT"] = crash
    return env


@pytest.mark.parametrize(
    ("crash", "during_delta", "plan_ahead"),
    [
        pytest.param("after-embed:1", False, "auto", marks=pytest.mark.slow),
        ("after-upsert:2", False, "auto"),
        ("mid-manifest:1", False, "auto"),
        pytest.param("after-manifest:1", False, "auto", marks=pytest.mark.slow),
        pytest.param("after-upsert:1", True, "auto", marks=pytest.mark.slow),
        pytest.param("after-manifest:1", True, "auto", marks=pytest.mark.slow),
        ("after-delete:1", True, "auto"),
        # killed while the planning process runs ahead: it ends with the run (the CLI's
        # captured stderr, which it shares, reaches its end only then)
        ("after-upsert:2", False, "on"),
        ("mid-manifest:1", True, "on"),
    ],
)
def test_kill_at_crash_point_converges(
    small_hugo: Path, tmp_path: Path, crash: str, during_delta: bool, plan_ahead: str
) -> None:
    root = tmp_path / "docs"
    shutil.copytree(small_hugo, root)
    data = tmp_path / "data"
    if during_delta:
        assert run_cli(["ingest", str(root), "--quiet"], env=_env(data)).returncode == 0
        _mutate(root)
    killed = run_cli(["ingest", str(root), "--quiet"], env=_env(data, crash, plan_ahead))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    again = run_cli(["ingest", str(root), "--quiet"], env=_env(data))
    assert again.returncode == 0, again.stderr
    settings = resolve_settings(
        {"data_dir": str(data), "provider": "hash"}, {"CHROMASYNC_COLLECTIONS": "shared"}
    )
    assert snapshot(settings) == oracle(root, tmp_path / "oracle", "docs")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_kill_at_random_moments_converges(small_hugo: Path, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root = tmp_path / "docs"
    shutil.copytree(small_hugo, root)
    data = tmp_path / "data"
    if seed % 2:
        assert run_cli(["ingest", str(root), "--quiet"], env=_env(data)).returncode == 0
        _mutate(root)
    command = [sys.executable, "-m", "chromasync", "ingest", str(root), "--quiet"]
    env = {**_env(data), "PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(rng.uniform(0.8, 4.0))
    process.send_signal(signal.SIGKILL)
    process.communicate()
    again = run_cli(["ingest", str(root), "--quiet"], env=_env(data))
    assert again.returncode == 0, again.stderr
    settings = resolve_settings(
        {"data_dir": str(data), "provider": "hash"}, {"CHROMASYNC_COLLECTIONS": "shared"}
    )
    assert snapshot(settings) == oracle(root, tmp_path / "oracle", "docs")
