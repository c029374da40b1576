"""The REST service in process (httpx through Starlette's ASGI test transport), real Chroma."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.metakeys import RECORD_FIELDS
from chromasync.owner.service import Service
from chromasync.rest import BackgroundServer, bind_unix, create_app

from ..conftest import REPO, age_tree, run_cli, set_mtime

TOKEN = "tok-3f9a1c"


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


def wait_job(client: TestClient, job_id: str) -> dict:
    for _ in range(600):
        job = client.get(f"/jobs/{job_id}").json()
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish")


def test_health_status_and_search(client: TestClient) -> None:
    assert client.get("/health").json()["status"] == "ok"
    status = client.get("/status").json()
    assert status["totals"]["sources"] == 1 and status["totals"]["files"] == 5
    assert status["owner"]["role"] == "serve" and status["last_run"]
    body = client.get("/search", params={"q": "espresso grinder burrs", "k": 3}).json()
    assert 0 < len(body["hits"]) <= 3
    hit = body["hits"][0]
    assert hit["citation"] == f"{hit['path']}:{hit['start_line']}-{hit['end_line']}"
    assert hit["source"] == "notes" and hit["start_line"] >= 1
    # the fields written beside the record hash are stored, never shown in a hit (issue 39)
    assert not RECORD_FIELDS & {k for h in body["hits"] for k in h["metadata"]}, hit


def test_search_filters(client: TestClient) -> None:
    def paths(**params: object) -> set[str]:
        response = client.get("/search", params={"q": "notes", "k": 50, **params})
        assert response.status_code == 200, response.text
        return {h["path"] for h in response.json()["hits"]}

    everything = paths()
    assert len(everything) == 5
    assert paths(tag="coffee") == {"guides/install.md"}
    assert paths(tag=["coffee", "baking"]) == {"guides/install.md", "guides/sourdough.md"}
    assert paths(tag=["coffee", "hardware"], tags_all="true") == {"guides/install.md"}
    assert paths(after="2026-01-01") == {"guides/install.md", "journal/2026-05-01.md"}
    assert paths(after="2026-01-01", before="2026-04-01") == {"guides/install.md"}
    assert paths(source="notes") == everything
    # a label nobody knows is an error naming the closest one, not an empty result (issue 29)
    typo = client.get("/search", params={"q": "notes", "source": "nots"})
    assert typo.status_code == 404 and "did you mean 'notes'" in typo.json()["detail"]


def test_search_takes_the_cli_options(client: TestClient) -> None:
    def get(**params: object) -> dict:
        response = client.get("/search", params={"k": 50, **params})
        assert response.status_code == 200, response.text
        return response.json()

    keyword = get(q="burrs", mode="keyword")
    assert keyword["mode"] == "keyword"
    assert {h["path"] for h in keyword["hits"]} == {"guides/install.md"}
    phrase = get(q="starter", phrase="room-temperature feeds")
    assert [h["path"] for h in phrase["hits"]] == ["guides/sourdough.md"]
    assert phrase["filters"]["phrase"] == ["room-temperature feeds"]
    assert {h["path"] for h in get(q="notes", path="guides/*")["hits"]} == {
        "guides/install.md",
        "guides/sourdough.md",
    }
    stable = get(q="notes", where="stability=mature")["hits"]
    assert {h["path"] for h in stable} == {"guides/install.md"}
    per_doc = get(q="grinder", per_doc="true")["hits"]
    assert len({h["path"] for h in per_doc}) == len(per_doc)
    grouped = get(q="notes", group_by="source")
    assert [g["value"] for g in grouped["groups"]] == ["notes"]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"q": "x", "mode": "fuzzy"},
        {"q": "x", "where_json": "{not json"},
        {"q": "x", "where": "no-equals-sign"},
        {"q": "x", "after": "2026-02-01", "before": "2026-01-01"},
        {"q": "x", "sort": "random"},
        {"q": ""},
        {"q": "x", "k": 0},
        {"q": "x", "k": 1001},
        {"q": "x", "k": "many"},
        {"q": "x", "after": "last tuesday"},
        {"q": "x" * 2001},
    ],
)
def test_bad_search_input_is_4xx(client: TestClient, params: dict) -> None:
    response = client.get("/search", params=params)
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["detail"]


def test_reindex_runs_a_delta_job(client: TestClient, notes: Path) -> None:
    (notes / "ideas.txt").write_text("Grow quokkaberries by the fence.\n")
    set_mtime(notes / "ideas.txt", 1_700_000_000)
    response = client.post("/reindex", json={"source": "notes"})
    assert response.status_code == 202
    job = response.json()
    assert response.headers["location"] == f"/jobs/{job['id']}"
    done = wait_job(client, job["id"])
    assert done["status"] == "done", done
    [summary] = done["summaries"]
    assert (summary["files_updated"], summary["files_unchanged"]) == (1, 4)
    hits = client.get("/search", params={"q": "quokkaberries", "k": 1}).json()["hits"]
    assert hits[0]["path"] == "ideas.txt"
    # all sources, with nothing changed: a job that embeds nothing
    again = wait_job(client, client.post("/reindex", json={}).json()["id"])
    assert again["summaries"][0]["chunks_embedded"] == 0
    assert any(j["id"] == job["id"] for j in client.get("/jobs").json())


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"source": "nope"}, 404),
        ({"source": "../notes"}, 422),
        ({"sources": ["notes", "nope"]}, 404),
        ({"source": "notes", "surprise": True}, 422),
    ],
)
def test_reindex_bad_input(client: TestClient, body: dict, status: int) -> None:
    assert client.post("/reindex", json=body).status_code == status


def test_reindex_needs_a_json_body_type(client: TestClient) -> None:
    # a form post (what a cross-site page can send without CORS) is not a JSON body
    response = client.post(
        "/reindex", content=json.dumps({"source": "notes"}), headers={"content-type": "text/plain"}
    )
    assert response.status_code == 415


def test_jobs_unknown_is_404(client: TestClient) -> None:
    assert client.get("/jobs/job-12345").status_code == 404


def test_add_source_inside_allowed_root(client: TestClient, tmp_path: Path) -> None:
    more = tmp_path / "more"
    more.mkdir()
    (more / "kites.md").write_text("# Kites\n\nA delta kite flies in light wind.\n")
    response = client.post("/sources", json={"path": str(more), "label": "kites"})
    assert response.status_code == 202, response.text
    assert wait_job(client, response.json()["job"]["id"])["status"] == "done"
    labels = {s["label"] for s in client.get("/sources").json()}
    assert labels == {"notes", "kites"}
    hits = client.get("/search", params={"q": "delta kite", "source": "kites"}).json()["hits"]
    assert {h["path"] for h in hits} == {"kites.md"}
    # the same label for another folder is refused
    other = tmp_path / "other"
    other.mkdir()
    clash = client.post("/sources", json={"path": str(other), "label": "kites"})
    assert clash.status_code == 400 and "already belongs to" in clash.json()["detail"]


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/etc", 403),
        ("../", 400),
        ("notes/../..", 400),
        ("does-not-exist", 404),
        ("notes/README.md", 400),
        ("", 400),
    ],
)
def test_add_source_refusals(client: TestClient, path: str, status: int) -> None:
    response = client.post("/sources", json={"path": path})
    assert response.status_code == status, response.text


def test_documents_and_file(client: TestClient, notes: Path) -> None:
    # small sections merge into one chunk: the journal page's two top-level sections do not
    doc = client.get("/documents", params={"path": "journal/2026-05-01.md"}).json()
    lines = [(c["start_line"], c["end_line"]) for c in doc["chunks"]]
    assert lines == sorted(lines) and len(lines) >= 2
    assert all(c["citation"].startswith("journal/2026-05-01.md:") for c in doc["chunks"])
    found = client.get("/file", params={"source": "notes", "path": "guides/install.md"}).json()
    assert found["text"] == (notes / "guides" / "install.md").read_text()
    assert client.get("/documents", params={"path": "nope.md"}).status_code == 404
    unindexed = notes / "unindexed.md"
    unindexed.write_text("# Not yet\n")
    assert (
        client.get("/file", params={"source": "notes", "path": "unindexed.md"}).status_code == 404
    )
    assert client.get("/file", params={"source": "zzz", "path": "README.md"}).status_code == 404


def test_openapi_and_page_are_served(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    for route in ("/search", "/reindex", "/jobs/{job_id}", "/sources", "/status", "/health"):
        assert route in schema["paths"]
    assert "swagger" in client.get("/docs").text.lower()
    page = client.get("/")
    assert page.status_code == 200 and "<title>chromasync search</title>" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert client.get("/static/app.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/static/nope.js").status_code == 404


def test_foreign_host_header_is_refused(client: TestClient) -> None:
    response = client.get("/health", headers={"host": "attacker.example"})
    assert response.status_code == 400


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A config file declaring one notes source, and a second folder to add."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "examples" / "notes", root / "notes")
    (root / "more").mkdir()
    (root / "more" / "kites.md").write_text("# Kites\n\nA delta kite in light wind.\n")
    age_tree(root)
    (root / "chromasync.yaml").write_text(
        "version: 1\n"
        "store:\n  data_dir: ../data\n"
        "embedding:\n  provider: hash\n"
        "serve:\n  allow_roots: [more]\n"
        "sources:\n"
        "  - path: notes\n    kind: notes\n"
    )
    return root


def test_sources_registry_add_reindex_delete(project: Path, embedder: HashEmbedder) -> None:
    def configure() -> Settings:
        return api.configure({}, {}, project, config=project / "chromasync.yaml")

    settings = configure()
    assert settings.config_file is not None
    assert settings.config_file.allow_roots == (project / "more",)
    roots = settings.config_file.allow_roots
    svc = Service(settings, "serve", embedder=embedder, allow_roots=roots)
    with svc, TestClient(create_app(svc), base_url="http://127.0.0.1") as client:
        first = wait_job(client, client.post("/reindex", json={}).json()["id"])
        assert [s["source"] for s in first["summaries"]] == ["notes"]
        outside = client.post("/sources", json={"path": str(project / "notes")})
        assert outside.status_code == 403, outside.text  # not under serve.allow_roots
        added = client.post("/sources", json={"path": ".", "label": "kites", "kind": "docs"})
        assert added.status_code == 202, added.text
        assert wait_job(client, added.json()["job"]["id"])["status"] == "done"
        assert "label: kites" in (project / "chromasync.yaml").read_text()  # declared
        rows = {s["label"]: s for s in client.get("/sources").json()}
        assert rows["kites"]["collection"] == "chromasync-docs" and rows["kites"]["files"] == 1
        assert rows["notes"]["collection"] == "chromasync-notes" and rows["notes"]["files"] == 5
        hits = client.get("/search", params={"q": "delta kite", "k": 50}).json()["hits"]
        assert {h["source"] for h in hits} == {"notes", "kites"}
        # DELETE removes that source's records and manifest, and nothing else
        gone = client.delete("/sources/kites")
        assert gone.status_code == 200, gone.text
        assert gone.json()["records_deleted"] == 1
        # the collection it leaves empty goes too (issue 29); notes' stays
        assert gone.json()["collections_dropped"] == ["chromasync-docs"]
        assert api.open_store(settings).list_collections() == ["chromasync-notes"]
        assert "kites" not in (project / "chromasync.yaml").read_text()
        assert {s["label"] for s in client.get("/sources").json()} == {"notes"}
        hits = client.get("/search", params={"q": "delta kite", "k": 50}).json()["hits"]
        assert {h["source"] for h in hits} == {"notes"}
        assert client.get("/status").json()["totals"]["files"] == 5
        assert client.delete("/sources/kites").status_code == 404
        # a source declared meanwhile by another process (`chromasync sources add`) is known
        api.add_source(configure(), project / "more", label="later", kind="docs")
        later = client.post("/reindex", json={"source": "later"})
        assert later.status_code == 202, later.text
        assert wait_job(client, later.json()["id"])["summaries"][0]["files_new"] == 1
        assert client.delete("/sources/..%2fnotes").status_code in (404, 422)


def test_cli_goes_through_the_owner_or_is_refused(
    service: Service, notes: Path, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    assert service.socket is not None
    server = BackgroundServer(create_app(service), [bind_unix(service.socket)])
    server.start()
    try:
        found = run_cli(["search", "espresso grinder", "--json", "--k", "2"], env=cli_env)
        assert found.returncode == 0, found.stderr
        assert len(json.loads(found.stdout)["hits"]) == 2
        # every search option goes through the owner
        args = ["search", "starter", "--json", "--mode", "keyword", "--tag", "baking"]
        narrow = run_cli([*args, "--phrase", "room-temperature feeds"], env=cli_env)
        assert narrow.returncode == 0, narrow.stderr
        body = json.loads(narrow.stdout)
        assert body["mode"] == "keyword" and body["filters"]["tags"] == ["baking"]
        assert [h["path"] for h in body["hits"]] == ["guides/sourdough.md"]
        other = tmp_path / "other"
        other.mkdir()
        refused = run_cli(["ingest", str(other)], env=cli_env)
        assert refused.returncode == 1
        assert f"owned by `chromasync serve` (pid {os.getpid()})" in refused.stderr
        assert "does not know source 'other'" in refused.stderr
        writer = run_cli(["verify", "--repair"], env=cli_env)  # it would write: refused
        assert writer.returncode == 1
        assert "owned by `chromasync serve`" in writer.stderr, writer.stderr
        assert "--repair cannot go through it: stop it first" in writer.stderr
        # a removal goes through the owner that holds the data dir (it used to be refused)
        removed = run_cli(["sources", "remove", "notes", "--keep-entry"], env=cli_env)
        assert removed.returncode == 0, removed.stderr
        assert removed.stdout.startswith("removed source 'notes': ")
        assert "notes" not in {s.label for s in service.sources() if s.files}
        second = run_cli(["serve", "--port", "0"], env=cli_env)
        assert second.returncode == 1 and "is owned by `chromasync serve`" in second.stderr
    finally:
        server.stop()
