"""YAML that nests or expands without end, as a user meets it on the command line.

A note whose front matter nests 1,000 levels is a counted `frontmatter-invalid` skip and the
note beside it is indexed (it was a `RecursionError` that ended every sync of the source), as
is one whose `date: 2001-02-30` is no date (a `ValueError` traceback); a
`chromasync.yaml` found in the current folder, or a sources file, holding a billion laughs
or 5,000 nested lists is a one-line error naming the file and the line (it was a traceback,
or 9.7 GB of memory and growing).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bombs import block_mappings, laughs

from ..conftest import invoke_cli

NESTED = {
    "flow-lists.md": "x: " + "[" * 1000 + "]" * 1000,
    "flow-maps.md": "x: " + "{a: " * 1000 + "}" * 1000,
    "block-lists.md": "x:\n  " + "- " * 1000 + "1",
    "block-maps.md": block_mappings(300),
    "laughs.md": laughs(9),
}


def test_nested_front_matter_is_a_counted_skip(tmp_path: Path, cli_env: dict[str, str]) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, front in NESTED.items():
        (notes / name).write_text(f"---\n{front}\n---\n# Bomb\n\nbody\n")
    (notes / "good.md").write_text("---\ntitle: Good\n---\n# Good\n\nthe good note\n")
    (notes / "day.md").write_text("---\ndate: 2001-02-30\n---\n# Day\n\nno such day\n")
    for run in range(2):  # and again: a later sync is not stopped either
        done = invoke_cli(["ingest", str(notes), "--json"], env=cli_env)
        assert done.returncode == 0, done.stderr
        [summary] = json.loads(done.stdout)
        assert summary["files_skipped"] == {"frontmatter-invalid": len(NESTED)}
        if run == 0:  # a date that is none was a ValueError traceback: now a counted warning
            assert (summary["files_new"], summary["warnings"]) == (2, {"date-unreadable": 1})
    found = invoke_cli(["search", "the good note", "--json"], env=cli_env)
    assert "good.md" in found.stdout


BOMBS = {
    "laughs": (laughs(9), 7, "over 100,000 values, aliases expanded"),
    "nested": ("x:\n  y: " + "[" * 5000 + "]" * 5000, 3, "nested deeper than 64 levels"),
}


@pytest.mark.parametrize("name", BOMBS)
def test_config_bomb_is_one_line_naming_file_and_line(
    tmp_path: Path, cli_env: dict[str, str], name: str
) -> None:
    text, line, why = BOMBS[name]
    config = tmp_path / "chromasync.yaml"
    config.write_text("version: 1\n" + text)
    shown = invoke_cli(["config", "show"], env=cli_env, cwd=tmp_path)  # found in the folder
    assert shown.returncode == 2 and shown.stdout == ""
    assert shown.stderr == f"error: {config}: line {line}: {why}; fix the YAML\n"


@pytest.mark.parametrize("name", BOMBS)
def test_sources_file_bomb_is_one_line_naming_file_and_line(
    tmp_path: Path, cli_env: dict[str, str], name: str
) -> None:
    text, line, why = BOMBS[name]
    listed = tmp_path / "content-sources.md"
    listed.write_text(f"---\n{text}\n---\n# Sources\n")  # one line down: the opening fence
    done = invoke_cli(["ingest", "--sources-file", str(listed)], env=cli_env, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: {listed}: line {line}: {why}; fix the YAML\n"
