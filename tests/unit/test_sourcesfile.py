"""Text edits of source declarations: comments and the Markdown body survive byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from chromasync.config.sourcesfile import (
    add_to_markdown,
    add_to_yaml,
    append_items,
    remove_from_markdown,
    remove_from_yaml,
    remove_item,
    split_sources_file,
)
from chromasync.errors import ConfigError

BODY = "# Notes\r\n\n---\n\nA rule above; `content_sources:` in the body is not data.\n  \n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sources:\n  - path: a\n", [{"path": "a"}, {"path": "n"}]),
        ("sources:\n- path: a\n# trailing comment\n", [{"path": "a"}, {"path": "n"}]),
        ("sources: []\n", [{"path": "n"}]),
        ("sources: [{path: a}]\n", [{"path": "a"}, {"path": "n"}]),
        ("sources:\nother: 1\n", [{"path": "n"}]),
        ("other: 1\n", [{"path": "n"}]),
        ("", [{"path": "n"}]),
    ],
)
def test_append_items(text: str, expected: list[dict[str, str]]) -> None:
    edited = append_items(text, "sources", [{"path": "n"}])
    assert yaml.safe_load(edited)["sources"] == expected
    if "other" in text:
        assert yaml.safe_load(edited)["other"] == 1
    if "#" in text:
        assert "# trailing comment" in edited


def test_remove_item_cuts_only_its_lines() -> None:
    text = "# head\nsources:\n  - path: a # first\n    kind: x\n  # about b\n  - path: b\nz: 1\n"
    assert remove_item(text, "sources", 0) == ("# head\nsources:\n  # about b\n  - path: b\nz: 1\n")
    assert remove_item(text, "sources", 1) == (
        "# head\nsources:\n  - path: a # first\n    kind: x\n  # about b\nz: 1\n"
    )
    only = remove_item("sources:\n  - path: a\nz: 1\n", "sources", 0)
    assert yaml.safe_load(only) == {"sources": [], "z": 1}


def test_markdown_body_survives_add_and_remove(tmp_path: Path) -> None:
    md = tmp_path / "content-sources.md"
    md.write_bytes(("---\r\n# keep\r\ncontent_sources:\r\n  - path: a\r\n---\r\n" + BODY).encode())
    add_to_markdown(md, [{"path": "b", "include": False}])
    raw = md.read_bytes()
    assert raw.endswith(BODY.encode()) and b"# keep\r\n" in raw
    assert b"  - path: b\r\n    include: false\r\n" in raw
    parts = split_sources_file(raw.decode())
    assert parts is not None
    assert yaml.safe_load(parts.front)["content_sources"] == [
        {"path": "a"},
        {"path": "b", "include": False},
    ]
    remove_from_markdown(md, 0)
    raw = md.read_bytes()
    assert raw.endswith(BODY.encode()) and b"path: a" not in raw and b"path: b" in raw


def test_markdown_without_front_matter_gets_one(tmp_path: Path) -> None:
    md = tmp_path / "sources.md"
    md.write_bytes(BODY.encode())
    add_to_markdown(md, [{"path": "x"}])
    raw = md.read_bytes().decode()
    assert raw.startswith("---\r\ncontent_sources:\r\n") and raw.endswith(BODY)
    new = tmp_path / "new.md"
    add_to_markdown(new, [{"path": "y"}])
    parts = split_sources_file(new.read_text())
    assert parts is not None and yaml.safe_load(parts.front) == {"content_sources": [{"path": "y"}]}


def test_unclosed_front_matter_is_refused(tmp_path: Path) -> None:
    md = tmp_path / "bad.md"
    md.write_text("---\ncontent_sources: []\nno closing fence\n")
    with pytest.raises(ConfigError, match="no closing"):
        add_to_markdown(md, [{"path": "x"}])
    assert md.read_text() == "---\ncontent_sources: []\nno closing fence\n"


def test_yaml_config_created_and_edited(tmp_path: Path) -> None:
    cfg = tmp_path / "chromasync.yaml"
    add_to_yaml(cfg, [{"label": "a", "path": "a"}])
    assert yaml.safe_load(cfg.read_text()) == {
        "version": 1,
        "sources": [{"label": "a", "path": "a"}],
    }
    cfg.chmod(0o600)
    add_to_yaml(cfg, [{"label": "b", "path": "b"}])
    remove_from_yaml(cfg, 0)
    assert yaml.safe_load(cfg.read_text())["sources"] == [{"label": "b", "path": "b"}]
    assert cfg.stat().st_mode & 0o777 == 0o600
