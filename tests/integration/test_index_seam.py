"""The index seam (`owner.index.Index`): every operation returns the same record in this
process (`LocalIndex`) and through the data dir's owner (`OwnerClient` -> `Service`); the
CLI's `similar`, `suggest`, `eval`, `links`, `summarize --all-collections`, `verify` and
`sources remove`, which refused to run while an owner ran, go through it (`verify --repair`
and `share` are refused, named)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from chromasync import api
from chromasync.cli.main import main
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import LockError, NotFound
from chromasync.owner.client import OwnerClient
from chromasync.owner.index import OPERATIONS, Index, LocalIndex
from chromasync.owner.locate import read_owner
from chromasync.owner.queries import (
    CompareQuery,
    EvalRequest,
    IngestRequest,
    LinksQuery,
    RemoveRequest,
    ShareRequest,
    SummariesQuery,
    VerifyRequest,
)
from chromasync.owner.service import Service
from chromasync.owner.wire import from_wire, to_wire
from chromasync.rest import create_app
from chromasync.retrieve.evaluate import EvalQuery

from ..conftest import age_tree
from ..servers import CommandProcess

FILES = {
    "a.md": "---\ntitle: Alpha\ntags: [coffee]\n---\n# Alpha\n\nEspresso grinder burrs. "
    "See [beta](sub/b.md) and [docs](https://example.org/docs).\n",
    "sub/b.md": "---\ntitle: Beta\ntags: [coffee, hardware]\n---\n# Beta\n\nThe grinder "
    "burrs touch at zero. [Missing](nowhere.md).\n",
    "sub/c.md": "---\ntitle: Gamma\ntags: [baking]\n---\n# Gamma\n\nSourdough bread and a "
    "starter fed daily with flour.\n",
}
INBOX = "# Inbox\n\nA note on espresso grinder burrs, not indexed.\n"


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Settings, Path]:
    root = tmp_path / "notes"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    age_tree(root)
    settings = api.resolve_settings({"data_dir": str(tmp_path / "data"), "provider": "hash"}, {})
    api.ingest([api.source_for(root)], settings, embedder=HashEmbedder())
    (tmp_path / "inbox.md").write_text(INBOX, encoding="utf-8")
    return settings, root


def _calls(root: Path) -> dict[str, Any]:
    inbox = str(root.parent / "inbox.md")
    judged = (
        EvalQuery("q1", "grinder burrs", ("sub/b.md",)),
        EvalQuery("q2", "sourdough", ("sub/c.md",)),
    )
    return {
        "search": lambda i: i.search(api.SearchArgs("grinder burrs", k=3)),
        "search_dated": lambda i: i.search(api.SearchArgs("grinder burrs", k=3, sort="date")),
        "ask": lambda i: i.ask(api.SearchArgs("grinder burrs", k=3), fallback=True),
        "get_document": lambda i: i.get_document("sub/b.md"),
        "get": lambda i: i.get("a.md:1-3"),
        "multi_get": lambda i: i.multi_get("sub/*"),
        "links": lambda i: i.links(LinksQuery("https://example.org")),
        "links_from": lambda i: i.links(LinksQuery(from_path="sub/b.md", source="notes")),
        "similar": lambda i: i.similar(CompareQuery("sub/b.md", source="notes", k=2)),
        "similar_inbox": lambda i: i.similar(CompareQuery(inbox, k=2)),
        "similar_grouped": lambda i: i.similar(CompareQuery(inbox, k=4, group_by="title")),
        "suggest": lambda i: i.suggest(CompareQuery("a.md", source="notes", group_by="path:1")),
        "suggest_inbox": lambda i: i.suggest(CompareQuery(inbox, group_by="path:1")),
        "summaries": lambda i: i.summaries(SummariesQuery("path:1")),
        "evaluate": lambda i: i.evaluate(EvalRequest(judged, k=3)),
        "sources": lambda i: i.sources(),
        "status_rows": lambda i: i.status().sources,
        "verify": lambda i: i.verify(VerifyRequest()),
        "verify_notes": lambda i: i.verify(VerifyRequest(("notes",), wait=True)),
    }


@pytest.fixture
def owned(indexed: tuple[Settings, Path]) -> Iterator[OwnerClient]:
    settings, _ = indexed
    with (
        Service(settings, "serve", embedder=HashEmbedder()) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as http,
    ):
        assert service.info is not None
        yield OwnerClient(service.info, http=http, settings=settings)


@contextlib.contextmanager
def _serving(settings: Settings, env: dict[str, str]) -> Iterator[None]:
    """`chromasync serve` owning the data dir, in another process (an owner in this one is
    not one to go through: `find_owner` skips its own process)."""
    serve = CommandProcess("serve", ["--port", "0"], env)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            info = read_owner(settings.data_dir)
            if info is not None and info.role == "serve" and Path(info.socket).exists():
                break
            assert serve.proc.poll() is None, serve.drain()
            time.sleep(0.1)
        else:
            pytest.fail(f"serve did not start: {serve.drain()}")
        yield
    finally:
        assert serve.interrupt() == 0, serve.seen


def test_every_operation_gives_the_same_record_through_the_owner(
    indexed: tuple[Settings, Path],
) -> None:
    settings, root = indexed
    calls = _calls(root)
    local: Index = LocalIndex(settings)
    local.summaries(SummariesQuery("path:1"))  # written once: both calls read the cache
    here = {name: call(local) for name, call in calls.items()}
    with (
        Service(settings, "serve", embedder=HashEmbedder()) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as http,
    ):
        assert service.info is not None
        sent: list[str] = []  # every operation crosses as its call on /index/{operation}
        http.event_hooks["request"].append(lambda request: sent.append(request.url.path))
        client: Index = OwnerClient(service.info, http=http, settings=settings)
        there = {name: call(client) for name, call in calls.items()}
        for name in calls:
            assert there[name] == here[name], name
        job = client.wait(client.reindex(["notes"]).id, timeout=60)
        assert job.status == "done" and job.ingest_summaries()[0].files_unchanged == 3
        assert client.status().owner is not None
        with pytest.raises(NotFound, match="nothing"):
            client.remove_source(RemoveRequest("nothing"))
    # `ask` crosses as its search: the caller answers with its own chat settings
    assert {p.removeprefix("/index/") for p in sent} == OPERATIONS - {"ingest", "share", "ask"}
    ran = local.reindex(["notes"])  # in process: done when it returns
    assert ran.status == "done" and local.wait(ran.id) == ran
    assert ran.ingest_summaries()[0].files_unchanged == 3
    inbox = here["similar_inbox"]
    assert inbox.path == str(root.parent / "inbox.md") and inbox.documents
    assert here["search_dated"].order == "date"  # the terminal prints each hit's date
    grouped = here["similar_grouped"]  # issue 39: the groups cross the wire too
    assert grouped.group_by == "title" and len(grouped.groups) >= 2


def test_records_round_trip_on_the_wire(indexed: tuple[Settings, Path]) -> None:
    settings, root = indexed
    local = LocalIndex(settings)
    for name, call in _calls(root).items():
        found = call(local)
        kind = None if isinstance(found, list | tuple) else type(found)
        if kind is None or name == "ask":
            continue
        assert from_wire(kind, json.loads(json.dumps(to_wire(found)))) == found, name


def test_the_owner_reads_no_path_it_is_given(owned: OwnerClient, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nespresso\n")
    for operation, body in (
        ("similar", {"path": str(secret)}),
        ("suggest", {"path": str(secret), "group_by": "source"}),
        ("links", {"from_path": str(secret), "on_disk": True}),
        ("similar", {"path": "../a.md", "source": "notes"}),
    ):
        response = owned._http.post(f"/index/{operation}", json=body)
        assert response.status_code == 400, (operation, response.text)
    assert owned._http.post("/index/nothing", json={}).status_code == 404
    assert owned._http.post("/index/similar", json={"path": 3}).status_code == 400
    for operation, body in (  # the operations that take plain values, bounded too
        ("get", {"spec": 3}),
        ("get", {}),
        ("get", {"spec": "a.md", "nope": 1}),
        ("get", {"spec": "x" * 10_000}),
        ("multi_get", {"pattern": "*", "max_bytes": "all"}),
        ("reindex", {"labels": ["x"] * 1001}),
        ("ingest", {}),
    ):
        response = owned._http.post(f"/index/{operation}", json=body)
        assert response.status_code in (400, 404), (operation, body, response.text[:200])
    assert owned._http.post("/index/wait", json={"job_id": "job-9"}).status_code == 404


def test_a_search_record_on_the_wire_is_bounded_as_any_surface_bounds_it(
    owned: OwnerClient,
) -> None:
    """`/index/search` takes the request record: a query over its bound, a wrong type, an
    option out of its bound are a 400 naming it, never a 500; a good one is the record."""
    for body in (
        {"query": "x" * 100_000},
        {"query": 3},
        {"query": "grinder", "k": 0},
        {"query": "grinder", "mode": "nope"},
        {"query": "grinder", "tags": ["t"] * 100_000},
    ):
        response = owned._http.post("/index/search", json=body)
        assert response.status_code == 400, (body, response.text[:200])
    found = owned._http.post("/index/search", json={"query": "grinder", "k": 2})
    assert found.status_code == 200 and len(found.json()["hits"]) == 2


def _cli(env: dict[str, str], *argv: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(main, list(argv), env=env)
    return done.exit_code, done.stdout, done.stderr


def test_cli_commands_go_through_a_running_owner(
    indexed: tuple[Settings, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`similar`, `suggest` and `eval` refused while an owner ran, `summarize` refused
    `--all-collections`; now each gives what it gives without an owner, a file named as
    the command line names it (the owner named it by its source root, issue 40)."""
    settings, root = indexed
    monkeypatch.chdir(root.parent)
    queries = root.parent / "queries.jsonl"
    queries.write_text(json.dumps({"query": "grinder burrs", "relevant": ["sub/b.md"]}) + "\n")
    env = {
        "CHROMASYNC_DATA_DIR": str(settings.data_dir),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_NO_DAEMON": "1",
    }
    commands = [
        ["similar", str(root / "sub/b.md"), "--json"],
        ["similar", str(root.parent / "inbox.md"), "--json"],
        ["suggest", str(root / "a.md"), "--group-by", "path:1", "--json"],
        ["suggest", str(root.parent / "inbox.md"), "--group-by", "path:1", "--json"],
        ["eval", str(queries), "--json"],
        ["similar", "./notes//sub/b.md", "--json"],
        ["suggest", "./inbox.md", "--group-by", "path:1", "--json"],
        ["links", "https://example.org", "--json"],
        ["links", "--from", str(root / "sub/b.md"), "--json"],
        ["summarize", "--group-by", "path:1", "--all-collections", "--json"],
        ["status", "--json"],
        ["sources", "list", "--json"],
    ]
    _cli(env, *commands[9])  # the summaries written once: both runs read the cache
    alone = [_cli(env, *argv) for argv in commands]
    for argv, (code, _out, err) in zip(commands, alone, strict=True):
        assert code == 0, (argv, err)
    with _serving(settings, env):
        for argv, expected in zip(commands, alone, strict=True):
            code, out, err = _cli(env, *argv)
            assert code == 0, (argv, err)
            got, want = json.loads(out), json.loads(expected[1])
            if argv[0] == "status":  # the owner's own figures: only through it
                assert got["sources"] == want["sources"], argv
                continue
            assert got == want, argv


