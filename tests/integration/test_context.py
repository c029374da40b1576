"""`context:` descriptions per source or path prefix, returned with every hit from there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from chromasync import api
from chromasync.cli.main import main
from chromasync.config.file import load_config_file
from chromasync.errors import ConfigError

from ..conftest import REPO

CONFIG = """\
sources:
  - path: notes
    context: "Demo notes"
  - path: other
context:
  notes/journal: "Journal, 2026-"
  notes/journal/2026-05-01.md: "May Day"
  other/: "Other things"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "examples" / "notes", tmp_path / "notes")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "grinder.md").write_text("# Grinder\n\nThe grinder hums.\n")
    (tmp_path / "chromasync.yaml").write_text(CONFIG)
    return tmp_path


@pytest.mark.parametrize(
    ("source", "path", "expected"),
    [
        ("notes", "guides/install.md", "Demo notes"),
        ("notes", "journal/2026-05-02.md", "Journal, 2026-"),
        ("notes", "journal/2026-05-01.md", "May Day"),  # the longest prefix wins
        ("notes", "journalism.md", "Demo notes"),  # a prefix is whole path segments
        ("other", "grinder.md", "Other things"),
        ("elsewhere", "a.md", None),
    ],
)
def test_context_for(project: Path, source: str, path: str, expected: str | None) -> None:
    file = load_config_file(project / "chromasync.yaml")
    assert file.context_for(source, path) == expected


@pytest.mark.parametrize("key", ["/abs", "notes/../x", "/"])
def test_bad_context_keys_are_refused(tmp_path: Path, key: str) -> None:
    (tmp_path / "chromasync.yaml").write_text(f'context:\n  "{key}": "x"\n')
    with pytest.raises(ConfigError, match="context key"):
        load_config_file(tmp_path / "chromasync.yaml")


def test_every_hit_carries_its_context(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    env = {"CHROMASYNC_EMBEDDING_PROVIDER": "hash", "CHROMASYNC_DATA_DIR": str(project / "d")}
    runner = CliRunner()
    done = runner.invoke(main, ["ingest"], env=env)
    assert done.exit_code == 0, done.stderr
    found = runner.invoke(main, ["search", "grinder", "--json", "--k", "20"], env=env)
    assert found.exit_code == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    settings = api.configure({}, env, project)
    assert settings.config_file is not None
    assert {(h["source"], h["path"]) for h in hits} >= {
        ("notes", "guides/install.md"),
        ("other", "grinder.md"),
    }
    for hit in hits:
        assert hit["context"] == settings.config_file.context_for(hit["source"], hit["path"])
        assert hit["context"] is not None
    shown = runner.invoke(main, ["search", "grinder", "--k", "20"], env=env)
    assert "   context: Other things" in shown.stdout and "   context: Demo notes" in shown.stdout
