"""Git repositories as sources, and the GitHub Action's entry point, with local repositories
made here (no network)."""

from __future__ import annotations

import hashlib
import json
import os
import re
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

#: The repository indexer's namespace id of acme/handbook@main: sha256 of its JSON list.
ACME_HANDBOOK_MAIN = hashlib.sha256(b'["acme","handbook","main"]').hexdigest()
#: The repository indexer's outputs (its action.yml), which chromasync's Action writes.
INDEXER_OUTPUTS = (
    "namespace_id",
    "files_scanned",
    "files_eligible",
    "files_indexed",
    "files_binary_skipped",
    "files_other_skipped",
    "chunks_desired",
    "chunks_added_or_updated",
    "chunks_unchanged",
    "chunks_deleted",
    "dry_run",
    "duration_ms",
    "summary",
)


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
    assert set(INDEXER_OUTPUTS) <= outputs  # its outputs under its own names (issue 39)
    assert set(action.ALIASES.values()) | {"bearer-token"} <= inputs
    step = next(s for s in spec["runs"]["steps"] if s.get("id") == "sync")
    passed = " ".join(v for v in step["env"].values() if isinstance(v, str))
    secrets = {"chroma-token", "bearer-token", "embedding-api-key"}
    for name in inputs - {"python-version"}:
        assert "inputs." + name + " " in passed, name
        if name not in secrets:
            env = "INPUT_" + name.upper().replace("-", "_")
            assert step["env"][env] == "${{ inputs." + name + " }}", name
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
        assert dry["dry_run"] == "true" and dry["namespace_id"] == ACME_HANDBOOK_MAIN
        assert not (tmp_path / "data" / "chroma").exists() or srv.requests == []
        out.write_text("")
        assert action.main({**env, "INPUT_DRY_RUN": "false"}) == 0
        assert srv.requests and set(srv.auth_headers) == {f"Bearer {key}"}
    values = dict(line.split("=", 1) for line in out.read_text().splitlines())
    summary = json.loads(values["summary"])
    assert summary["source"] == values["source"] == "acme/handbook@main"
    assert values["dry_run"] == "false" and int(values["files_indexed"]) == summary["files_new"]
    assert int(values["chunks_unchanged"]) == 0 and values["chunks_deleted"] == "0"
    assert values["files_binary_skipped"] == str(summary["files_skipped"].get("binary", 0))
    settings = api.resolve_settings({"data_dir": str(tmp_path / "data")}, {})
    records = list(api.open_store(settings).collection("chromasync", create=False).iter_records())
    assert records and all(str(r.metadata["path"]).endswith(".md") for r in records)
    bad = action.main({**env, "INPUT_CHUNK_OVERLAP": "32"})
    assert bad == 2


def _evaluate(text: str, inputs: dict[str, str], context: dict[str, str]) -> str:
    """A value of action.yml with its `${{ ... }}` expressions evaluated as a runner does:
    `inputs.NAME`, `A || B` (the first non-empty), and the context's names (`runner.temp`,
    `steps.ID.outputs.KEY`...); any other expression fails the test."""

    def one(match: re.Match[str]) -> str:
        for term in match.group(1).split("||"):
            name = term.strip()
            if name.startswith("inputs."):
                value = inputs[name.removeprefix("inputs.")]
            else:
                assert name in context, f"action.yml uses {name!r}, unknown to this test"
                value = context[name]
            if value:
                return value
        return ""

    return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", one, text)


def _run_steps(
    with_: dict[str, str], env: dict[str, str], tmp_path: Path
) -> tuple[int, dict[str, dict[str, str]], str, dict[str, dict[str, str]]]:
    """Each step of action.yml as a runner runs it, with the workflow's `with:` values:
    `run:` steps in bash with their `env:` evaluated and the runner's environment (pip
    install is stood in for by a shim on PATH that records its arguments, tests never
    download), `uses:` steps' `with:` evaluated. The exit code of the first failing step
    (or 0), each step's outputs, what stderr the last step wrote, and each `uses:` step's
    `with:` by action name."""
    spec = yaml.safe_load((REPO / "action.yml").read_text())
    inputs = {n: str(d.get("default", "")) for n, d in spec["inputs"].items()} | with_
    assert set(with_) <= set(spec["inputs"]), set(with_) - set(spec["inputs"])
    shim = tmp_path / "bin"
    shim.mkdir(exist_ok=True)
    (shim / "python").write_text(
        '#!/bin/bash\nif [ "$1 $2 $3" = "-m pip install" ]; then printf "%s\\n" "$@" '
        f'> {tmp_path}/pip-args; exit 0; fi\nexec {sys.executable} "$@"\n'
    )
    (shim / "python").chmod(0o755)
    context = {
        "runner.temp": str(tmp_path / "runner-temp"),
        "runner.os": "Linux",
        "github.action_path": str(REPO),
    }
    outputs: dict[str, dict[str, str]] = {}
    used: dict[str, dict[str, str]] = {}
    stderr = ""
    for index, step in enumerate(spec["runs"]["steps"]):
        if "uses" in step:
            given = step.get("with", {})
            used[step["uses"]] = {k: _evaluate(str(v), inputs, context) for k, v in given.items()}
            continue
        out = tmp_path / f"output-{index}"
        out.write_text("")
        step_env = {k: _evaluate(str(v), inputs, context) for k, v in step.get("env", {}).items()}
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            env={
                **env,
                **step_env,
                "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
                "PYTHONPATH": str(REPO / "src"),
                "GITHUB_ACTION_PATH": str(REPO),
                "GITHUB_OUTPUT": str(out),
            },
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        stderr = done.stderr
        found = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
        if "id" in step:
            outputs[step["id"]] = found
            context |= {f"steps.{step['id']}.outputs.{k}": v for k, v in found.items()}
        if done.returncode != 0:
            return done.returncode, outputs, stderr, used
    return 0, outputs, stderr, used


