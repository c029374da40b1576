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


def test_front_matter_chroma_cannot_store_leaves_the_collection_whole(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """6,000 tags in 12 KB of front matter broke the Chroma collection for good (every later
    ingest and search failed, the file removed or not); a lone surrogate escape or one past
    U+10FFFF ended the run (a `TypeError` from Chroma, a `ValueError` traceback). Now the
    tags are dropped (the note is indexed) and the escapes are `frontmatter-invalid`."""
    notes = tmp_path / "notes"
    notes.mkdir()
    tags = ", ".join(f"t{i}" for i in range(6000))
    (notes / "tags.md").write_text(f"---\ntitle: Tags\ntags: [{tags}]\n---\n# Tags\n\nkiwi\n")
    (notes / "half.md").write_text('---\ntitle: "\\ud800"\n---\n# Half\n\nkiwi\n')
    (notes / "past.md").write_text('---\ntitle: "\\U00110000"\n---\n# Past\n\nkiwi\n')
    (notes / "good.md").write_text("---\ntitle: Good\n---\n# Good\n\nthe good note\n")
    done = invoke_cli(["ingest", str(notes), "--json"], env=cli_env)
    assert done.returncode == 0, done.stderr
    [summary] = json.loads(done.stdout)
    assert summary["files_skipped"] == {"frontmatter-invalid": 2}
    assert summary["warnings"] == {"frontmatter-dropped": 1}  # said, never silent
    done = invoke_cli(["ingest", str(notes), "--json"], env=cli_env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["files_skipped"] == {"frontmatter-invalid": 2}
    (notes / "more.md").write_text("# More\n\nanother kiwi\n")  # the collection takes writes
    assert invoke_cli(["ingest", str(notes)], env=cli_env).returncode == 0
    found = invoke_cli(["search", "kiwi", "--json"], env=cli_env)
    assert found.returncode == 0, found.stderr
    hits = {h["path"]: h for h in json.loads(found.stdout)["hits"]}
    assert {"tags.md", "more.md"} <= set(hits) and "tags" not in hits["tags.md"]["metadata"]
    assert hits["tags.md"]["metadata"]["title"] == "Tags"


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


TOML_BOMBS = {  # each a traceback (a RecursionError, a ValueError) until they were bounded
    "arrays": ("x = " + "[" * 5000 + "]" * 5000, 2, "nested deeper than 64 levels"),
    "tables": ("x = " + "{a = " * 5000 + "1" + "}" * 5000, 2, "nested deeper than 64 levels"),
    "dotted": (".".join(["a"] * 5000) + " = 1", 2, "nested deeper than 64 levels"),
    # and tomllib takes quadratic time on a key of many parts: 25 s for this one
    "header": ("[" + ".".join(["a"] * 100_000) + "]", 2, "nested deeper than 64 levels"),
    "digits": ("x = 1\ny = " + "9" * 5000, 3, "not a readable int value"),
}


@pytest.mark.parametrize("name", TOML_BOMBS)
def test_toml_config_bomb_is_one_line_naming_file_and_line(
    tmp_path: Path, cli_env: dict[str, str], name: str
) -> None:
    text, line, why = TOML_BOMBS[name]
    config = tmp_path / "chromasync.toml"
    config.write_text("version = 1\n" + text + "\n")
    shown = invoke_cli(["config", "show"], env={**cli_env, "CHROMASYNC_CONFIG": str(config)})
    assert shown.returncode == 2 and shown.stdout == ""
    assert shown.stderr == f"error: {config}: line {line}: {why}; fix the TOML\n"


def test_a_source_with_more_metadata_than_a_record_holds_is_refused(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """6,000 `metadata` keys on a source went onto every record of it (and broke the
    collection for good); at most 64 are accepted, with the line."""
    keys = "".join(f"      k{i}: {i}\n" for i in range(300))
    config = tmp_path / "chromasync.yaml"
    config.write_text(f"version: 1\nsources:\n  - path: .\n    metadata:\n{keys}")
    shown = invoke_cli(["config", "show"], env=cli_env, cwd=tmp_path)
    assert shown.returncode == 2 and shown.stderr.startswith(f"error: {config}: line 4: ")
    assert "at most 64 items" in shown.stderr


def test_a_sources_file_with_a_bom_or_no_closing_fence(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """A BOM (as Windows editors save) hid the front matter: no source, no word why; an
    unclosed one was an error naming no file, telling to close it "before editing"."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nkiwi\n")
    listed = tmp_path / "content-sources.md"
    listed.write_bytes(b"\xef\xbb\xbf---\r\ncontent_sources:\r\n  - path: notes\r\n---\r\n")
    done = invoke_cli(["ingest", "--sources-file", str(listed), "--json"], env=cli_env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["files_new"] == 1
    added = invoke_cli(["sources", "add", str(tmp_path), "--sources-file", str(listed)], cli_env)
    assert added.returncode == 0, added.stderr
    assert listed.read_bytes().startswith(b"\xef\xbb\xbf---\r\ncontent_sources:\r\n  - path: notes")
    listed.write_text("---\ncontent_sources:\n  - path: notes\n")
    done = invoke_cli(["ingest", "--sources-file", str(listed)], env=cli_env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"error: {listed}: line 1: the front matter has no closing '---'; close it\n"
    )


def test_a_sources_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    """`--sources-file` naming a FIFO waited for a writer for ever (the config file was
    checked to be a file; the sources file was not)."""
    import os
    import threading

    from chromasync.config.file import load_sources_file
    from chromasync.errors import ConfigError

    listed = tmp_path / "content-sources.md"
    os.mkfifo(listed)
    caught: list[BaseException] = []

    def load() -> None:
        try:
            load_sources_file(listed)
        except ConfigError as exc:
            caught.append(exc)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive() and [str(e) for e in caught] == [
        f"cannot read sources file {str(listed)!r}: not a regular file"
    ]
