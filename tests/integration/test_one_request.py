"""One request on every surface: each search option (`retrieve.options.OPTIONS`) gives the
same hits through the CLI (in this process, and through a running owner), REST's `GET
/search` and `POST /search`, and MCP's `search` tool; the bounds are the same everywhere,
an error names the option as the caller spells it, and `ask` takes every option
(`links_to` too) on REST and MCP.

A new option needs a case in `CASES` (the first test says which is missing)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from chromasync import api
from chromasync.cli.main import main
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.nats.errors import BadMessage
from chromasync.nats.payloads import RetrieveRequest, parse
from chromasync.owner.service import Service
from chromasync.rest import create_app
from chromasync.retrieve.options import BY_NAME, MAX_K, OPTIONS, Option
from chromasync.retrieve.options import QUERY as QUERY_TEXT

from ..conftest import age_tree

QUERY = "espresso grinder burrs"
FILES = {
    "a.md": """---
title: Alpha espresso
date: 2026-01-10
tags: [coffee, journal]
year: 2024
---
# Alpha

Pulled an espresso after cleaning the grinder burrs. See [the beta guide](sub/b.md) and
[the docs](https://example.org/docs/grinders).
""",
    "sub/b.md": """---
title: Beta grinder
date: 2026-03-01
tags: [coffee, hardware]
year: 2025
---
# Beta

## Burrs

The espresso grinder burrs touch at zero; back off two steps. More at
[the site](https://example.org/site).

## Cleaning

"""
    + "Brush the grinder burrs weekly and wipe the espresso hopper dry. " * 80
    + """

## Storage

"""
    + "Keep the grinder out of the damp; espresso beans go stale in a week. " * 80
    + "\n",
    "sub/c.md": """---
title: Gamma sourdough
published_at: 2025-11-02
tags: [baking]
year: 2023
---
# Gamma

Sourdough bread goes well with an espresso; the grinder stays in the cupboard.
Back to [alpha](../a.md).
""",
    "d.txt": "Ideas: an espresso kite, no grinder at all, burrs of a chestnut.\n",
}

#: One value for each option, each unlike its default.
CASES: dict[str, Any] = {
    "all_collections": True,
    "mode": "keyword",
    "feedback": True,
    "k": 2,
    "sources": ["extra"],
    "where": ["year=2025"],
    "where_json": {"year": {"$gte": 2024}},
    "tags": ["coffee"],
    "tags_all": True,
    "after": "2026-02-01",
    "before": "2026-02-01",
    "date_fields": ["published_at"],
    "paths": ["sub/*"],
    "phrases": ["grinder burrs"],
    "matches": ["title=gamma"],
    "links_to": ["https://example.org"],
    "collections": ["chromasync-notes"],
    "per_doc": True,
    "min_score": 0.9,
    "sort": "date",
    "latest": 1,
    "group_by": "year",
    "rerank": False,
}
#: What some options need beside them to do anything.
WITH: dict[str, dict[str, Any]] = {
    "tags_all": {"tags": ["coffee", "hardware"]},
    "date_fields": {"after": "2025-01-01"},
}
#: Options that cannot change the hits of this corpus (one collection, no reranker).
INERT = {"all_collections", "collections", "rerank"}


def _cli_flags(option: Option, value: Any) -> list[str]:
    if option.kind == "bool":
        flag = option.flag if value else option.negative
        assert flag is not None
        return [flag]
    if option.many:
        return [part for item in value for part in (option.flag or "", item)]
    text = json.dumps(value) if option.kind == "json" else str(value)
    return [option.flag or "", text]


def _query_params(case: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in case.items():
        option = BY_NAME[name]
        if option.kind == "json":
            value = json.dumps(value)
        elif option.kind == "bool":
            value = "true" if value else "false"
        out[option.param] = value
    return out


def _case(name: str) -> dict[str, Any]:
    return {**WITH.get(name, {}), name: CASES[name]}


def _ids(data: dict[str, Any]) -> list[str]:
    return [h["id"] for h in data["hits"]]


def _seen(data: dict[str, Any]) -> tuple[Any, ...]:
    """The hits (id, score) in order, and the groups: what a request's options decide."""
    hits = [(h["id"], round(h["score"], 6)) for h in data["hits"]]
    return hits, data.get("groups")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, dict[str, str]]:
    base = tmp_path_factory.mktemp("one-request")
    root = base / "notes"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    age_tree(root)
    extra = base / "extra"
    extra.mkdir()
    (extra / "e.md").write_text("# Extra\n\nAn espresso grinder with ceramic burrs.\n")
    age_tree(extra)
    settings = api.resolve_settings({"data_dir": str(base / "data"), "provider": "hash"}, {})
    sources = [api.source_for(root), api.source_for(extra)]
    api.ingest(sources, settings, embedder=HashEmbedder())
    env = {
        "CHROMASYNC_DATA_DIR": str(settings.data_dir),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_NO_DAEMON": "1",
        "CHROMASYNC_NO_FASTPATH": "1",
    }
    return settings, env


def _cli(env: dict[str, str], case: dict[str, Any], *extra: str) -> dict[str, Any]:
    argv = ["search", QUERY, "--json", *extra]
    for name, value in case.items():
        argv += _cli_flags(BY_NAME[name], value)
    done = CliRunner().invoke(main, argv, env=env)
    assert done.exit_code == 0, (argv, done.stderr, done.output)
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _mcp(settings: Settings, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each (tool, arguments) called on an in-process MCP server (its results' data, or the
    error's text), which becomes the data dir's owner."""
    from mcp.server.mcpserver.exceptions import ToolError

    from chromasync.mcp import Backend, build_server

    backend = Backend(settings)
    server = build_server(backend)

    async def run() -> list[Any]:
        out: list[Any] = []
        for tool, arguments in calls:
            try:
                result = await server.call_tool(tool, arguments)
            except ToolError as exc:
                out.append(str(exc))
                continue
            out.append(json.loads(result.content[0].text))
        return out

    try:
        return asyncio.run(run())
    finally:
        backend.close()


def test_every_option_has_a_case() -> None:
    assert set(CASES) == set(BY_NAME), "add a case for each new option"


def test_every_option_gives_the_same_hits_on_every_surface(
    indexed: tuple[Settings, dict[str, str]],
) -> None:
    settings, env = indexed
    names = [o.name for o in OPTIONS]
    baseline = _cli(env, {})
    assert len(_ids(baseline)) >= 3
    cli = {name: _cli(env, _case(name)) for name in names}
    for name in names:
        if name not in INERT:
            assert _seen(cli[name]) != _seen(baseline), f"{name} changed nothing: a better case"
    # feedback reorders the hits (the lists asked again toward the best documents), not only
    # their scores
    assert _ids(cli["feedback"]) != _ids(baseline)
    assert set(_ids(cli["feedback"])) & set(_ids(baseline))
    with (
        Service(settings, "serve", embedder=HashEmbedder()) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as client,
    ):
        for name in names:
            got = client.get("/search", params={"q": QUERY, **_query_params(_case(name))})
            assert got.status_code == 200, (name, got.text)
            assert _seen(got.json()) == _seen(cli[name]), name
            assert got.json()["filters"] == cli[name]["filters"], name
            posted = client.post("/search", json={"query": QUERY, **_case(name)})
            assert posted.status_code == 200, (name, posted.text)
            assert _seen(posted.json()) == _seen(cli[name]), name
    results = _mcp(settings, [("search", {"query": QUERY, **_case(name)}) for name in names])
    for name, data in zip(names, results, strict=True):
        assert isinstance(data, dict), (name, data)
        assert _seen(data) == _seen(cli[name]), name
        assert data["filters"] == cli[name]["filters"], name


def test_the_cli_through_a_running_owner_sends_the_request_as_data(
    indexed: tuple[Settings, dict[str, str]],
) -> None:
    """While an MCP server owns the data dir, the CLI's searches go through its socket
    (`POST /search`, the request record as JSON) and give the hits of a search in process."""
    from chromasync.mcp import Backend

    settings, env = indexed
    names = [o.name for o in OPTIONS]
    alone = {name: _cli(env, _case(name)) for name in names}
    backend = Backend(settings)
    try:
        with backend.access():
            pass  # it becomes the owner, serving the REST API on the owner's socket
        for name in names:
            through = _cli(env, _case(name))
            assert through == alone[name], name
    finally:
        backend.close()


def test_k_has_one_bound_everywhere(indexed: tuple[Settings, dict[str, str]]) -> None:
    """k was capped at 100 on MCP (and NATS) and 1,000 elsewhere: now `MAX_K` on every surface."""
    settings, env = indexed
    assert MAX_K == 1000
    done = CliRunner().invoke(main, ["search", QUERY, "--json", "--k", "500"], env=env)
    assert done.exit_code == 0, done.stderr
    too_many = CliRunner().invoke(main, ["search", QUERY, "--k", "1001"], env=env)
    assert too_many.exit_code == 2
    with (
        Service(settings, "serve", embedder=HashEmbedder()) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as client,
    ):
        assert client.get("/search", params={"q": QUERY, "k": 500}).status_code == 200
        assert client.get("/search", params={"q": QUERY, "k": 1001}).status_code == 422
        assert client.post("/search", json={"query": QUERY, "k": 1001}).status_code == 422
    ok, refused, asked = _mcp(
        settings,
        [
            ("search", {"query": QUERY, "k": 500}),
            ("search", {"query": QUERY, "k": 1001}),
            ("ask", {"question": QUERY, "k": 500}),
        ],
    )
    assert isinstance(ok, dict) and _ids(ok) == _ids(json.loads(done.stdout))
    assert isinstance(refused, str) and "k" in refused
    assert isinstance(asked, dict) and asked["citations"]
    # NATS's `top_k` (its design's name for k) had 100 of its own
    retrieve = {"client_id": "t", "query": QUERY}
    assert parse(RetrieveRequest, json.dumps({**retrieve, "top_k": 500}).encode(), 1 << 20)
    with pytest.raises(BadMessage):
        parse(RetrieveRequest, json.dumps({**retrieve, "top_k": 1001}).encode(), 1 << 20)


def test_links_to_works_on_rest_and_mcp_ask(indexed: tuple[Settings, dict[str, str]]) -> None:
    settings, _ = indexed
    linking = {"a.md", "sub/b.md"}  # the files linking to example.org
    with (
        Service(settings, "serve", embedder=HashEmbedder()) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as client,
    ):
        body = {"question": QUERY, "links_to": ["https://example.org"], "fallback": "extractive"}
        got = client.post("/ask", json=body)
        assert got.status_code == 200, got.text
        cited = {c["path"] for c in got.json()["citations"]}
        assert cited and cited <= linking
    [answer] = _mcp(settings, [("ask", {"question": QUERY, "links_to": ["https://example.org"]})])
    assert isinstance(answer, dict), answer
    assert {c["path"] for c in answer["citations"]} <= linking and answer["citations"]


def test_an_error_names_the_option_as_the_caller_spells_it(
    indexed: tuple[Settings, dict[str, str]],
) -> None:
    settings, env = indexed
    done = CliRunner().invoke(main, ["search", QUERY, "--where-json", "[1]"], env=env)
    assert done.exit_code == 2 and "--where-json must be a JSON object" in done.stderr
    done = CliRunner().invoke(main, ["search", QUERY, "--feedback", "--mode", "dense"], env=env)
    assert done.exit_code == 2 and "--feedback works with the hybrid mode only" in done.stderr
    assert "--mode hybrid" in done.stderr
    many = [x for _ in range(65) for x in ("--source", "notes")]
    done = CliRunner().invoke(main, ["search", QUERY, *many], env=env)
    assert done.exit_code == 2 and "--source is given 65 times" in done.stderr
    with (
        Service(settings, "serve", embedder=HashEmbedder()) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as client,
    ):
        got = client.get("/search", params={"q": QUERY, "where_json": "[1]"})
        assert got.status_code == 400
        assert got.json()["detail"].startswith("where_json must be a JSON object")
        got = client.get("/search", params={"q": QUERY, "source": ["notes"] * 65})
        assert got.status_code == 400 and got.json()["detail"].startswith("source is given")
        got = client.post("/search", json={"query": QUERY, "sources": ["notes"] * 65})
        assert got.status_code == 400 and got.json()["detail"].startswith("sources is given")
        got = client.get("/search", params={"q": QUERY, "feedback": "true", "mode": "keyword"})
        assert got.status_code == 400
        assert got.json()["detail"].startswith("feedback works with the hybrid mode only")
        got = client.post("/ask", json={"question": QUERY, "feedback": True, "mode": "dense"})
        assert got.status_code == 400 and "mode hybrid" in got.json()["detail"]
        got = client.post("/ask", json={"question": QUERY, "after": "soon"})
        assert got.status_code == 400 and got.json()["detail"].startswith("after takes a date")
    wrong, late, hybrid_only = _mcp(
        settings,
        [
            ("search", {"query": QUERY, "where_json": "{nonsense"}),
            ("ask", {"question": QUERY, "after": "2026-01-01", "before": "2025-01-01"}),
            ("search", {"query": QUERY, "feedback": True, "mode": "keyword"}),
        ],
    )
    assert "feedback works with the hybrid mode only" in hybrid_only and "--" not in hybrid_only
    assert "where_json is not valid JSON" in wrong and "--where" not in wrong
    assert "after 2026-01-01 is not before before 2025-01-01" in late and "--" not in late


def test_the_query_has_one_bound_and_one_message_everywhere(
    indexed: tuple[Settings, dict[str, str]],
) -> None:
    """The CLI took a query of any length (REST and MCP stopped at 2,000 characters, each
    in pydantic's words); now `options.QUERY` bounds it on every surface, and the one
    message names it as the caller does: `QUERY`, `q`, `query`."""
    settings, env = indexed
    at, over = "grinder " * 250, "grinder " * 250 + "x"
    assert len(at) == QUERY_TEXT.max_chars == 2000
    said = "takes text of at most 2000 characters"
    done = CliRunner().invoke(main, ["search", at, "--json"], env=env)
    assert done.exit_code == 0, done.stderr
    done = CliRunner().invoke(main, ["search", over, "--json"], env=env)
    assert done.exit_code == 2 and not done.stdout
    assert f"QUERY {said}" in done.stderr, done.stderr
    long_question = "What is the grinder? " * 150  # 3,150: a question's own bound is 4,000
    asked = CliRunner().invoke(main, ["ask", long_question, "--json"], env=env)
    assert asked.exit_code == 0, asked.stderr
    with (
        Service(settings, "serve", embedder=HashEmbedder()) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as client,
    ):
        assert client.get("/search", params={"q": at}).status_code == 200
        got = client.get("/search", params={"q": over})
        assert got.status_code == 400 and got.json()["detail"] == f"q {said}", got.text
        got = client.post("/search", json={"query": over})
        assert got.status_code == 400 and got.json()["detail"] == f"query {said}", got.text
        assert client.post("/ask", json={"question": long_question}).status_code == 200
    refused, fine = _mcp(settings, [("search", {"query": over}), ("search", {"query": at})])
    assert isinstance(refused, str) and f"query {said}" in refused, refused
    assert isinstance(fine, dict) and fine["hits"]


def test_a_span_back_from_today_is_a_date_on_every_surface(
    indexed: tuple[Settings, dict[str, str]],
) -> None:
    """Issue 39, Q2: `--after 2y` (`18m`, `3w`, `90d`) was refused; it is the day that many
    units back from today, read by the one date parser, so every surface takes it. The span
    here reaches back exactly to 2026-02-01, whatever day the test runs."""
    import datetime as dt

    settings, env = indexed
    days = (dt.datetime.now(dt.UTC).date() - dt.date(2026, 2, 1)).days
    span = {"after": f"{days}d"}
    dated = _cli(env, {"after": "2026-02-01"})
    paths = {h["path"] for h in dated["hits"]}
    assert paths and paths < {h["path"] for h in _cli(env, {"k": 50})["hits"]}
    cli = _cli(env, span)
    assert _ids(cli) == _ids(dated)
    assert cli["filters"]["after"] == f"{days}d (2026-02-01)"
    with (
        Service(settings, "serve", embedder=HashEmbedder()) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as client,
    ):
        got = client.get("/search", params={"q": QUERY, **span})
        assert got.status_code == 200, got.text
        assert _ids(got.json()) == _ids(dated)
        posted = client.post("/search", json={"query": QUERY, **span})
        assert posted.status_code == 200 and _ids(posted.json()) == _ids(dated)
        got = client.get("/search", params={"q": QUERY, "after": "2q"})
        assert got.status_code == 400 and "2y, 18m" in got.json()["detail"]
    [data] = _mcp(settings, [("search", {"query": QUERY, **span})])
    assert isinstance(data, dict) and _ids(data) == _ids(dated)
    # NATS: `published_after` is the same text, read by the same parser
    from chromasync.nats.payloads import NatsFields, search_args

    asked = {"client_id": "t", "query": QUERY, "top_k": 10, "published_after": f"{days}d"}
    request = parse(RetrieveRequest, json.dumps(asked).encode(), 1 << 20)
    args = search_args(request, NatsFields.of({"published_at": "date"}), {})
    found = api.retrieve(api.search_request(args, settings), settings, embedder=HashEmbedder())
    assert {h.path for h in found.hits} == paths