def test_the_indexer_s_workflow_runs_with_only_its_uses_line_changed(
    origin: Path, tmp_path: Path, chroma_server: str
) -> None:
    """The repository indexer's workflow, as its README writes it, pointed at chromasync's
    Action: the steps' commands run with the environment a runner sets. (`provider: hash`
    stands in for the embedding model, as everywhere in the tests.)"""
    from chromasync.metakeys import IDENTITY_FIELDS

    collection = f"repository-content-{os.getpid()}-{tmp_path.name[-8:]}"
    with_ = {
        "server-url": chroma_server,
        "bearer-token": "tok-indexer-5e1d",
        "collection-name": collection,
        "exclude-paths": "journal/\n",
        "provider": "hash",
    }
    runner = {
        "HOME": str(tmp_path),
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": "acme/handbook",
        "GITHUB_REF_NAME": "main",
        "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
        "GITHUB_WORKSPACE": str(origin),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary"),
        "RUNNER_TEMP": str(tmp_path / "runner-temp"),
    }
    code, outputs, stderr, used = _run_steps(with_, runner, tmp_path)
    assert code == 0, stderr
    assert "tok-indexer-5e1d" not in stderr
    # installed from the lock, pip's cache kept between runs under the lock's hash
    lock = REPO / "requirements.lock"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    assert outputs["pip-cache"]["lock"] == digest and outputs["pip-cache"]["dir"]
    [cache] = [w for name, w in used.items() if name.startswith("actions/cache@")]
    assert cache["path"] == outputs["pip-cache"]["dir"] and cache["key"].endswith(digest)
    pip = (tmp_path / "pip-args").read_text().split("\n")
    assert pip[:4] == ["-m", "pip", "install", "--quiet"] and pip[4:7] == [
        "-c",
        str(lock),
        str(REPO),
    ]
    # its outputs under its names
    values = outputs["sync"]
    assert set(INDEXER_OUTPUTS) <= set(values)
    assert values["namespace_id"] == ACME_HANDBOOK_MAIN and values["dry_run"] == "false"
    summary = json.loads(values["summary"])
    assert summary["collection"] == collection and summary["source"] == "acme/handbook@main"
    assert int(values["files_indexed"]) == summary["files_new"] > 0
    assert int(values["files_scanned"]) == summary["files_seen"]
    assert int(values["chunks_added_or_updated"]) == int(values["chunks_desired"]) > 0
    # into the server it names, each record with the indexer's fields
    settings = api.resolve_settings({"chroma_url": chroma_server, "provider": "hash"}, {})
    records = list(api.open_store(settings).collection(collection, create=False).iter_records())
    assert records and not any(str(r.metadata["path"]).startswith("journal/") for r in records)
    assert {r.metadata["namespace_id"] for r in records} == {ACME_HANDBOOK_MAIN}
    assert all(set(IDENTITY_FIELDS) <= set(r.metadata) for r in records)
    assert not (tmp_path / "runner-temp" / "chromasync" / "chroma").exists()

    # run again: nothing changed, nothing written
    code, outputs, stderr, _used = _run_steps(with_, runner, tmp_path)
    assert code == 0, stderr
    again = outputs["sync"]
    assert (again["chunks_added_or_updated"], again["chunks_unchanged"]) == (
        "0",
        values["chunks_desired"],
    )

    # no server named in CI: a clear failure, never a sync into the runner's temp dir
    del with_["server-url"]
    code, outputs, stderr, _used = _run_steps(with_, runner, tmp_path)
    assert code == 2 and "no Chroma server named" in stderr and "chroma-url" in stderr
    assert "namespace_id" not in outputs.get("sync", {})
    assert not (tmp_path / "runner-temp" / "chromasync" / "chroma").exists()
    # chromasync's name and the indexer's for one input, with two values: refused
    with_ |= {"server-url": chroma_server, "chroma-url": "http://127.0.0.1:9"}
    code, _outputs, stderr, _used = _run_steps(with_, runner, tmp_path)
    assert code == 2 and "chroma-url and server-url" in stderr
