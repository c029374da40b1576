"""`invoke_cli` (tests/conftest.py) runs the console script in process as `run_cli` runs it in
a child: the same exit code, stdout and stderr, and nothing of the test process changed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ..conftest import invoke_cli, run_cli


def main() -> object:
    """The process's `__main__` (pytest's), which `invoke_cli` stands in for while it runs."""
    return sys.modules["__main__"]


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],  # exit 0, stdout only
        ["search"],  # click's usage error: exit 2, stderr only
        ["search", "x", "--mode", "nope"],
    ],
)
def test_in_process_is_the_child_process(args: list[str], tmp_path: Path) -> None:
    env = {"CHROMASYNC_DATA_DIR": str(tmp_path / "data")}
    child = run_cli(args, env=env, cwd=tmp_path)
    inside = invoke_cli(args, env=env, cwd=tmp_path)
    assert (inside.returncode, inside.stdout, inside.stderr) == (
        child.returncode,
        child.stdout,
        child.stderr,
    )


def test_nothing_of_the_test_process_changes(tmp_path: Path) -> None:
    before = (dict(os.environ), os.getcwd(), list(sys.argv), sys.stdout, sys.stderr, main())
    done = invoke_cli(["--version"], env={"CHROMASYNC_INVOKE_PROBE": "1"}, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("chromasync, version ")
    assert done.stderr == ""
    assert (dict(os.environ), os.getcwd(), list(sys.argv), sys.stdout, sys.stderr, main()) == before
