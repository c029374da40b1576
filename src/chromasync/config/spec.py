"""The one declaration of every setting, and the one check of every value.

Design notes: docs/internals.md, `config/spec.py`.
"""

from __future__ import annotations

import math
import os
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

#: How a value is read: `str`, `int`, `float`, `path` (a folder or file; in the config file,
#: relative to the file), `csv` (comma-separated text; a list in the config file), `strings`
#: (a list of text; config file or flag only), `options` (a mapping; config file or flag only).
Kind = Literal["str", "int", "float", "path", "csv", "strings", "options"]
_META = "chromasync.setting"


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting, as declared (see the module docstring)."""

    name: str
    kind: Kind
    default: Any
    help: str
    env: tuple[str, ...] = ()  # the first one set (and not empty) wins
    file: tuple[str, ...] = ()  # dotted config-file keys; the first one present wins
    low: float | None = None
    high: float | None = None
    above: bool = False  # `low` itself is refused
    choices: tuple[str, ...] = ()
    max_length: int | None = None
    secret: bool = False  # never shown, never echoed, never accepted from the file
    relative: bool = False  # a `str` that is a path relative to the config file
    test: Callable[[str], str | None] | None = None  # a further check: the problem, or None

    def spelled(self, origin: str) -> str:
        """The setting's name as `origin` spells it: `env NAME`, `file ...`, `flag`."""
        if origin.startswith("env "):
            return origin[4:]
        return self.name

    def bound(self) -> str:
        """The bound in words ("" when there is none): for messages and the docs."""
        if self.choices:
            return "one of " + ", ".join(self.choices)
        low, high = _number(self.low), _number(self.high)
        if self.low is not None and self.high is not None:
            return (
                f"greater than {low} and at most {high}"
                if self.above
                else f"between {low} and {high}"
            )
        if self.low is not None:
            return f"greater than {low}" if self.above else f"at least {low}"
        if self.high is not None:
            return f"at most {high}"
        if self.max_length is not None:
            return f"at most {self.max_length:,} characters"
        return ""


def setting(
    default: Any,
    help: str,
    *,
    env: str | tuple[str, ...] = (),
    file: str | tuple[str, ...] = (),
    low: float | None = None,
    high: float | None = None,
    above: bool = False,
    choices: tuple[str, ...] = (),
    max_length: int | None = None,
    secret: bool = False,
    relative: bool = False,
    csv: bool = False,
    test: Callable[[str], str | None] | None = None,
) -> Any:
    """A `Settings` field holding its declaration (name and kind come from the field)."""
    spec = Setting(
        name="",
        kind="csv" if csv else "str",
        default=default,
        help=help,
        env=(env,) if isinstance(env, str) else env,
        file=(file,) if isinstance(file, str) else file,
        low=low,
        high=high,
        above=above,
        choices=choices,
        max_length=max_length,
        secret=secret,
        relative=relative,
        test=test,
    )
    meta = {_META: spec}
    if isinstance(default, Mapping):
        return field(default_factory=dict, metadata=meta)
    made: Field[Any] = field(default=default, repr=not secret, metadata=meta)
    return made


def declared(cls: type, namespace: Mapping[str, Any]) -> tuple[Setting, ...]:
    """Every field of `cls` declared with `setting`, in order, with its name and kind."""
    hints = typing.get_type_hints(cls, globalns=dict(namespace))
    out = []
    for item in fields(cls):
        spec = item.metadata.get(_META)
        if spec is None:
            continue
        kind = spec.kind if spec.kind == "csv" else _kind(hints[item.name])
        out.append(replace(spec, name=item.name, kind=kind))
    return tuple(out)


def _kind(hint: Any) -> Kind:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = args[0]
    origin = typing.get_origin(hint) or hint
    table: dict[Any, Kind] = {str: "str", int: "int", float: "float", Path: "path"}
    if origin in table:
        return table[origin]
    if origin is tuple:
        return "strings"
    return "options"


