"""Every search option is declared once (`retrieve.options`); each surface is checked here
against that declaration: the CLI's click options, the request record's fields, the
filters' bounds."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from chromasync.cli.main import main
from chromasync.retrieve import filter_syntax
from chromasync.retrieve.options import BY_NAME, KINDS, OPTIONS, SPELLINGS, Option, spelled
from chromasync.retrieve.request import SearchArgs


def test_the_declaration_is_consistent() -> None:
    names = [o.name for o in OPTIONS]
    assert len(names) == len(set(names))
    flags = [flag for o in OPTIONS for flag in (o.flag, o.negative) if flag]
    assert len(flags) == len(set(flags)) and all(f.startswith("--") for f in flags)
    params = [o.param for o in OPTIONS]
    assert len(params) == len(set(params))
    for o in OPTIONS:
        assert o.kind in KINDS and o.help
        assert o.flag or o.negative, o
        if o.many:
            assert o.default == () and o.max_items and o.max_chars
        if o.kind == "choice":
            assert o.default in o.choices
        if o.kind in ("int", "float"):
            assert o.low is not None and o.high is not None
        if o.kind == "text":
            assert o.max_chars, o
    with pytest.raises(AttributeError):
        OPTIONS[0].name = "x"  # type: ignore[misc]


def test_spellings() -> None:
    assert set(SPELLINGS) == {"cli", "query", "json"}
    assert spelled("where_json", "cli") == "--where-json"
    assert spelled("where_json", "query") == "where_json"
    assert spelled("sources", "query") == "source"
    assert spelled("sources", "json") == "sources"
    assert spelled("rerank", "cli") == "rerank"  # no flag of its own: --no-rerank negates it
    assert spelled("nothing", "cli") == "nothing"


def test_the_module_imports_nothing() -> None:
    """The fast path reads it before anything else: no typing, no dataclasses."""
    code = (
        "import sys; before = set(sys.modules); import chromasync.retrieve.options; "
        "new = sorted(set(sys.modules) - before); import json; print(json.dumps(new))"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    loaded = set(json.loads(out.stdout))
    package = {"chromasync", "chromasync.retrieve", "chromasync.retrieve.options"}
    assert loaded - package <= {"__future__", "chromasync.versions"}


def test_the_request_record_has_a_field_per_option() -> None:
    fields = {f.name: f for f in dataclasses.fields(SearchArgs)}
    assert set(fields) - {"query"} >= set(BY_NAME)
    for option in OPTIONS:
        default = fields[option.name].default
        assert default == option.default, option


def _params(command: str) -> dict[str, click.Parameter]:
    cmd = main.commands[command]
    return {p.name: p for p in cmd.params if p.name}


@pytest.mark.parametrize("command", ["search", "ask"])
@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_the_cli_options_are_the_declared_ones(command: str, option: Option) -> None:
    params = _params(command)
    if option.name == "rerank":
        param = params["no_rerank"]
        assert param.opts == [option.negative] and param.help == option.help
        return
    param = params["collection" if option.name == "collections" else option.name]
    assert isinstance(param, click.Option)
    assert option.flag in param.opts
    if option.negative:
        assert param.secondary_opts == [option.negative]
    assert param.multiple == option.many
    if option.name == "collections":
        return  # the collection setting's option too (`store_options`)
    assert param.help == option.help
    if not option.many and option.kind != "bool":
        assert param.default == option.default
    if option.kind == "choice":
        assert isinstance(param.type, click.Choice)
        assert tuple(param.type.choices) == option.choices
    if option.kind in ("int", "float"):
        assert isinstance(param.type, click.IntRange | click.FloatRange)
        assert (param.type.min, param.type.max) == (option.low, option.high)


def test_the_filters_bound_with_the_declared_numbers() -> None:
    from chromasync.retrieve import options

    assert filter_syntax.MAX_OPTION_VALUES == options.MAX_OPTION_VALUES
    assert filter_syntax.MAX_VALUE_CHARS == options.MAX_VALUE_CHARS
    assert filter_syntax.MAX_WHERE_JSON_CHARS == options.MAX_WHERE_JSON_CHARS
