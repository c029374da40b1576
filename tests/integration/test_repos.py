"""Git repositories as sources, and the GitHub Action's entry point, with local repositories
made here (no network)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from chromasync import action, api
from chromasync.corpus.git import repo_namespace, sync_repository
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import SourceError

from ..conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    repo = tmp_path / "acme" / "handbook"
    shutil.copytree(REPO / "examples" / "notes", repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    return repo


@pytest.mark.parametrize(
    ("repo", "branch", "expected"),
    [
        ("https://github.com/acme/handbook.git", "main", "acme/handbook@main"),
        ("git@github.com:acme/handbook.git", "dev", "acme/handbook@dev"),
        ("https://user:secret@example.org/acme/handbook/", None, "acme/handbook@HEAD"),
        ("/srv/git/acme/handbook", "main", "acme/handbook@main"),
    ],
)
def test_namespace(repo: str, branch: str | None, expected: str) -> None:
    assert repo_namespace(repo, branch) == expected


def test_repository_source_delta(origin: Path, tmp_path: Path, embedder: HashEmbedder) -> None:
    config = tmp_path / "chromasync.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "store": {"data_dir": str(tmp_path / "data")},
                "sources": [{"repo": str(origin), "branch": "main", "kind": "handbook"}],
            }
        )
    )
    settings = api.configure({}, {}, tmp_path)
    [entry] = api.configured_entries(settings)
    assert entry.label == "acme/handbook@main"
    first_sha = git(origin, "rev-parse", "HEAD")
    [first] = api.ingest(api.ConfiguredSources(), settings, embedder=embedder)
    assert first.source == "acme/handbook@main" and first.files_new == 5
    store = api.open_store(settings).collection("chromasync-handbook", create=False)
    metas = [r.metadata for r in store.iter_records()]
    assert {m["indexed_commit_sha"] for m in metas} == {first_sha}

    (origin / "ideas.txt").write_text("A new idea about kites.\n")
    git(origin, "rm", "-q", "README.md")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "second")
    second_sha = git(origin, "rev-parse", "HEAD")
    [second] = api.ingest(api.ConfiguredSources(), settings, embedder=embedder)
    assert (second.files_updated, second.files_deleted, second.files_new) == (1, 1, 0)
    metas = [r.metadata for r in store.iter_records()]
    assert "README.md" not in {m["path"] for m in metas}
    assert {m["indexed_commit_sha"] for m in metas if m["path"] == "ideas.txt"} == {second_sha}
    [third] = api.ingest(api.ConfiguredSources(), settings, embedder=embedder)
    assert third.chunks_embedded == 0 and third.files_unchanged == 4


def test_bad_repository_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"acme/missing@main.*git clone.*failed"):
        sync_repository(str(tmp_path / "acme" / "missing"), "main", tmp_path / "data")
    assert not list((tmp_path / "data" / "repos").glob("*"))


def test_action_entry_point(origin: Path, tmp_path: Path) -> None:
    out = tmp_path / "github_output"
    summary = tmp_path / "step_summary"
    env = {
        "GITHUB_REPOSITORY": "acme/handbook",
        "GITHUB_REF_NAME": "main",
        "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
        "GITHUB_WORKSPACE": str(origin),
        "GITHUB_OUTPUT": str(out),
        "GITHUB_STEP_SUMMARY": str(summary),
        "INPUT_PROVIDER": "hash",
        "INPUT_KIND": "handbook",
        "INPUT_EXCLUDE": "journal/\n",
        "CHROMASYNC_DATA_DIR": str(tmp_path / "data"),
    }
    assert action.main(env) == 0
    values = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert values["source"] == "acme/handbook@main"
    assert values["collection"] == "chromasync-handbook"
    assert int(values["files_new"]) == 4 and int(values["chunks_embedded"]) > 0
    assert "acme/handbook@main at 0123456789ab" in summary.read_text()
    settings = api.resolve_settings({"data_dir": str(tmp_path / "data")}, {})
    records = list(
        api.open_store(settings).collection("chromasync-handbook", create=False).iter_records()
    )
    assert {r.metadata["indexed_commit_sha"] for r in records} == {env["GITHUB_SHA"]}
    assert not any(str(r.metadata["path"]).startswith("journal/") for r in records)

    # A fresh runner (no local state) re-syncs without embedding anything.
    out.write_text("")
    fresh = {**env, "CHROMASYNC_DATA_DIR": str(tmp_path / "fresh")}
    shutil.copytree(tmp_path / "data" / "chroma", tmp_path / "fresh" / "chroma")
    assert action.main(fresh) == 0
    again = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert again["chunks_embedded"] == "0" and again["files_unchanged"] == "4"


def test_action_subprocess_misconfigured(tmp_path: Path) -> None:
    env = {**os.environ, "GITHUB_REPOSITORY": "", "GITHUB_REF_NAME": "", "GITHUB_SHA": ""}
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        [sys.executable, "-m", "chromasync.action"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 2
    assert "GITHUB_REPOSITORY, GITHUB_REF_NAME, GITHUB_SHA not set" in result.stderr
    assert result.stdout == ""


def test_action_yml_declares_what_action_py_reads_and_writes() -> None:
    """Every input reaches the step as INPUT_* (secrets as CHROMASYNC_*), every declared
    output is one the step writes, and the repository indexer's inputs and outputs exist
    (issue 29)."""
    from chromasync.records import IngestSummary

    spec = yaml.safe_load((REPO / "action.yml").read_text())
    inputs, outputs = set(spec["inputs"]), set(spec["outputs"])
    indexer_inputs = {
        "config-file",
        "include-paths",
        "include-extensions",
        "exclude-extensions",
        "chunk-size",
        "chunk-overlap",
        "batch-size",
        "dry-run",
        "embedding-api-url",
        "embedding-model",
        "embedding-api-key",
    }
    assert indexer_inputs <= inputs
    indexer_outputs = {
        "namespace-id",
        "files-eligible",
        "binary-skipped",
        "chunks-unchanged",
        "dry-run",
        "summary-json",
        "chunks-deleted",
    }
    assert indexer_outputs <= outputs
    step = next(s for s in spec["runs"]["steps"] if s.get("id") == "sync")
    passed = {v for v in step["env"].values() if isinstance(v, str)}
    secrets = {"chroma-token", "embedding-api-key"}
    for name in inputs - {"python-version"}:
        ref = "${{ inputs." + name + " }}"
        assert ref in passed, name
        if name not in secrets:
            env = "INPUT_" + name.upper().replace("-", "_")
            assert step["env"][env] == ref, name
    written = set(action.outputs(IngestSummary(collection="c", source="s")))
    for name, declared in spec["outputs"].items():
        key = declared["value"].removeprefix("${{ steps.sync.outputs.").removesuffix(" }}")
        assert key in written, (name, key)
    source = (REPO / "src" / "chromasync" / "action.py").read_text()
    for name in inputs - {"python-version"} - secrets:
        assert f'"{name}"' in source, name  # action.py reads it


def test_action_takes_the_indexer_s_inputs(origin: Path, tmp_path: Path) -> None:
    from ..servers import EmbeddingServer

    out = tmp_path / "github_output"
    config = origin / "ci.yaml"
    config.write_text("version: 1\nskip_paths: [secret]\n")
    key = "sk-action-embed-7f2a"
    env = {
        "GITHUB_REPOSITORY": "acme/handbook",
        "GITHUB_REF_NAME": "main",
        "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
        "GITHUB_WORKSPACE": str(origin),
        "GITHUB_OUTPUT": str(out),
        "INPUT_CONFIG_FILE": "ci.yaml",
        "INPUT_INCLUDE_EXTENSIONS": "md, txt",
        "INPUT_EXCLUDE_EXTENSIONS": "txt",
        "INPUT_CHUNK_SIZE": "64",
        "INPUT_CHUNK_OVERLAP": "0",
        "INPUT_BATCH_SIZE": "2",
        "INPUT_DRY_RUN": "true",
        "CHROMASYNC_DATA_DIR": str(tmp_path / "data"),
        "CHROMASYNC_COLLECTIONS": "shared",
    }
    with EmbeddingServer(HashEmbedder(dimension=16).embed_documents, model="m", api_key=key) as srv:
        env |= {
            "INPUT_EMBEDDING_API_URL": srv.url,
            "INPUT_EMBEDDING_MODEL": "m",
            "CHROMASYNC_EMBEDDING_API_KEY": key,
        }
        assert action.main(env) == 0
        dry = dict(line.split("=", 1) for line in out.read_text().splitlines())
        assert dry["dry_run"] == "true" and dry["namespace_id"] == "acme/handbook@main"
        assert not (tmp_path / "data" / "chroma").exists() or srv.requests == []
        out.write_text("")
        assert action.main({**env, "INPUT_DRY_RUN": "false"}) == 0
        assert srv.requests and set(srv.auth_headers) == {f"Bearer {key}"}
    values = dict(line.split("=", 1) for line in out.read_text().splitlines())
    summary = json.loads(values["summary_json"])
    assert summary["source"] == values["namespace_id"] == "acme/handbook@main"
    assert values["dry_run"] == "false" and int(values["files_eligible"]) == summary["files_new"]
    assert int(values["chunks_unchanged"]) == 0 and values["chunks_deleted"] == "0"
    assert values["binary_skipped"] == str(summary["files_skipped"].get("binary", 0))
    settings = api.resolve_settings({"data_dir": str(tmp_path / "data")}, {})
    records = list(api.open_store(settings).collection("chromasync", create=False).iter_records())
    assert records and all(str(r.metadata["path"]).endswith(".md") for r in records)
    bad = action.main({**env, "INPUT_CHUNK_OVERLAP": "32"})
    assert bad == 2