# -- the check --------------------------------------------------------------------------------


def check(spec: Setting, raw: Any, spelled: str) -> tuple[Any, str | None]:
    """(the value, None), or (None, the problem) naming the setting as `spelled`.

    `raw` is what the winning origin gave: text from the environment, YAML or TOML data from
    the config file, a Python value from a flag. None (not set) stays None.
    """
    if raw is None:
        return None, None
    shown = "****" if spec.secret else _shown(raw)
    value = _convert(spec.kind, raw)
    if value is _BAD:
        return None, f"{spelled} must be {_KIND_WORDS[spec.kind]}, got {shown}"
    if spec.choices and value not in spec.choices:
        return None, f"{spelled} must be one of {', '.join(spec.choices)}, got {shown}"
    if isinstance(value, int | float) and not _within(spec, value):
        return None, f"{spelled} must be {spec.bound()}, got {_number(value)}"
    if spec.max_length is not None and isinstance(value, str) and len(value) > spec.max_length:
        return None, f"{spelled} must be at most {spec.max_length:,} characters long"
    if spec.test is not None and isinstance(value, str) and value:
        problem = spec.test(value)
        if problem is not None:
            return None, f"{spelled} {problem}"
    return value, None


_BAD = object()
_KIND_WORDS: dict[Kind, str] = {
    "str": "text",
    "int": "a whole number",
    "float": "a number",
    "path": "a path",
    "csv": "comma-separated text or a list of text",
    "strings": "a list of text",
    "options": "a mapping",
}


def _convert(kind: Kind, raw: Any) -> Any:
    if kind == "str":
        return raw if isinstance(raw, str) else _BAD
    if kind == "path":
        return Path(raw).expanduser() if isinstance(raw, str | os.PathLike) else _BAD
    if kind in ("int", "float"):
        return _number_of(kind, raw)
    if kind == "csv":
        if isinstance(raw, str):
            return raw
        if isinstance(raw, list | tuple) and all(isinstance(x, str) for x in raw):
            return ",".join(raw)
        return _BAD
    if kind == "strings":
        if isinstance(raw, list | tuple) and all(isinstance(x, str) for x in raw):
            return tuple(raw)
        return _BAD
    return dict(raw) if isinstance(raw, Mapping) else _BAD


def _number_of(kind: Kind, raw: Any) -> Any:
    if isinstance(raw, bool):
        return _BAD
    if isinstance(raw, str):
        try:
            raw = int(raw.strip()) if kind == "int" else float(raw.strip())
        except ValueError:
            return _BAD
    if not isinstance(raw, int | float) or not math.isfinite(raw):
        return _BAD
    if kind == "float":
        return float(raw)
    return int(raw) if float(raw).is_integer() else _BAD


def _within(spec: Setting, value: float) -> bool:
    if spec.low is not None and (value <= spec.low if spec.above else value < spec.low):
        return False
    return spec.high is None or value <= spec.high


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:,g}" if abs(value) < 1e6 else f"{int(value):,}"


def _shown(raw: Any) -> str:
    if isinstance(raw, str):
        return repr(raw)
    if isinstance(raw, bool | int | float):
        return str(raw)
    return f"a {type(raw).__name__}"


# -- the docs -------------------------------------------------------------------------------


def markdown_rows(specs: tuple[Setting, ...]) -> list[str]:
    """docs/configuration.md's table: variable, setting, config-file key, default, bound."""
    rows = []
    for spec in specs:
        env = ", ".join(f"`{name}`" for name in spec.env)
        key = ", ".join(f"`{k}`" for k in spec.file[:1])
        shown = ", ".join(spec.default) if isinstance(spec.default, tuple) else spec.default
        default = f"`{shown}`" if shown not in (None, "", {}) and not spec.secret else ""
        rows.append(f"| {env} | `{spec.name}` | {key} | {default} | {spec.bound()} |")
    return rows
