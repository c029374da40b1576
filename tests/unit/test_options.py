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
    # `--date-field`'s help also names its setting's variable and default (`setting_option`)
    assert param.help == option.help or (param.help or "").startswith(option.help[:-1] + " [env ")
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


def test_rest_takes_every_option_with_its_bounds(tmp_path: Path) -> None:
    from chromasync.config.resolve import resolve_settings
    from chromasync.owner.service import Service
    from chromasync.rest import create_app

    settings = resolve_settings({"data_dir": str(tmp_path / "data"), "provider": "hash"}, {})
    schema = create_app(Service(settings, "serve")).openapi()
    query = {p["name"]: p for p in schema["paths"]["/search"]["get"]["parameters"]}
    assert set(query) == {"q"} | {o.param for o in OPTIONS}
    assert query["k"]["schema"]["maximum"] == BY_NAME["k"].high
    bodies = schema["components"]["schemas"]
    for body, first in (("SearchBody", {"query"}), ("AskBody", {"question", "fallback"})):
        fields = set(bodies[body]["properties"])
        assert fields == first | {"spelling"} | set(BY_NAME), body
        assert bodies[body]["properties"]["k"]["maximum"] == BY_NAME["k"].high
    docs = (Path(__file__).resolve().parents[2] / "docs" / "rest.md").read_text()
    table = docs.split("### `GET /search`")[1].split("###")[0]
    for option in OPTIONS:
        assert f"`{option.param}`" in table, f"docs/rest.md: GET /search lacks {option.param}"


def test_the_mcp_tools_take_every_option_with_its_bounds(tmp_path: Path) -> None:
    import asyncio

    from chromasync.config.resolve import resolve_settings
    from chromasync.mcp import Backend, build_server

    settings = resolve_settings({"data_dir": str(tmp_path / "data"), "provider": "hash"}, {})
    server = build_server(Backend(settings))
    tools = {t.name: t for t in asyncio.run(server.list_tools())}
    for tool, first in (("search", {"query"}), ("ask", {"question", "fallback"})):
        schema = tools[tool].input_schema
        assert set(schema["properties"]) == first | set(BY_NAME), tool
        assert schema["properties"]["k"]["maximum"] == BY_NAME["k"].high
        assert schema["properties"]["mode"]["enum"] == list(BY_NAME["mode"].choices)


def test_the_seams_limits_are_one_declaration_on_every_surface(tmp_path: Path) -> None:
    """`links` and `summaries` take the default and bound `owner/queries.py` declares, on
    the CLI, REST and MCP alike (they differed: 100,000 against 10,000; 1,000 and 50 on
    MCP against 10,000 and 100), and the record itself refuses more (the owner's wire)."""
    import asyncio

    from chromasync.cli.main import main
    from chromasync.config.resolve import resolve_settings
    from chromasync.errors import ConfigError
    from chromasync.mcp import Backend, build_server
    from chromasync.owner import queries as q
    from chromasync.owner.service import Service
    from chromasync.rest import create_app

    bounds = {"links": (q.LINKS_LIMIT, q.MAX_LINKS_LIMIT)}
    bounds["summaries"] = (q.SUMMARIES_LIMIT, q.MAX_SUMMARIES_LIMIT)
    commands = {"links": "links", "summaries": "summarize"}
    for name, (default, most) in bounds.items():
        param = next(p for p in main.commands[commands[name]].params if p.name == "limit")
        assert isinstance(param.type, click.IntRange)
        assert (param.default, param.type.max) == (default, most), name
    settings = resolve_settings({"data_dir": str(tmp_path / "data"), "provider": "hash"}, {})
    schema = create_app(Service(settings, "serve")).openapi()
    for name, (default, most) in bounds.items():
        query = {p["name"]: p for p in schema["paths"][f"/{name}"]["get"]["parameters"]}
        assert (query["limit"]["schema"]["default"], query["limit"]["schema"]["maximum"]) == (
            default,
            most,
        ), name
    tools = {t.name: t for t in asyncio.run(build_server(Backend(settings)).list_tools())}
    limit = tools["summaries"].input_schema["properties"]["limit"]
    assert (limit["default"], limit["maximum"]) == bounds["summaries"]
    assert q.LinksQuery("x").limit == q.LINKS_LIMIT
    from chromasync import versions
    from chromasync.corpus import links
    from chromasync.retrieve import options

    assert links.MAX_TARGET_CHARS is versions.MAX_TARGET_CHARS is options.MAX_TARGET_CHARS
    assert q.SummariesQuery("source").limit == q.SUMMARIES_LIMIT
    for record, most in (
        (q.LinksQuery, q.MAX_LINKS_LIMIT),
        (q.SummariesQuery, q.MAX_SUMMARIES_LIMIT),
    ):
        for bad in (0, most + 1):
            with pytest.raises(ConfigError, match="limit"):
                record("x", limit=bad)


def test_a_question_is_checked_in_one_place_of_the_seam() -> None:
    """`MAX_QUESTION_CHARS` is declared once and checked by `answer.ask.ask` (every `ask`
    surface's seam: CLI, `LocalIndex`, NATS through it), by `answer_question` (the library's
    own) and before a REST answer stream starts (a 4xx then); nowhere else by hand (the CLI,
    `owner/local.py` and NATS checked it again each). Pydantic bounds it at the trust
    boundaries (REST bodies, MCP and NATS arguments) from the same constant."""
    import re

    src = Path(__file__).resolve().parents[2] / "src" / "chromasync"
    callers = {
        str(path.relative_to(src))
        for path in src.rglob("*.py")
        if re.search(r"\bcheck_question\(", path.read_text(encoding="utf-8"))
    }
    assert callers == {"answer/ask.py", "rest/render.py"}
    declared = [
        str(path.relative_to(src))
        for path in src.rglob("*.py")
        if re.search(r"^MAX_QUESTION_CHARS\s*=", path.read_text(encoding="utf-8"), re.M)
    ]
    assert declared == ["retrieve/options.py"]
