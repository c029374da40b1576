"""`chromasync get`: indexed files' current lines on every surface, and its path checks."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from chromasync import api
from chromasync.cli.main import main
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import AccessDenied, NotFound, SourceError
from chromasync.owner.index import LocalIndex
from chromasync.owner.service import Service
from chromasync.rest import create_app
from chromasync.retrieve.access import parse_location

#: The traversal inputs of the nasty corpus: each is refused before anything is read.
TRAVERSAL = [
    "../outside.md",
    "guides/../../outside.md",
    "%2e%2e/outside.md",
    "%252e%252e/outside.md",
    "/etc/passwd",
    "guides/install.md\x00.txt",
    "guides/%00install.md",
    "~/notes.md",
    "C:/notes.md",
    "file:///etc/passwd",
    "guides\\install.md",
]


@pytest.fixture
def indexed(notes: Path, settings: Settings, embedder: HashEmbedder) -> Settings:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    return settings


def _cli(args: list[str], settings: Settings) -> tuple[int, str, str]:
    env = {"CHROMASYNC_DATA_DIR": str(settings.data_dir), "CHROMASYNC_EMBEDDING_PROVIDER": "hash"}
    result = CliRunner().invoke(main, args, env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("a.md", ("a.md", None, None)),
        ("a.md:3", ("a.md", 3, None)),
        ("a.md:3-7", ("a.md", 3, 7)),
        ("dir:x/a.md", ("dir:x/a.md", None, None)),
        ("a.md:x", ("a.md:x", None, None)),
    ],
)
def test_parse_location(spec: str, parsed: tuple[str, int | None, int | None]) -> None:
    assert parse_location(spec) == parsed


@pytest.mark.parametrize("spec", ["a.md:0", "a.md:5-2"])
def test_parse_location_refuses_empty_ranges(spec: str) -> None:
    with pytest.raises(SourceError, match="line range"):
        parse_location(spec)


def test_get_prints_numbered_lines(indexed: Settings, notes: Path) -> None:
    lines = (notes / "guides" / "install.md").read_text().splitlines()
    code, out, err = _cli(["get", "guides/install.md:2-3"], indexed)
    assert code == 0, err
    assert out.splitlines() == [
        f"==> notes/guides/install.md:2-3 of {len(lines)} lines",
        f"2  {lines[1]}",
        f"3  {lines[2]}",
    ]
    code, out, err = _cli(["get", "guides/install.md", "--json"], indexed)
    assert code == 0, err
    (found,) = json.loads(out)["files"]
    assert (found["start_line"], found["end_line"]) == (1, len(lines))
    assert found["text"] == "\n".join(lines)


def test_get_reads_the_current_text(indexed: Settings, notes: Path) -> None:
    (notes / "ideas.txt").write_text("changed since the index\n")
    found = api.get_file(indexed, "ideas.txt")
    assert found.text == "changed since the index" and found.total_lines == 1


def test_get_past_the_end_and_unindexed(indexed: Settings, notes: Path) -> None:
    with pytest.raises(NotFound, match="past its end"):
        api.get_file(indexed, "ideas.txt:999")
    (notes / "new.md").write_text("# not indexed\n")
    code, _, err = _cli(["get", "new.md"], indexed)
    assert code == 1 and "not an indexed file" in err


def test_get_glob_and_max_bytes(indexed: Settings, notes: Path) -> None:
    code, out, err = _cli(["get", "--glob", "guides/*.md", "--json"], indexed)
    assert code == 0, err
    data = json.loads(out)
    assert [f["path"] for f in data["files"]] == ["guides/install.md", "guides/sourdough.md"]
    assert data["left_out"] == 0 and all(f["skipped"] is None for f in data["files"])
    small = len((notes / "guides" / "sourdough.md").read_bytes())
    assert len((notes / "guides" / "install.md").read_bytes()) > small
    code, out, err = _cli(
        ["get", "--glob", "guides/*.md", "--max-bytes", str(small), "--json"], indexed
    )
    assert code == 0, err
    skipped = {f["path"]: f["skipped"] for f in json.loads(out)["files"]}
    assert skipped["guides/sourdough.md"] is None
    assert "bytes > --max-bytes" in skipped["guides/install.md"]
    code, _, err = _cli(["get", "--glob", "nothing/*.md"], indexed)
    assert code == 1 and "no indexed file matches" in err
    code, _, err = _cli(["get"], indexed)
    assert code == 2 and "one of them" in err


@pytest.mark.parametrize("spec", TRAVERSAL)
def test_get_refuses_traversal(indexed: Settings, spec: str) -> None:
    with pytest.raises(SourceError):
        api.get_file(indexed, spec)
    code, out, err = _cli(["get", spec], indexed)
    assert code == 2 and out == "" and "error:" in err
    code, out, _ = _cli(["get", "--glob", spec], indexed)
    assert code == 2 and out == ""


def test_get_refuses_a_link_out_of_the_root(indexed: Settings, notes: Path, tmp_path: Path) -> None:
    # an indexed file replaced by a link to a file outside the root after ingest
    secret = tmp_path / "secret.txt"
    secret.write_text("password\n")
    target = notes / "ideas.txt"
    target.unlink()
    os.symlink(secret, target)
    with pytest.raises(AccessDenied, match="outside its root"):
        api.get_file(indexed, "ideas.txt")
    code, out, err = _cli(["get", "ideas.txt"], indexed)
    assert code == 2 and "password" not in out + err
    many = api.get_files(indexed, "*.txt")[0]
    assert [(f.path, f.text) for f in many] == [("ideas.txt", "")]
    assert many[0].skipped is not None and "outside its root" in many[0].skipped


@pytest.fixture
def client(indexed: Settings, embedder: HashEmbedder) -> Iterator[TestClient]:
    with (
        Service(indexed, "serve", embedder=embedder) as service,
        TestClient(create_app(service), base_url="http://127.0.0.1") as c,
    ):
        yield c


def test_rest_get_is_the_local_index(client: TestClient, indexed: Settings) -> None:
    local = LocalIndex(indexed)
    one = client.get("/get", params={"path": "guides/install.md:1-2"})
    assert one.status_code == 200
    expected = dataclasses.asdict(local.get("guides/install.md:1-2"))
    assert one.json() == {"files": [expected], "left_out": 0}
    many = client.get("/get", params={"glob": "journal/*", "max_bytes": 100000})
    assert many.status_code == 200 and many.json() == local.multi_get("journal/*", 100000).as_json()
    assert client.get("/get").status_code == 400
    assert client.get("/get", params={"path": "a.md", "glob": "*"}).status_code == 400
    for spec in ("../outside.md", "/etc/passwd", "%2e%2e/x.md", "a\x00b.md"):
        assert client.get("/get", params={"path": spec}).status_code == 400, spec
        assert client.get("/get", params={"glob": spec}).status_code == 400, spec
    assert client.get("/get", params={"path": "nope.md"}).status_code == 404
