"""The nasty corpus's request files, turned into tests: auth cases on every route, and
path inputs against the REST routes that take paths (and the path guard itself)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.corpus.paths import resolve_in_root
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import ChromasyncError
from chromasync.owner.service import Service
from chromasync.rest import PUBLIC_PATHS, create_app

from ..conftest import SHARED

TOOL = SHARED / "tools" / "make_nasty_corpus.py"
TOKEN = "tok-Zq81-nasty"
CANARIES = ("NASTY-OUTSIDE-ROOT-CANARY", "root:x:0:0")


@pytest.fixture(scope="session")
def nasty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not TOOL.is_file():
        pytest.skip("../shared/tools/make_nasty_corpus.py is not present")
    out = tmp_path_factory.mktemp("nasty") / "out"
    subprocess.run([sys.executable, str(TOOL), str(out)], check=True, capture_output=True)
    return out


def _cases(nasty: Path, name: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((nasty / "requests" / name).read_text())["cases"]
    return cases


@pytest.fixture
def corpus(nasty: Path, tmp_path: Path) -> Path:
    """The parts of the nasty corpus the path cases name, with `outside/` beside them."""
    root = tmp_path / "corpus"
    for part in ("ok", "names", "links"):
        shutil.copytree(nasty / "corpus" / part, root / part, symlinks=True)
    shutil.copytree(nasty / "outside", tmp_path / "outside", symlinks=True)
    return root


@pytest.fixture
def service(corpus: Path, settings: Settings, embedder: HashEmbedder) -> Iterator[Service]:
    api.ingest([api.source_for(corpus, "nasty")], settings, embedder=embedder)
    with Service(settings, "serve", embedder=embedder, allow_roots=[corpus]) as svc:
        yield svc


# -- path inputs ---------------------------------------------------------------------------


def test_path_guard_on_every_case(nasty: Path, corpus: Path) -> None:
    for case in _cases(nasty, "path-inputs.json"):
        raw, why = case["input"], case["why"]
        if case["expect"] == "reject":
            with pytest.raises(ChromasyncError) as info:
                resolve_in_root(raw, corpus, "file")
            assert not any(c in str(info.value) for c in CANARIES), why
        else:
            found = resolve_in_root(raw, corpus, "file")
            assert found.is_file() and found.is_relative_to(corpus.resolve()), why


def test_rest_path_inputs(nasty: Path, service: Service, corpus: Path) -> None:
    with TestClient(create_app(service), base_url="http://127.0.0.1") as client:
        for case in _cases(nasty, "path-inputs.json"):
            raw, why = case["input"], case["why"]
            file = client.get("/file", params={"source": "nasty", "path": raw})
            doc = client.get("/documents", params={"source": "nasty", "path": raw})
            if case["expect"] == "reject":
                for response in (file, doc):
                    assert response.status_code in (400, 403, 404, 422), (why, response.text)
                    assert not any(c in response.text for c in CANARIES), why
                    assert response.json()["detail"], why
                added = client.post("/sources", json={"path": raw})
                if raw != ".":  # the root itself is a folder a source may be
                    assert 400 <= added.status_code < 500, (why, added.text)
                    assert not any(c in added.text for c in CANARIES), why
            else:
                assert file.status_code == 200, (why, file.text)
                expected = (corpus / raw).read_text(encoding="utf-8")
                assert file.json()["text"] == expected, why
                assert doc.status_code == 200 and doc.json()["chunks"], why


# -- auth cases on every route -------------------------------------------------------------


def _requests_for_every_route(app: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """One valid request per API route; fails when a route has none (add it here)."""
    known: dict[tuple[str, str], tuple[str, str, dict[str, Any]]] = {
        ("GET", "/status"): ("GET", "/status", {}),
        ("GET", "/search"): ("GET", "/search", {"params": {"q": "plain"}}),
        ("POST", "/search"): ("POST", "/search", {"json": {"query": "plain"}}),
        ("POST", "/index/{operation}"): ("POST", "/index/status", {"json": {}}),
        ("POST", "/ask"): ("POST", "/ask", {"json": {"question": "plain"}}),
        ("POST", "/ask/stream"): ("POST", "/ask/stream", {"json": {"question": "plain"}}),
        ("POST", "/reindex"): ("POST", "/reindex", {"json": {"source": "nasty"}}),
        ("GET", "/jobs"): ("GET", "/jobs", {}),
        ("GET", "/jobs/{job_id}"): ("GET", "/jobs/job-1", {}),
        ("GET", "/sources"): ("GET", "/sources", {}),
        ("POST", "/sources"): ("POST", "/sources", {"json": {"path": "ok", "label": "ok"}}),
        ("GET", "/documents"): ("GET", "/documents", {"params": {"path": "ok/plain.md"}}),
        ("GET", "/links"): ("GET", "/links", {"params": {"target": "https://example.org"}}),
        ("GET", "/suggest"): (
            "GET",
            "/suggest",
            {"params": {"source": "nasty", "path": "ok/plain.md", "group_by": "source"}},
        ),
        ("GET", "/summaries"): ("GET", "/summaries", {"params": {"group_by": "source"}}),
        ("GET", "/get"): ("GET", "/get", {"params": {"source": "nasty", "path": "ok/plain.md"}}),
        # the source POST /sources just added (the test waits for its job first)
        ("DELETE", "/sources/{label:path}"): ("DELETE", "/sources/ok", {"idle": True}),
        ("GET", "/file"): (
            "GET",
            "/file",
            {"params": {"source": "nasty", "path": "ok/plain.md"}},
        ),
    }
    wanted = []
    for route in app.routes:
        if not isinstance(route, APIRoute) or route.path in PUBLIC_PATHS:
            continue
        if route.path == "/static/{name}":  # the page shell: public, no index data
            continue
        for method in sorted(route.methods):
            key = (method, route.path)
            assert key in known, f"no auth test request for {key}"
            wanted.append(known[key])
    return wanted


def test_auth_cases_on_every_route(nasty: Path, service: Service) -> None:
    app = create_app(service, token=TOKEN)
    requests = _requests_for_every_route(app)
    unauthorized_bodies = set()
    with TestClient(app, base_url="http://127.0.0.1") as client:
        # a job exists for /jobs/job-1
        client.post("/reindex", json={}, headers={"Authorization": f"Bearer {TOKEN}"})
        for case in _cases(nasty, "auth-cases.json"):
            headers = {k: v.replace("{TOKEN}", TOKEN) for k, v in case["headers"].items()}
            query = {k: v.replace("{TOKEN}", TOKEN) for k, v in case.get("query", {}).items()}
            for method, url, kwargs in [*requests, ("GET", "/no-such-route", {})]:
                if kwargs.get("idle"):
                    while service.jobs is not None and not service.jobs.idle():
                        time.sleep(0.02)
                params = {**kwargs.get("params", {}), **query}
                response = client.request(
                    method, url, headers=headers, params=params, json=kwargs.get("json")
                )
                where = f"{case['why']}: {method} {url}"
                if case["expect"] == 401:
                    assert response.status_code == 401, where
                    assert response.headers["www-authenticate"] == "Bearer", where
                    unauthorized_bodies.add(response.content)
                elif url == "/no-such-route":
                    assert response.status_code == 404, where
                else:
                    assert 200 <= response.status_code < 300, (where, response.text)
        assert client.get("/health").status_code == 200  # public
    # every refusal looks the same and says nothing about the token
    assert unauthorized_bodies == {b'{"detail":"unauthorized"}'}


def test_no_token_configured_means_no_401(service: Service) -> None:
    with TestClient(create_app(service), base_url="http://127.0.0.1") as client:
        assert (
            client.get("/status", headers={"Authorization": "Bearer whatever"}).status_code == 200
        )