def test_a_command_of_other_settings_is_refused_by_a_running_owner(
    indexed: tuple[Settings, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An owner answers with its own settings: a command of another collection, reranker or
    config file got the owner's hits (issue 40); now it is told, as a `LockError`. What the
    caller applies itself (chat model, editor links, date fields) still goes through."""
    settings, root = indexed
    env = {
        "CHROMASYNC_DATA_DIR": str(settings.data_dir),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_NO_DAEMON": "1",
    }
    elsewhere = root.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "chromasync.yaml").write_text("version: 1\nstore: {collection: other}\n")
    others = [
        ({"CHROMASYNC_COLLECTION": "other"}, root.parent),
        ({"CHROMASYNC_RERANK_MODEL": str(root)}, root.parent),
        ({}, elsewhere),  # its config file names another collection
    ]
    callers = {
        "CHROMASYNC_EDITOR_URI": "vscode://file/{path}:{line}",
        "CHROMASYNC_DATE_FIELDS": "updated",
        "CHROMASYNC_LLM_URL": "http://127.0.0.1:9/v1",
    }
    with _serving(settings, env):
        for extra, cwd in others:
            monkeypatch.chdir(cwd)
            code, out, err = _cli({**env, **extra}, "search", "grinder burrs", "--json")
            assert (code, out) == (1, ""), (extra, cwd, out)
            assert "owns this data dir with other settings" in err
        monkeypatch.chdir(root.parent)
        code, out, err = _cli({**env, **callers}, "search", "grinder burrs", "--json")
        assert code == 0, err
        assert json.loads(out)["hits"][0]["open_url"].startswith("vscode://file/")


def test_ingest_goes_through_a_running_owner_as_far_as_the_owner_serves(
    indexed: tuple[Settings, Path],
) -> None:
    """The owner's client decides (`owner.routes`): `--checksum` goes through as the owner's
    reindex; `--dry-run`, `--limit --no-gc` and `--commit-sha` (which an owner used to drop
    silently) are refused, naming what was asked, and write nothing. The owner's `Service`
    decides the same."""
    settings, root = indexed
    env = {
        "CHROMASYNC_DATA_DIR": str(settings.data_dir),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_NO_DAEMON": "1",
    }
    (root / "sub/c.md").write_text("# Gamma\n\nRye bread, a stiff starter.\n")
    age_tree(root)
    with _serving(settings, env):
        for flags, named in (
            (["--dry-run"], "--dry-run"),
            (["--limit", "1", "--no-gc"], "--limit and --no-gc"),
            (["--commit-sha", "abcdef1"], "--commit-sha"),
        ):
            code, out, err = _cli(env, "ingest", str(root), "--json", *flags)
            assert code == 1 and not out, (flags, err)
            assert "owned by `chromasync serve` (pid" in err, err
            assert f"{named} cannot go through it: stop it first" in err, err
        code, out, err = _cli(env, "ingest", str(root), "--checksum", "--json")
        assert code == 0, err
        assert "reindexing through it" in err
        rows = json.loads(out)
        assert rows[0]["source"] == "notes" and rows[0]["files_updated"] == 1, rows
        code, out, err = _cli(env, "search", "rye", "--mode", "keyword", "--json")
        assert code == 0, err
        assert [h["path"] for h in json.loads(out)["hits"]][:1] == ["sub/c.md"]
    with Service(settings, "serve", embedder=HashEmbedder()) as service:
        known = IngestRequest(specs=(api.source_for(root),), checksum=True)
        assert service.ingest(known)[0].files_unchanged == 3
        with pytest.raises(LockError, match="--reset cannot go through it"):
            service.ingest(IngestRequest(reset=True))
    rerun = LocalIndex(settings).ingest(IngestRequest(specs=(api.source_for(root),), dry_run=True))
    assert rerun[0].dry_run and rerun[0].files_unchanged == 3


def test_the_owner_refuses_the_writes_it_does_not_serve(owned: OwnerClient) -> None:
    """Its `Service` decides as its client does (`owner.routes`), also for a REST caller."""
    response = owned._http.post("/index/verify", json={"repair": True})
    assert response.status_code == 409, response.text
    detail = response.json()["detail"]  # named as the caller (the wire) spells it
    assert "; repair cannot go through it: stop it first, or ask without it" in detail, detail
    assert owned._http.post("/index/verify", json={"labels": ["x"] * 1001}).status_code == 400
    for refused, named in (
        (lambda: owned.verify(VerifyRequest(repair=True)), "--repair"),
        (lambda: owned.share(ShareRequest()), "`chromasync share`"),
    ):
        with pytest.raises(LockError, match=f"{named} cannot go through it: stop it first"):
            refused()
    assert all(c.ok for c in owned.verify(VerifyRequest()))


def test_sources_remove_and_verify_go_through_a_running_owner(
    indexed: tuple[Settings, Path],
) -> None:
    """`sources remove` and `verify` called the API directly and were refused while an owner
    ran; now the removal is the owner's, `verify` reports what it reports alone, and what
    would write past the owner (`verify --repair`, `share`) is refused, named."""
    settings, root = indexed
    env = {
        "CHROMASYNC_DATA_DIR": str(settings.data_dir),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_NO_DAEMON": "1",
    }
    (root / "sub/c.md").write_text("# Gamma\n\nRye bread, a stiff starter.\n")  # stale now
    age_tree(root)
    alone = _cli(env, "verify", "--json")
    assert alone[0] == 1 and json.loads(alone[1])[0]["stale_files"] == 1, alone
    with _serving(settings, env):
        assert _cli(env, "verify", "--json")[:2] == alone[:2]
        for argv, named in (
            (
                ["verify", "--repair"],
                "--repair cannot go through it: stop it first, or run "
                "`chromasync verify` without it",
            ),
            (["share", "--no-model"], "`chromasync share` cannot go through it: stop it first"),
        ):
            code, out, err = _cli(env, *argv)
            assert code == 1 and not out, (argv, err)
            assert "owned by `chromasync serve` (pid" in err and named in err, err
        code, out, err = _cli(env, "sources", "remove", "notes")
        assert code == 0, err
        assert out.startswith("removed source 'notes': 3 records from chromasync-notes"), out
        code, out, err = _cli(env, "sources", "list", "--json")
        assert code == 0 and json.loads(out) == [], (out, err)
    assert api.status(settings) == []  # the owner removed it from the store and the state
    with pytest.raises(NotFound, match="no source labelled 'notes'"):  # gone, in process too
        LocalIndex(settings).remove_source(RemoveRequest("notes"))


def test_a_wait_through_the_owner_ends_at_its_timeout(indexed: tuple[Settings, Path]) -> None:
    """`wait` asks the owner a few seconds at a time: a job still running is returned as it
    stands once the caller's timeout has passed (0: at once), and done once it is done."""
    import threading

    settings, _ = indexed
    release = threading.Event()
    with (
        Service(settings, "serve", embedder=HashEmbedder()) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as http,
    ):
        assert service.info is not None and service.jobs is not None
        job = service.jobs.submit(["x"], lambda progress: [{"ran": release.wait(30)}])
        client = OwnerClient(service.info, http=http, settings=settings)
        for timeout in (0.0, 0.5):
            began = time.monotonic()
            assert client.wait(job.id, timeout=timeout).status in ("queued", "running")
            assert time.monotonic() - began < timeout + 5
        release.set()
        done = client.wait(job.id, timeout=30)
        assert done.status == "done" and done.summaries == ({"ran": True},)


def test_summarize_and_ask_through_a_running_owner_use_the_callers_chat_model(
    indexed: tuple[Settings, Path],
) -> None:
    """`serve` owns the data dir with no chat model; `summarize` and `ask` with
    `--llm-url`/`--llm-model` are written by that model all the same (issue 40)."""
    from tests.chat_server import ChatServer, Reply

    settings, _ = indexed
    env = {
        "CHROMASYNC_DATA_DIR": str(settings.data_dir),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_NO_DAEMON": "1",
    }
    with ChatServer() as chat, _serving(settings, env):
        chat.default = Reply("The grinder burrs [1].")
        llm = ["--llm-url", chat.url, "--llm-model", "test-chat"]
        code, out, err = _cli(env, "summarize", "--group-by", "path:1", "--json", *llm)
        assert code == 0, err
        report = json.loads(out)
        assert report["model_calls"] == 2 and len(chat.requests) == 2
        assert {g["mode"] for g in report["groups"]} == {"llm:test-chat"}
        code, out, err = _cli(env, "ask", "grinder burrs", "--json", *llm)
        assert code == 0, err
        assert json.loads(out)["mode"] == "llm" and len(chat.requests) == 3
