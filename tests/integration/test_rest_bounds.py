"""Bounded input on REST and MCP: every hostile or malformed input is a 4xx (an MCP error
result) with a message, never a 5xx, a traceback or a bare tool error; write routes take
JSON objects only and foreign origins are refused. Real Chroma, the app in process."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.owner.service import Service
from chromasync.rest import create_app

from ..conftest import invoke_cli


@pytest.fixture
def service(
    notes: Path, settings: Settings, embedder: HashEmbedder, tmp_path: Path
) -> Iterator[Service]:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    with Service(settings, "serve", embedder=embedder, allow_roots=[tmp_path]) as svc:
        yield svc


@pytest.fixture
def client(service: Service) -> Iterator[TestClient]:
    with TestClient(create_app(service), base_url="http://127.0.0.1") as c:
        yield c


def nested_and(depth: int) -> dict[str, Any]:
    where: dict[str, Any] = {"year": 2024}
    for _ in range(depth):
        where = {"$and": [where, {"draft": False}]}
    return where


# -- item 8: the inputs that were 500s ---------------------------------------------------

HOSTILE_SEARCHES: dict[str, dict[str, Any]] = {
    "in-1000": {"where_json": json.dumps({"path": {"$in": [f"p{i}" for i in range(1000)]}})},
    "and-100-deep": {"where_json": json.dumps(nested_and(100))},
    "json-1000-deep": {"where_json": '{"a": ' * 1000 + "1" + "}" * 1000},
    "phrase-600": {"phrase": [f"w{i}" for i in range(600)]},
    "unknown-operator": {"where_json": json.dumps({"year": {"$regex": "x"}})},
    "in-mixed-types": {"where_json": json.dumps({"year": {"$in": [1, "a"]}})},
    "int-4400-digits": {"where_json": '{"year": ' + "9" * 4400 + "}"},  # was a 500
}


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "dense"])
@pytest.mark.parametrize("case", sorted(HOSTILE_SEARCHES))
def test_hostile_filters_are_400_with_a_message(client: TestClient, case: str, mode: str) -> None:
    params = {"q": "espresso", "mode": mode, **HOSTILE_SEARCHES[case]}
    response = client.get("/search", params=params)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == "ConfigError" and 0 < len(body["detail"]) < 300


def test_long_valid_in_list_in_keyword_mode_is_answered(client: TestClient) -> None:
    values = ["ideas.txt", *[f"nothing-{i}.md" for i in range(200)]]
    for mode in ("keyword", "hybrid"):
        response = client.get(
            "/search",
            params={"q": "idea", "mode": mode, "where_json": json.dumps({"path": {"$in": values}})},
        )
        assert response.status_code == 200, response.text
        assert {h["path"] for h in response.json()["hits"]} == {"ideas.txt"}


def test_repeated_match_echoes_every_value(client: TestClient) -> None:
    response = client.get("/search", params={"q": "kite", "match": ["title=a", "title=b"]})
    assert response.status_code == 200
    assert response.json()["filters"]["match"] == {"title": ["a", "b"]}


def test_cli_answers_hostile_filters_with_exit_2(settings: Settings, notes: Path) -> None:
    env = {"CHROMASYNC_DATA_DIR": str(settings.data_dir), "CHROMASYNC_EMBEDDING_PROVIDER": "hash"}
    ingested = invoke_cli(["ingest", str(notes), "--collection", settings.collection], env=env)
    assert ingested.returncode == 0, ingested.stderr
    for where in (
        json.dumps(nested_and(100)),
        '{"a": ' * 1000 + "1" + "}" * 1000,
        '{"year": ' + "9" * 4400 + "}",  # a ValueError traceback
    ):
        done = invoke_cli(
            ["search", "espresso", "--mode", "keyword", "--where-json", where,
             "--collection", settings.collection],
            env=env,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and ("nest" in done.stderr or "4,300" in done.stderr)


# -- item 9: cross-site writes -------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "content", "status"),
    [
        ({}, None, 415),  # no content type, no body: was accepted, reindexed everything
        ({"content-type": "text/plain"}, b"{}", 415),
        ({"content-type": "application/x-www-form-urlencoded"}, b"source=notes", 415),
        ({"content-type": "application/json"}, b"", 422),
        ({"content-type": "application/json"}, b"null", 422),
        ({"content-type": "application/json"}, b"[]", 422),
        ({"content-type": "application/json"}, b'"notes"', 422),
        ({"content-type": "application/json"}, b"{", 422),
        ({"content-type": "application/json", "origin": "https://evil.example"}, b"{}", 403),
        ({"content-type": "application/json", "origin": "null"}, b"{}", 403),
        ({"content-type": "application/json", "origin": "http://127.0.0.1.evil.ex"}, b"{}", 403),
        ({"content-type": "application/json", "origin": "http://127.0.0.1"}, b"{}", 202),
        ({"content-type": "application/json", "origin": "http://localhost:5173"}, b"{}", 202),
        ({"content-type": "application/json; charset=utf-8"}, b"{}", 202),
    ],
)  # fmt: skip
def test_reindex_takes_a_json_object_from_an_allowed_origin(
    client: TestClient, headers: dict[str, str], content: bytes | None, status: int
) -> None:
    response = client.post("/reindex", content=content, headers=headers)
    assert response.status_code == status, response.text
    if status != 202:
        assert client.get("/jobs").json() == []  # nothing was queued


def test_add_source_refuses_a_form_post(client: TestClient, tmp_path: Path) -> None:
    folder = tmp_path / "more"
    folder.mkdir()
    response = client.post(
        "/sources",
        content=json.dumps({"path": str(folder)}),
        headers={"content-type": "text/plain"},
    )
    assert response.status_code == 415
    assert client.get("/jobs").json() == []


@pytest.mark.parametrize("route", ["/search?q=kite", "/status", "/sources", "/jobs", "/health"])
def test_foreign_origins_are_refused_on_every_route(client: TestClient, route: str) -> None:
    assert client.get(route, headers={"origin": "https://evil.example"}).status_code == 403
    assert client.get(route, headers={"origin": "http://127.0.0.1"}).status_code == 200
    assert (
        client.delete("/sources/notes", headers={"origin": "https://evil.example"}).status_code
        == 403
    )


def test_a_cross_site_request_without_an_origin_is_refused(client: TestClient) -> None:
    """A link or an `<img>` from another site sends no `Origin`; its `Sec-Fetch-Site`
    says where it comes from (issue 40). The page shell and health stay open to it."""
    for site, status in (("cross-site", 403), ("same-site", 200), ("none", 200)):
        got = client.get("/search?q=kite", headers={"sec-fetch-site": site})
        assert got.status_code == status, site
    assert client.get("/", headers={"sec-fetch-site": "cross-site"}).status_code == 200
    assert client.get("/health", headers={"sec-fetch-site": "cross-site"}).status_code == 200


def test_same_origin_behind_another_host_name_is_allowed(service: Service) -> None:
    app = create_app(service, allowed_hosts=None)
    with TestClient(app, base_url="http://search.lan:8080") as c:
        assert c.get("/status", headers={"origin": "http://search.lan:8080"}).status_code == 200
        assert c.get("/status", headers={"origin": "http://search.lan:9999"}).status_code == 403
        assert c.get("/status", headers={"origin": "http://other.lan:8080"}).status_code == 403


# -- fuzz: generated inputs, never a 5xx ---------------------------------------------------


def _values(rng: random.Random) -> list[Any]:
    deep: Any = 1
    for _ in range(rng.choice([10, 100, 300])):
        deep = rng.choice([[deep], {"$and": [deep]}, {"k": deep}])
    return [
        "",
        "x" * rng.choice([1, 5000, 70_000]),
        "\x00\ud800",
        "[" * 100_000,
        '{"a": ' * 3000 + "1" + "}" * 3000,
        -1,
        2**70,
        1e308,
        True,
        None,
        [],
        {},
        list(range(rng.choice([10, 2000]))),
        {f"k{i}": i for i in range(rng.choice([3, 1500]))},
        {"$or": [{"a": i} for i in range(600)]},
        {"k": {"$in": [None, [], {}]}},
        {"$and": "x"},
        {"$nope": []},
        deep,
    ]


SEARCH_PARAMS = [
    "q",
    "k",
    "mode",
    "source",
    "where",
    "where_json",
    "tag",
    "after",
    "before",
    "date_field",
    "path",
    "phrase",
    "match",
    "collection",
    "sort",
    "group_by",
]


def test_fuzz_rest_inputs_are_4xx_or_answered(client: TestClient) -> None:
    rng = random.Random(20261130)
    seen: set[int] = set()
    hostile = [
        "x" * 5000,
        "[" * 15_000,
        '{"a": ' * 2000 + "1" + "}" * 2000,
        json.dumps({"$or": [{"a": i} for i in range(600)]}),
        json.dumps(nested_and(100)),
        "-1e999",
    ]
    cases = [(name, text, 1) for name, text in itertools.product(SEARCH_PARAMS, hostile)]
    cases += [(name, "a=b", 600) for name in SEARCH_PARAMS]  # a parameter repeated 600 times
    for name, text, repeat in cases:
        params: dict[str, Any] = {"q": "kite", name: [text] * repeat if repeat > 1 else text}
        response = client.get("/search", params=params)
        assert response.status_code < 500, (name, repeat, response.text[:300])
        seen.add(response.status_code)
    for _ in range(40):
        params = {"q": "kite"}
        for name in rng.sample(SEARCH_PARAMS, rng.randint(1, 4)):
            value = rng.choice(_values(rng))
            text = value if isinstance(value, str) else json.dumps(value)
            text = text.encode("utf-8", "replace").decode("utf-8")  # a URL holds no surrogate
            repeat = rng.choice([1, 3, 700]) if rng.random() < 0.3 else 0
            if len(text) * max(repeat, 1) > 50_000:  # past what an HTTP client sends in a URL
                text, repeat = text[:2000], min(repeat, 20)
            params[name] = [text] * repeat if repeat else text
        if len(urlencode(params, doseq=True)) > 60_000:
            continue  # past what an HTTP client sends in a URL (httpx refuses it)
        response = client.get("/search", params=params)
        assert response.status_code < 500, (params.keys(), response.text[:300])
        seen.add(response.status_code)
    for route, method in itertools.product(["/reindex", "/sources"], ["POST"]):
        for _ in range(30):
            body = rng.choice(_values(rng))
            response = client.request(
                method,
                route,
                content=json.dumps(body),
                headers={"content-type": "application/json"},
            )
            assert response.status_code < 500 or response.status_code == 503, response.text[:300]
            assert response.status_code != 500
    for path in ["../../etc/passwd", "x" * 9000, "%00", "a/" * 3000]:
        for route in ("/documents", "/file"):
            response = client.get(route, params={"path": path, "source": "notes"})
            assert response.status_code < 500, response.text[:300]
    assert client.get("/jobs/" + "x" * 5000).status_code < 500
    assert 200 in seen and 400 in seen  # the table reaches both answers and refusals


def test_fuzz_mcp_search_arguments_are_error_results(settings: Settings, notes: Path) -> None:
    """Every call either answers or raises `ToolError` (an error result with a message on
    the wire): never another exception (the SDK's bare "unexpected" tool error)."""
    from mcp.server.mcpserver.exceptions import ToolError

    from chromasync.mcp import Backend, build_server

    api.ingest([api.source_for(notes)], settings, embedder=HashEmbedder())
    backend = Backend(settings)
    server = build_server(backend)
    rng = random.Random(7)
    names = [
        "sources",
        "tags",
        "paths",
        "phrases",
        "where",
        "where_json",
        "matches",
        "date_fields",
        "collections",
        "after",
        "before",
        "k",
        "mode",
    ]
    cases: list[dict[str, Any]] = [
        {"where_json": nested_and(100)},
        {"where_json": {"path": {"$in": [f"p{i}" for i in range(1000)]}}},
        {"phrases": [f"w{i}" for i in range(600)]},
        {"matches": ["title=a", "title=b"]},
    ]
    for _ in range(60):
        args: dict[str, Any] = {}
        for name in rng.sample(names, rng.randint(1, 3)):
            value = rng.choice(_values(rng))
            args[name] = [value] * rng.choice([1, 700]) if rng.random() < 0.3 else value
        cases.append(args)

    async def run() -> tuple[int, int]:
        answered = refused = 0
        for args in cases[:3]:  # the inputs that were 5xx on REST: a usage error, with why
            with pytest.raises(ToolError, match=r"ConfigError: .*(nest|values|given)"):
                await server.call_tool("search", {"query": "kite", **args})
        for args in cases:
            try:
                await server.call_tool("search", {"query": "kite", **args})
                answered += 1
            except ToolError as exc:
                assert str(exc) and "Traceback" not in str(exc)
                refused += 1
        return answered, refused

    try:
        answered, refused = asyncio.run(run())
    finally:
        backend.close()
    assert answered > 0 and refused > 0


@pytest.mark.parametrize("route", ["/search", "/ask", "/reindex"])
def test_a_body_nested_too_deeply_is_a_4xx(client: TestClient, route: str) -> None:
    """JSON nested past what the decoder recurses into (well within the 8 MiB body cap)."""
    body = b'{"q": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    response = client.post(route, content=body, headers={"Content-Type": "application/json"})
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:200])
    assert client.get("/health").status_code == 200
