"""`editor_uri`: the template's check at config load and `retrieve.editor.open_url`."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from chromasync.config.editor import editor_uri_problem
from chromasync.config.file import load_config_file
from chromasync.config.resolve import resolve_settings
from chromasync.errors import ConfigError
from chromasync.records import Hit
from chromasync.retrieve.editor import open_url

VSCODE = "vscode://file{path}:{line}"


def hit(path: str, start: int = 7, source: str = "notes", **meta: object) -> Hit:
    return Hit(
        id="r1",
        path=path,
        source=source,
        heading="",
        start_line=start,
        end_line=start + 3,
        score=1.0,
        text="",
        metadata=dict(meta),
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a.md", "vscode://file/home/me/notes/a.md:7"),
        ("sub dir/my note.md", "vscode://file/home/me/notes/sub%20dir/my%20note.md:7"),
        ("café/ünï.md", "vscode://file/home/me/notes/caf%C3%A9/%C3%BCn%C3%AF.md:7"),
        ("c#/x.md", "vscode://file/home/me/notes/c%23/x.md:7"),
        ("what?.md", "vscode://file/home/me/notes/what%3F.md:7"),
        ("a&b=c%.md", "vscode://file/home/me/notes/a%26b%3Dc%25.md:7"),
        ("./x//y.md", "vscode://file/home/me/notes/x/y.md:7"),
        ("x/../y.md", "vscode://file/home/me/notes/y.md:7"),
    ],
)
def test_paths_are_quoted(path: str, expected: str) -> None:
    url = open_url(VSCODE, hit(path), "/home/me/notes")
    assert url == expected
    assert url is not None and unquote(url.removeprefix("vscode://file")).startswith("/home/me/")


@pytest.mark.parametrize(
    "path",
    ["../secret.md", "a/../../secret.md", "/etc/passwd", "", ".", "a\0b", "x/../.."],
)
def test_no_link_outside_the_root(path: str) -> None:
    assert open_url(VSCODE, hit(path), "/home/me/notes") is None


def test_no_link_for_a_relative_root() -> None:
    assert open_url(VSCODE, hit("a.md"), "notes") is None


def test_a_control_character_cannot_reach_the_terminal() -> None:
    url = open_url(VSCODE, hit("a\x1b]8;;evil\x07.md"), "/r")
    assert url == "vscode://file/r/a%1B%5D8%3B%3Bevil%07.md:7"
    assert url.isascii() and url.isprintable()


def test_every_placeholder() -> None:
    template = "idea://open?file={path}&rel={relpath}&src={source}&line={line}&x={{y}}"
    url = open_url(template, hit("a b/c.md", 12, source="my notes/x"), "/root dir")
    assert url == (
        "idea://open?file=/root%20dir/a%20b/c.md&rel=a%20b/c.md&src=my%20notes%2Fx&line=12&x={y}"
    )


@pytest.mark.parametrize(
    ("start", "meta", "line"),
    [
        (0, {}, 1),  # unknown
        (5, {"doc_format": "pdf", "page": 3}, 1),  # a document's lines are not the file's
        (5, {}, 5),
    ],
)
def test_line(start: int, meta: dict[str, object], line: int) -> None:
    assert open_url("x://{line}", hit("a.md", start, **meta), "/r") == f"x://{line}"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("vscode://file{file}:{line}", r"unknown placeholder \{file\}"),
        ("vscode://file{path:>10}", r"unknown placeholder \{path:>10\}"),
        ("vscode://file{path!r}", r"unknown placeholder \{path!r\}"),
        ("vscode://file{0}", r"unknown placeholder \{0\}"),
        ("vscode://file{}", r"unknown placeholder \{\}"),
        ("vscode://file{path.x}", r"unknown placeholder \{path.x\}"),
        ("vscode://file{path", "not a valid template"),
        ("vscode://file}", "not a valid template"),
        ("/usr/bin/code {path}", "whitespace"),
        ("{path}", "must start with an editor's URI scheme"),
        ("javascript:alert({line})", "must start with an editor's URI scheme"),
        ("DATA:text/html,{path}", "must start with an editor's URI scheme"),
        ("x://\x1b{path}", "control character"),
    ],
)
def test_bad_templates_are_config_errors(template: str, message: str) -> None:
    assert re.search(message, editor_uri_problem(template) or "")
    with pytest.raises(ConfigError, match="CHROMASYNC_EDITOR_URI"):
        resolve_settings({}, {"CHROMASYNC_EDITOR_URI": template})


@pytest.mark.parametrize(
    "template",
    [
        VSCODE,
        "idea://open?file={path}&line={line}",
        "file://{path}",
        "subl://open?url=file://{path}&line={line}",
        "x://{{literal}}",
    ],
)
def test_good_templates(template: str) -> None:
    assert editor_uri_problem(template) is None


def test_from_the_config_file_and_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "chromasync.yaml"
    config.write_text('version: 1\nsearch:\n  editor_uri: "vscode://file{path}:{line}"\n')
    settings = resolve_settings({}, {}, load_config_file(config))
    assert settings.editor_uri == VSCODE
    assert settings.origins["editor_uri"].endswith("chromasync.yaml:3")
    over = resolve_settings(
        {}, {"CHROMASYNC_EDITOR_URI": "file://{path}"}, load_config_file(config)
    )
    assert over.editor_uri == "file://{path}"
    assert resolve_settings({}, {}).editor_uri is None
    config.write_text('version: 1\nsearch:\n  editor_uri: "vscode://file{where}"\n')
    with pytest.raises(
        ConfigError, match=r"chromasync.yaml: line 3: `search.editor_uri` .*\{where\}"
    ):
        resolve_settings({}, {}, load_config_file(config))
