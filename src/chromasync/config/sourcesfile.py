"""Careful rewrites of the files that declare sources: text edits, never a re-dump.

Design notes: docs/internals.md, `config/sourcesfile.py`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..datadir import FILE_MODE, replace_file
from ..errors import ConfigError
from .safeyaml import load_yaml, yaml_problem

_CLOSE = re.compile(r"^(---|\.\.\.)[ \t]*\r?$")
NEW_SOURCES_FILE_BODY = (
    "\n# Content sources\n\n"
    "The list above is read by `chromasync ingest`. `chromasync discover` appends new\n"
    "candidate folders with `include: false`; set `include: true` to index one. Notes below\n"
    "this line are yours: chromasync never rewrites them.\n"
)


@dataclass(frozen=True, slots=True)
class SourcesFileParts:
    """A Markdown file cut at its front matter: `head + front + tail == text`."""

    head: str  # the opening fence line
    front: str  # the YAML between the fences
    tail: str  # the closing fence line and the whole body, untouched


def split_sources_file(text: str, where: object = "the sources file") -> SourcesFileParts | None:
    """Cut `text` at its front matter (a BOM before it stays in `head`), or None when it has
    none; raises `ConfigError` naming `where` when the front matter is not closed."""
    first, sep, _ = text.partition("\n")
    if first.lstrip("\ufeff").rstrip(" \t\r") != "---" or not sep:
        return None
    head = first + sep
    offset = len(head)
    while offset <= len(text):
        end = text.find("\n", offset)
        line = text[offset:] if end < 0 else text[offset:end]
        if _CLOSE.match(line):
            return SourcesFileParts(head, text[len(head) : offset], text[offset:])
        if end < 0:
            break
        offset = end + 1
    raise ConfigError(f"{where}: line 1: the front matter has no closing '---'; close it")


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _load(text: str) -> tuple[Any, Any]:
    """The data and node tree of `text`, read by the one bounded loader."""
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"cannot edit: the YAML does not parse ({yaml_problem(exc)})") from exc


def _top_value(text: str, key: str) -> tuple[Any, Any]:
    """The key node and value node of `key` in the top-level mapping of `text`."""
    root = _load(text)[1]
    if root is None:
        return None, None
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError("cannot edit: the YAML is not a mapping")
    for key_node, value_node in root.value:
        if key_node.value == key:
            return key_node, value_node
    return None, None


def _line_end(text: str, index: int) -> int:
    """The index just after the line that holds the last non-blank character before `index`."""
    stripped = len(text[:index].rstrip())
    end = text.find("\n", stripped)
    return len(text) if end < 0 else end + 1


def _content_end(node: Any) -> int:
    """The index just after the last character of `node` itself (not trailing comments)."""
    if isinstance(node, yaml.MappingNode) and node.value and not node.flow_style:
        return _content_end(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and node.value and not node.flow_style:
        return _content_end(node.value[-1])
    end: int = node.end_mark.index
    return end


def _render(items: Sequence[Mapping[str, Any]], indent: int, newline: str) -> str:
    dumped = yaml.safe_dump(
        [dict(i) for i in items], default_flow_style=False, sort_keys=False, allow_unicode=True
    )
    pad = " " * indent
    return "".join(pad + line + newline for line in dumped.splitlines())


def _verified(edited: str, want: Mapping[str, Any]) -> str:
    """`edited`, once it reads back as `want` (an edit that would change more is refused)."""
    if (_load(edited)[0] or {}) != want:
        raise ConfigError("cannot edit this YAML as text without changing more; edit it by hand")
    return edited


def append_items(text: str, key: str, items: Sequence[Mapping[str, Any]]) -> str:
    """Append `items` to the top-level list `key` of the YAML `text`, editing only text."""
    if not items:
        return text
    before = _load(text)[0] or {}
    edited = _append_items(text, key, items)
    return _verified(edited, {**before, key: [*(before.get(key) or []), *map(dict, items)]})


def _append_items(text: str, key: str, items: Sequence[Mapping[str, Any]]) -> str:
    nl = _newline(text)
    key_node, value = _top_value(text, key)
    if key_node is None:
        prefix = text if not text or text.endswith("\n") else text + nl
        return prefix + f"{key}:{nl}" + _render(items, 2, nl)
    empty = isinstance(value, yaml.ScalarNode) and value.value in ("", "null", "~")
    if not empty and not isinstance(value, yaml.SequenceNode):
        raise ConfigError(f"cannot edit: `{key}` is not a list")
    if empty or value.flow_style or not value.value:  # `key:` rewritten as a block list
        existing = [] if empty else _load(text[value.start_mark.index : value.end_mark.index])[0]
        line_start = text.rfind("\n", 0, key_node.start_mark.index) + 1
        cut = _line_end(text, max(_content_end(value), key_node.end_mark.index + 1))
        column: int = key_node.start_mark.column
        return (
            text[:line_start]
            + " " * column
            + f"{key}:{nl}"
            + _render([*(existing or []), *items], column + 2, nl)
            + text[cut:]
        )
    last = value.value[-1]
    dash = _dash_column(text, last)
    cut = _line_end(text, _content_end(last))
    return text[:cut] + _render(items, dash, nl) + text[cut:]


def _dash_column(text: str, item: Any) -> int:
    line_start = text.rfind("\n", 0, item.start_mark.index) + 1
    before = text[line_start : item.start_mark.index].rstrip()
    column: int = item.start_mark.column
    if not before.endswith("-"):
        return max(column - 2, 0)
    return len(before) - 1


def remove_item(text: str, key: str, index: int) -> str:
    """Remove item `index` of the top-level block list `key`: exactly its lines."""
    edited = _remove_item(text, key, index)
    before = _load(text)[0]
    return _verified(edited, {**before, key: [*before[key][:index], *before[key][index + 1 :]]})


def _remove_item(text: str, key: str, index: int) -> str:
    key_node, value = _top_value(text, key)
    if not isinstance(value, yaml.SequenceNode) or index >= len(value.value):
        raise ConfigError(f"cannot edit: no item {index} in `{key}`")
    if value.flow_style:
        items = _load(text[value.start_mark.index : value.end_mark.index])[0]
        del items[index]
        flow = yaml.safe_dump(items, default_flow_style=True, sort_keys=False).strip()
        return text[: value.start_mark.index] + flow + text[value.end_mark.index :]
    item = value.value[index]
    start = text.rfind("\n", 0, item.start_mark.index) + 1
    end = _line_end(text, _content_end(item))
    if len(value.value) == 1:
        line_start = text.rfind("\n", 0, key_node.start_mark.index) + 1
        indent = " " * key_node.start_mark.column
        return text[:line_start] + f"{indent}{key}: []" + _newline(text) + text[end:]
    return text[:start] + text[end:]


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` whole (`datadir.replace_file`), keeping the file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else FILE_MODE
    replace_file(path, text.encode("utf-8"), mode=mode)


def read_text_exact(path: Path) -> str:
    """A file's text with its line endings untouched."""
    with open(path, encoding="utf-8", newline="") as handle:
        text: str = handle.read()
    return text


