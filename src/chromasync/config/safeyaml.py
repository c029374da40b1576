"""The one YAML loader: every YAML chromasync reads (front matter, config, sources files).

Design notes: docs/internals.md, `config/safeyaml.py`.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any

import yaml

MAX_CHARS = 1 << 18
MAX_DEPTH = 64
MAX_NODES = 100_000
_SURROGATE = re.compile("[\ud800-\udfff]")


def _refuse(problem: str, mark: Any = None) -> yaml.MarkedYAMLError:
    return yaml.MarkedYAMLError(None, None, problem, mark)


class _BoundedLoader(yaml.SafeLoader):
    aliases = True

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.depth = self.nodes = 0
        self.sizes: dict[str, int] = {}  # anchor -> nodes it stands for

    def compose_node(self, parent: Any, index: Any) -> Any:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        alias = isinstance(event, yaml.AliasEvent)
        if alias and not self.aliases:
            raise _refuse("YAML aliases are not allowed here", event.start_mark)
        start, self.depth = self.nodes, self.depth + 1
        self.nodes += self.sizes.get(event.anchor, 1) if alias else 1
        if self.nodes > MAX_NODES:
            raise _refuse(f"over {MAX_NODES:,} values, aliases expanded", event.start_mark)
        if self.depth > MAX_DEPTH:
            raise _refuse(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        if event.anchor and not alias:
            self.sizes[event.anchor] = self.nodes - start
        return node

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, OverflowError, AttributeError, LookupError) as exc:
            kind = str(node.tag).rsplit(":", 1)[-1]  # (the value is not shown: a secret?)
            raise _refuse(f"not a readable {kind} value", node.start_mark) from exc

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[tuple[type, Any]] = set()
        for key_node, _ in node.value if isinstance(node, yaml.MappingNode) else ():
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                raise _refuse("a key is not a scalar", key_node.start_mark)
            if (type(key), key) in seen:  # 1 and True are equal in Python, not in YAML
                raise _refuse(f"duplicate key {key!r}", key_node.start_mark)
            seen.add((type(key), key))
        return super().construct_mapping(node, deep=deep)

    def construct_scalar(self, node: Any) -> Any:
        value = super().construct_scalar(node)
        if isinstance(value, str) and _SURROGATE.search(value):  # `"\\ud83d\\ude00"`: one emoji
            try:
                return value.encode("utf-16", "surrogatepass").decode("utf-16")
            except UnicodeDecodeError:  # a lone half: no text can hold it (nor Chroma)
                raise _refuse("an escape names half a character", node.start_mark) from None
        return value

    def construct_yaml_timestamp(self, node: Any) -> Any:
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError:  # `2001-02-30`: the text as written (`date-unreadable` in a note)
            return self.construct_scalar(node)


_BoundedLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", _BoundedLoader.construct_yaml_timestamp
)


class _NoAliasLoader(_BoundedLoader):
    aliases = False


def yaml_problem(exc: yaml.YAMLError, line_offset: int = 0) -> str:
    """`line N: what` for a YAML error, on one line (the text quoted under it left out)."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1 + line_offset}: " if mark is not None else ""
    return where + (getattr(exc, "problem", None) or "invalid YAML")


def load_yaml(text: str, aliases: bool = True) -> tuple[Any, Any]:
    """The data of the one YAML document `text` and its node tree (None, None when empty).

    Raises `yaml.YAMLError` (a `MarkedYAMLError` with the line where it could) for bad
    syntax, unsafe tags, a bound passed, an alias when `aliases` is False, or a bad key.
    """
    if len(text) > MAX_CHARS:
        raise _refuse(f"over {MAX_CHARS // 1024:,} KiB of YAML ({len(text):,} characters)")
    try:
        loader = (_BoundedLoader if aliases else _NoAliasLoader)(text)
    except yaml.reader.ReaderError as exc:  # a control character (NUL...): no line of its own
        mark = yaml.Mark("<text>", exc.position, text.count("\n", 0, exc.position), 0, None, 0)
        raise _refuse(f"a control character (#x{exc.character:04x})", mark) from exc
    try:
        node = loader.get_single_node()
        return (None, None) if node is None else (loader.construct_document(node), node)
    except ValueError as exc:  # `"\\U00110000"`: the scanner's chr() refuses it
        mark = loader.get_mark()
        raise _refuse("an escape names no character", mark) from exc
    finally:
        loader.dispose()
