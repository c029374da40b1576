"""Records on the owner's wire: any frozen dataclass as JSON, and back, by its type hints.

`to_wire` writes a record field by field (tuples as lists, nested records as objects, a
`Path` as its text); `from_wire` reads it back by the record's annotations, so what the
owner's client returns equals what the same call returns in process. A call is written by
the operation's declaration (`call_to_wire`, read back by `call_from_wire`): one record, or
an object of its parameters by name; the hooks (`HOOKS`) stay in the caller. Pure; the types
it knows: str, int, float, bool, None, `Path`, `Any`, unions, `Literal`, tuples, lists,
`dict[str, X]`/`Mapping`, and dataclasses. See docs/architecture.md, "One route per surface".
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..errors import StoreError

T = TypeVar("T")


def to_wire(value: Any) -> Any:
    """A record (or a value inside one) as JSON-ready data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_wire(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): to_wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_wire(v) for v in value]
    return value


def from_wire(kind: type[T], data: Any) -> T:
    """The record of type `kind` that `to_wire` wrote as `data` (`StoreError` for data of
    another shape: the owner runs other code)."""
    try:
        value: T = _read(kind, data)
    except (TypeError, ValueError, KeyError) as exc:
        name = getattr(kind, "__name__", str(kind))
        raise StoreError(f"a {name} of another shape: {exc}") from exc
    return value


#: The parameters of an operation that stay in the caller's process: callbacks.
HOOKS = frozenset({"progress", "on_token", "recorder", "confirm", "notice"})


@functools.cache
def signature(operation: Callable[..., Any]) -> tuple[dict[str, Any], Any]:
    """(parameter -> type, the result's type) of an operation as declared (its hooks and
    `self` left out)."""
    hints = typing.get_type_hints(operation)
    names = [n for n in inspect.signature(operation).parameters if n != "self"]
    return {n: hints[n] for n in names if n not in HOOKS}, hints["return"]


def _one_record(params: dict[str, Any]) -> str | None:
    """The parameter of an operation that takes one record (sent as that record), or None."""
    if len(params) == 1:
        [(name, kind)] = params.items()
        if dataclasses.is_dataclass(kind):
            return name
    return None


def call_to_wire(operation: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A call of `operation` (as declared, unbound) as the JSON body of its request."""
    bound = inspect.signature(operation).bind(None, *args, **kwargs)
    bound.apply_defaults()
    params, _ = signature(operation)
    record = _one_record(params)
    if record is not None:
        return to_wire(bound.arguments[record])
    return {n: to_wire(bound.arguments[n]) for n in params}


def call_from_wire(operation: Callable[..., Any], body: Any) -> dict[str, Any]:
    """The keyword arguments of a call of `operation` that `call_to_wire` wrote as `body`
    (a parameter left out takes its default; `StoreError` for a body of another shape)."""
    params, _ = signature(operation)
    record = _one_record(params)
    if record is not None:
        return {record: from_wire(params[record], body)}
    declared = inspect.signature(operation).parameters
    needed = {n for n in params if declared[n].default is inspect.Parameter.empty}
    if not isinstance(body, Mapping) or not needed <= set(body) <= set(params):
        raise StoreError(f"expected an object of {', '.join(params) or 'nothing'}")
    return {n: from_wire(params[n], v) for n, v in body.items()}


@functools.cache
def _hints(kind: type) -> dict[str, Any]:
    module = sys.modules.get(kind.__module__)
    return typing.get_type_hints(kind, vars(module) if module else None)


def _read(kind: Any, data: Any) -> Any:
    if kind is Any or kind is object:
        return data
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        if not isinstance(data, Mapping):
            raise TypeError(f"{kind.__name__}: expected an object, got {type(data).__name__}")
        hints = _hints(kind)
        fields = {
            f.name: _read(hints[f.name], data[f.name])
            for f in dataclasses.fields(kind)
            if f.name in data and f.init
        }
        return kind(**fields)
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if origin is typing.Union or origin is types.UnionType:
        if data is None and type(None) in args:
            return None
        problems = []
        for arm in args:
            if arm is type(None):
                continue
            try:
                return _read(arm, data)
            except (TypeError, ValueError, KeyError) as exc:
                problems.append(str(exc))
        raise TypeError("; ".join(problems) or f"no type of {kind} reads {data!r}")
    if origin is typing.Literal:
        if data not in args:
            raise ValueError(f"{data!r} is none of {args}")
        return data
    if origin in (tuple, list, Sequence) or kind in (tuple, list):
        if not isinstance(data, list | tuple):
            raise TypeError(f"expected a list, got {type(data).__name__}")
        if origin is tuple and args and args[-1] is not Ellipsis:
            items = [_read(a, v) for a, v in zip(args, data, strict=True)]
        else:
            item = args[0] if args else Any
            items = [_read(item, v) for v in data]
        return items if origin in (list, Sequence) or kind is list else tuple(items)
    if origin in (dict, Mapping) or kind in (dict, Mapping):
        if not isinstance(data, Mapping):
            raise TypeError(f"expected an object, got {type(data).__name__}")
        value_kind = args[1] if len(args) == 2 else Any
        return {str(k): _read(value_kind, v) for k, v in data.items()}
    if kind is Path:
        return Path(str(data))
    if kind is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if isinstance(kind, type):
        if not isinstance(data, kind) or (kind is int and isinstance(data, bool)):
            raise TypeError(f"expected {kind.__name__}, got {type(data).__name__}")
        return data
    return data


__all__ = ["HOOKS", "call_from_wire", "call_to_wire", "from_wire", "signature", "to_wire"]
