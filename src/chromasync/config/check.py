"""Reading config text with line numbers, and checking it against the Pydantic models.

`parse_yaml` and `parse_toml` return the data and a map from key paths to lines (TOML by
scanning its headers and keys, since `tomllib` keeps no positions). `validate` reports
every problem at once, each with its line: unknown keys with the closest known key,
secrets by key name or as a password inside a URL (never their values), and Pydantic's own
complaints without the input values they would otherwise echo.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import ConfigError, is_secret_key
from .safeyaml import MAX_DEPTH, load_yaml, yaml_problem
from .settings import SETTINGS

CONFIG_VERSION = 1
MAX_PROBLEMS = 20  # listed of a file's problems (the first, by line)


# -- parsing with line numbers ------------------------------------------------------------


LineMap = dict[tuple[str | int, ...], int]


def parse_yaml(text: str, where: str, line_offset: int = 0) -> tuple[Any, LineMap]:
    """YAML to Python data (through the one bounded loader), plus the line of every key and
    list item; `line_offset`: lines before `text` in its file."""
    try:
        data, node = load_yaml(text)
    except yaml.YAMLError as exc:
        problem = yaml_problem(exc, line_offset)
        raise ConfigError(f"{where}: {problem}; fix the YAML") from exc
    lines: LineMap = {}
    if node is not None:
        _yaml_lines(node, (), lines)
    return data, lines


def _yaml_lines(node: Any, path: tuple[str | int, ...], lines: LineMap) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            lines[(*path, key)] = key_node.start_mark.line + 1
            _yaml_lines(value_node, (*path, key), lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _yaml_lines(item, (*path, index), lines)


_TOML_ARRAY = re.compile(r"^\s*\[\[\s*([^\]]+?)\s*\]\]")
_TOML_TABLE = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]")
_TOML_KEY = re.compile(r"^\s*((?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_.\- ]+?))\s*=")


def parse_toml(text: str, where: str) -> tuple[Any, LineMap]:
    """TOML to Python data, plus the line of every key and table (found by scanning, which
    also refuses a key or table of over `MAX_DEPTH` parts: tomllib takes quadratic time)."""
    deep = f"nested deeper than {MAX_DEPTH} levels"
    lines: LineMap = {}
    table: tuple[str | int, ...] = ()
    arrays: dict[tuple[str, ...], int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        head = _TOML_ARRAY.match(line) or _TOML_TABLE.match(line) or _TOML_KEY.match(line)
        if head and head.group(1).count(".") >= MAX_DEPTH:
            raise ConfigError(f"{where}: line {number}: {deep}; fix the TOML")
        if match := _TOML_ARRAY.match(line):
            name = tuple(_toml_key(match.group(1)))
            index = arrays.get(name, -1) + 1
            arrays[name] = index
            table = (*name, index)
            lines.setdefault(name, number)
            lines[table] = number
        elif match := _TOML_TABLE.match(line):
            table = tuple(_toml_key(match.group(1)))
            for depth in range(1, len(table) + 1):
                lines.setdefault(table[:depth], number)
        elif match := _TOML_KEY.match(line):
            lines.setdefault((*table, *_toml_key(match.group(1))), number)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: invalid TOML: {exc}; fix the syntax") from exc
    except (RecursionError, ValueError) as exc:  # 1,000 nested arrays; an int of 5,000 digits
        problem = deep if isinstance(exc, RecursionError) else "not a readable int value"
        at = _toml_line(exc, text)
        raise ConfigError(f"{where}: line {at}: {problem}; fix the TOML") from None
    return data, lines


def _toml_line(exc: BaseException, text: str) -> int:
    """The line tomllib had reached when `exc` stopped it: the innermost `pos` its frames
    held (tomllib's parsers each take the position as `pos`)."""
    pos, frame = 0, exc.__traceback__
    while frame is not None:
        held = frame.tb_frame.f_locals.get("pos")
        pos = held if isinstance(held, int) else pos
        frame = frame.tb_next
    return text.count("\n", 0, pos) + 1


def _toml_key(text: str) -> list[str]:
    return [part.strip().strip("\"'") for part in text.split(".")]


def line_of(lines: LineMap, path: Sequence[str | int]) -> int:
    """The line of `path`, or of its closest ancestor that has one (1 if none)."""
    for depth in range(len(path), 0, -1):
        if tuple(path[:depth]) in lines:
            return lines[tuple(path[:depth])]
    return 1


# -- validation -----------------------------------------------------------------------------


#: A URL holding a password (``scheme://user:secret@host``): a secret in a value.
_URL_PASSWORD = re.compile(r"://[^/@\s:]*:[^/@\s]+@")


def _secret_env(path: Sequence[str | int]) -> str:
    """The variable of the secret setting a secret found in the config file belongs in."""
    lowered = str(path[-1]).lower()
    if path and path[0] == "nats":
        setting = "nats_password" if "pass" in lowered else "nats_token"
    elif (path and path[0] == "answer") or lowered.startswith("llm"):
        setting = "llm_api_key"
    elif (path and path[0] in ("serve", "mcp")) or lowered.startswith("api_token"):
        setting = "api_token"
    elif "token" in lowered or lowered in {"bearer", "authorization"}:
        setting = "chroma_token"
    else:
        setting = "embedding_api_key"
    return next(spec.env[0] for spec in SETTINGS if spec.name == setting)


def find_secrets(data: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Paths of keys that hold a secret (by name), at any depth."""
    found: list[tuple[str | int, ...]] = []
    if isinstance(data, Mapping):
        for key, value in data.items():
            here = (*path, str(key))
            named = is_secret_key(str(key)) and value not in (None, "")
            if named or (isinstance(value, str) and _URL_PASSWORD.search(value)):
                found.append(here)
            else:
                found.extend(find_secrets(value, here))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            found.extend(find_secrets(item, (*path, index)))
    return found


def dotted(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validate(
    model: type[BaseModel],
    data: Any,
    lines: LineMap,
    where: str,
    line_offset: int = 0,
    check_version: bool = True,
) -> Any:
    """Validate `data` against `model`; every problem in one ConfigError, values never shown."""
    problems: list[tuple[int, str]] = []
    for path in find_secrets(data):
        problems.append(
            (
                line_of(lines, path) + line_offset,
                f"`{dotted(path)}` is a secret and secrets are not accepted in a config file "
                f"(it may be committed or readable by others); set {_secret_env(path)} "
                "in the environment or pass it as a flag (the value is not shown)",
            )
        )
    if not isinstance(data, Mapping):
        problems.append((1 + line_offset, "the file must hold a mapping of settings"))
        raise _problems(where, problems)
    version = data.get("version", CONFIG_VERSION)
    if "version" in data and check_version and version != CONFIG_VERSION:
        shown = version if isinstance(version, int | float) else type(version).__name__
        problems.append(
            (
                line_of(lines, ("version",)) + line_offset,
                f"unsupported config version {shown}; this chromasync reads version "
                f"{CONFIG_VERSION}",
            )
        )
    secret_paths = {p for p in find_secrets(data)}
    try:
        result = model.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            loc = tuple(error["loc"])
            if any(loc[: len(p)] == p for p in secret_paths):
                continue
            line = line_of(lines, loc) + line_offset
            if error["type"] == "extra_forbidden":
                problems.append((line, _unknown_key(model, loc)))
            elif loc == ("version",):
                continue
            else:
                problems.append((line, f"`{dotted(loc)}`: {error['msg']}"))
        if problems:
            raise _problems(where, problems) from None
        raise ConfigError(f"{where}: invalid configuration") from None
    if problems:
        raise _problems(where, problems)
    return result


def _unknown_key(model: type[BaseModel], loc: tuple[str | int, ...]) -> str:
    known = _fields_at(model, loc[:-1])
    name = str(loc[-1])
    message = f"unknown key `{dotted(loc)}`"
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        message += f" (did you mean `{close[0]}`?)"
    elif known:
        message += f"; known keys here: {', '.join(known)}"
    return message


def _fields_at(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        info = current.model_fields.get(str(part))
        if info is None:
            return []
        current = _inner_model(info.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _inner_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _problems(where: str, problems: list[tuple[int, str]]) -> ConfigError:
    problems.sort(key=lambda p: p[0])
    if len(problems) == 1:
        line, text = problems[0]
        return ConfigError(f"{where}: line {line}: {text}")
    body = "\n".join(f"  line {line}: {text}" for line, text in problems[:MAX_PROBLEMS])
    more = f"\n  and {len(problems) - MAX_PROBLEMS:,} more" if len(problems) > MAX_PROBLEMS else ""
    return ConfigError(f"{where}: {len(problems):,} problems:\n{body}{more}")
