"""The README's examples run: its Python block, as written, over a copy of examples/notes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ..conftest import REPO, age_tree


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", markdown, flags=re.M | re.S)


def test_readme_python_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    [code] = python_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    shutil.copytree(REPO / "examples" / "notes", tmp_path / "examples" / "notes")
    age_tree(tmp_path / "examples" / "notes")
    monkeypatch.chdir(tmp_path)
    for name in ("CHROMASYNC_DATA_DIR", "CHROMASYNC_CONFIG", "CHROMASYNC_CHROMA_URL"):
        monkeypatch.delenv(name, raising=False)
    # The example reads os.environ: the deterministic provider instead of the model.
    monkeypatch.setenv("CHROMASYNC_EMBEDDING_PROVIDER", "hash")
    namespace: dict[str, object] = {"__name__": "__readme__"}
    exec(compile(code, "README.md", "exec"), namespace)
    summary = namespace["summary"]
    assert summary.files_new == 5 and summary.chunks_embedded > 0  # type: ignore[attr-defined]
    assert (tmp_path / ".chromasync").is_dir()
    lines = capsys.readouterr().out.splitlines()
    assert 1 <= len(lines) <= 3
    # Each line: path, heading, start line, end line, score; the grinder note ranks first.
    assert lines[0].startswith("guides/install.md ")
    start, end = (int(x) for x in lines[0].split()[-3:-1])
    assert 1 <= start <= end


def test_python_blocks_are_found() -> None:
    text = "intro\n```python\nx = 1\n```\n\n```sh\nls\n```\n```python\ny = 2\n```\n"
    assert python_blocks(text) == ["x = 1\n", "y = 2\n"]