def add_to_markdown(path: Path, items: Sequence[Mapping[str, Any]]) -> None:
    """Append `items` to `content_sources:` of a Markdown file; its body is kept exactly."""
    if not path.exists():
        text = "---\n" + _render(items, 2, "\n").join(["content_sources:\n", ""]) + "---\n"
        write_atomic(path, text + NEW_SOURCES_FILE_BODY)
        return
    text = read_text_exact(path)
    parts = split_sources_file(text, path)
    if parts is None:
        nl = _newline(text)
        front = append_items("", "content_sources", items).replace("\n", nl)
        write_atomic(path, f"---{nl}{front}---{nl}{text}")
        return
    front = append_items(parts.front, "content_sources", items)
    write_atomic(path, parts.head + front + parts.tail)


def remove_from_markdown(path: Path, index: int) -> None:
    text = read_text_exact(path)
    parts = split_sources_file(text, path)
    if parts is None:
        raise ConfigError(f"{path}: has no front matter to remove a source from")
    front = remove_item(parts.front, "content_sources", index)
    write_atomic(path, parts.head + front + parts.tail)


def add_to_yaml(path: Path, items: Sequence[Mapping[str, Any]]) -> None:
    """Append `items` to `sources:` of a YAML config file (created with `version: 1`)."""
    text = read_text_exact(path) if path.exists() else "version: 1\n"
    write_atomic(path, append_items(text, "sources", items))


def remove_from_yaml(path: Path, index: int) -> None:
    write_atomic(path, remove_item(read_text_exact(path), "sources", index))
