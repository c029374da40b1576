"""`editor_uri` end to end: `search --json`'s `open_url`, the terminal's OSC-8 hyperlinks,
plain output left alone, REST hits' `open_url` (what the search page links to)."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from rich.console import Console

from chromasync import api
from chromasync.cli.main import main
from chromasync.cli.search import _print_result
from chromasync.config.resolve import resolve_settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.owner.service import Service
from chromasync.rest import create_app

from ..conftest import age_tree

TEMPLATE = "vscode://file{path}:{line}"
OSC8 = "\x1b]8;"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "my notes"
    (root / "c#").mkdir(parents=True)
    (root / "c#" / "grinder ü.md").write_text(
        "# Burrs\n\nintro\n\n## Grinder\n\nThe grinder hums.\n"
    )
    (root / "other.md").write_text("# Kettle\n\nThe kettle boils water.\n")
    age_tree(root)
    return root


@pytest.fixture
def env(corpus: Path, tmp_path: Path) -> dict[str, str]:
    env = {
        "CHROMASYNC_DATA_DIR": str(tmp_path / "data"),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_COLLECTIONS": "shared",
        "CHROMASYNC_NO_FASTPATH": "1",
    }
    done = CliRunner().invoke(main, ["ingest", str(corpus), "--source", "notes"], env=env)
    assert done.exit_code == 0, done.stderr
    return env


def expected_url(corpus: Path, line: int) -> str:
    quoted = str(corpus.resolve()).replace(" ", "%20")
    return f"vscode://file{quoted}/c%23/grinder%20%C3%BC.md:{line}"


def test_json_hits_get_open_url_only_with_the_template(env: dict[str, str], corpus: Path) -> None:
    runner = CliRunner()
    args = ["search", "grinder hums", "--json", "--mode", "keyword"]
    plain = runner.invoke(main, args, env=env)
    assert plain.exit_code == 0, plain.stderr
    assert all("open_url" not in h for h in json.loads(plain.stdout)["hits"])
    linked = runner.invoke(main, args, env={**env, "CHROMASYNC_EDITOR_URI": TEMPLATE})
    assert linked.exit_code == 0, linked.stderr
    hits = json.loads(linked.stdout)["hits"]
    assert hits[0]["path"] == "c#/grinder ü.md"
    assert hits[0]["open_url"] == expected_url(corpus, hits[0]["start_line"])
    # everything else is what it was without the template
    assert [{k: v for k, v in h.items() if k != "open_url"} for h in hits] == json.loads(
        plain.stdout
    )["hits"]


def test_a_bad_template_is_a_usage_error(env: dict[str, str]) -> None:
    done = CliRunner().invoke(
        main, ["search", "grinder"], env={**env, "CHROMASYNC_EDITOR_URI": "vscode://{file}"}
    )
    assert done.exit_code != 0
    assert "unknown placeholder {file}" in done.stderr and "CHROMASYNC_EDITOR_URI" in done.stderr


def test_terminal_citations_are_osc8_links(env: dict[str, str], corpus: Path) -> None:
    runner = CliRunner()
    args = ["search", "grinder hums", "--mode", "keyword", "--explain"]  # the rich renderer
    terminal = {**env, "TTY_COMPATIBLE": "1", "CHROMASYNC_EDITOR_URI": TEMPLATE}
    done = runner.invoke(main, args, env=terminal)
    assert done.exit_code == 0, done.stderr
    assert f"{OSC8}id=" in done.stdout and f";{expected_url(corpus, 1)}\x1b\\" in done.stdout
    assert "c#/grinder ü.md:1-7" in done.stdout
    unlinked = runner.invoke(main, args, env={**terminal, "CHROMASYNC_EDITOR_URI": ""})
    assert unlinked.exit_code == 0 and OSC8 not in unlinked.stdout
    # piped (no terminal): the plain lines, as without the template
    piped = runner.invoke(main, args[:-1], env={**env, "CHROMASYNC_EDITOR_URI": TEMPLATE})
    bare = runner.invoke(main, args[:-1], env=env)
    assert piped.exit_code == 0 and piped.stdout == bare.stdout and "\x1b" not in piped.stdout


def test_print_result_links_only_given_hits(env: dict[str, str], corpus: Path) -> None:
    settings = resolve_settings({}, {**env, "CHROMASYNC_EDITOR_URI": TEMPLATE})
    result = api.retrieve(
        api.search_request(api.SearchArgs.of("kettle grinder"), settings), settings
    )
    assert len(result.hits) == 2
    links = api_links(settings, result)
    assert sorted(link is not None for link in links) == [True, True]
    out = io.StringIO()
    linked = dataclasses.replace(result, links=(links[0], None))
    _print_result(linked, console=Console(file=out, force_terminal=True))
    text = out.getvalue()
    assert text.count(OSC8 + "id=") == 1 and str(links[0]) in text


def api_links(settings: api.Settings, result: api.SearchResult) -> list[str | None]:
    from chromasync.retrieve.editor import open_urls

    return open_urls(settings, result.hits)


def test_no_link_through_a_symlink_out_of_the_root(env: dict[str, str], tmp_path: Path) -> None:
    from chromasync.retrieve.editor import open_urls

    settings = resolve_settings({}, {**env, "CHROMASYNC_EDITOR_URI": TEMPLATE})
    result = api.retrieve(api.search_request(api.SearchArgs.of("kettle"), settings), settings)
    hit = next(h for h in result.hits if h.path == "other.md")
    outside = tmp_path / "outside"
    outside.mkdir()
    assert open_urls(settings, [hit]) != [None]
    root = tmp_path / "my notes"
    (root / "other.md").unlink()
    (root / "other.md").symlink_to(outside / "x.md")
    assert open_urls(settings, [hit]) == [None]
    assert open_urls(resolve_settings({}, env), [hit]) == [None]  # no template, no link


@pytest.fixture
def client(env: dict[str, str]) -> Iterator[TestClient]:
    settings = resolve_settings({}, {**env, "CHROMASYNC_EDITOR_URI": TEMPLATE})
    with (
        Service(settings, "serve", embedder=HashEmbedder()) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as client,
    ):
        yield client


def test_rest_hits_carry_open_url(client: TestClient, corpus: Path) -> None:
    body = client.get("/search", params={"q": "grinder hums", "mode": "keyword"}).json()
    first = body["hits"][0]
    assert first["path"] == "c#/grinder ü.md"
    assert first["open_url"] == expected_url(corpus, first["start_line"])
    assert all(h["open_url"].startswith("vscode://file/") for h in body["hits"])


def test_links_follow_the_callers_editor_uri_through_an_owner(
    client: TestClient, env: dict[str, str]
) -> None:
    """The owner's `editor_uri` is not the caller's: through it, each hit's link is made by
    the caller's template (none: no link), as a search in process makes it."""
    from chromasync.owner.client import OwnerClient
    from chromasync.owner.index import LocalIndex

    service = client.app.state.service  # its template: TEMPLATE
    args = api.SearchArgs.of("grinder hums", mode="keyword")
    caller = resolve_settings({}, {**env, "CHROMASYNC_EDITOR_URI": "idea://open?file={path}"})
    through = OwnerClient(service.info, http=client, settings=caller).search(args)
    here = LocalIndex(caller).search(args)
    assert through.links is not None and through.links == here.links
    assert through.links[0] is not None and through.links[0].startswith("idea://open?file=/")
    plain = resolve_settings({}, env)
    unlinked = OwnerClient(service.info, http=client, settings=plain).search(args)
    assert unlinked.links is None and "open_url" not in unlinked.as_json()["hits"][0]
    assert unlinked.as_json() == LocalIndex(plain).search(args).as_json()
