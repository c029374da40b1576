"""Configured sources against a real Chroma: selection, per-kind collections, removal,
per-source options (subdirs, extensions, static metadata, identity key, skip paths)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from chromasync import api
from chromasync.cli.main import main
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import ConfigError, NotFound

from ..conftest import REPO, age_tree, set_mtime


def stored(settings: Settings, collection: str) -> dict[str, dict[str, object]]:
    try:
        handle = api.open_store(settings).collection(collection, create=False)
    except NotFound:
        return {}
    return {r.id: dict(r.metadata) for r in handle.iter_records()}


def by_source(settings: Settings, collection: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for meta in stored(settings, collection).values():
        out.setdefault(str(meta["chromasync_source"]), set()).add(str(meta["path"]))
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Two note trees and a docs tree, with a config declaring them."""
    root = tmp_path / "project"
    for name in ("alpha", "beta"):
        shutil.copytree(REPO / "examples" / "notes", root / name)
    docs = root / "docs"
    (docs / "content").mkdir(parents=True)
    (docs / "drafts").mkdir()
    for i in range(4):
        (docs / "content" / f"page{i}.md").write_text(f"# Page {i}\n\nAbout topic {i}.\n")
        (docs / "content" / f"page{i}.txt").write_text(f"plain text {i}\n")
    (docs / "drafts" / "draft.md").write_text("# Draft\n\nNot ready.\n")
    (docs / "content" / "skipme.md").write_text("# Skip\n\nskip-paths test\n")
    age_tree(root)
    (root / "chromasync.yaml").write_text(
        "version: 1\n"
        "# comment kept\n"
        "store:\n  data_dir: ../data\n"
        "embedding:\n  provider: hash\n"
        "skip_paths: [skipme]\n"
        "sources:\n"
        "  - path: alpha\n    kind: notes\n"
        "  - path: beta\n    kind: notes\n    include: false\n"
        "  - label: docs\n    path: docs\n    kind: docs\n    subdirs: [content]\n"
        "    include_extensions: [.md]\n    metadata: {stability: mature}\n"
    )
    return root


def configured(project: Path) -> Settings:
    return api.configure({}, {}, project)


def test_ingest_configured_per_kind(project: Path, embedder: HashEmbedder) -> None:
    settings = configured(project)
    summaries = api.ingest(api.ConfiguredSources(), settings, embedder=embedder)
    assert [(s.source, s.collection) for s in summaries] == [
        ("alpha", "chromasync-notes"),
        ("docs", "chromasync-docs"),
    ]
    assert set(by_source(settings, "chromasync-notes")) == {"alpha"}  # beta is include: false
    docs = stored(settings, "chromasync-docs")
    paths = {m["path"] for m in docs.values()}
    assert paths == {f"content/page{i}.md" for i in range(4)}  # subdirs, extensions, skip
    assert all(m["stability"] == "mature" and m["source_kind"] == "docs" for m in docs.values())
    hits = api.search("topic", settings, k=20, embedder=embedder)
    assert {h.collection for h in hits} == {"chromasync-docs", "chromasync-notes"}

    only = api.ingest(api.ConfiguredSources(("docs",)), settings, embedder=embedder)
    assert [s.source for s in only] == ["docs"] and only[0].files_unchanged == 4
    with pytest.raises(ConfigError, match="include: false"):
        api.selected_sources(settings, ["beta"])
    with pytest.raises(NotFound, match="did you mean 'alpha'"):
        api.selected_sources(settings, ["alpah"])


def test_remove_source_leaves_others(project: Path, embedder: HashEmbedder) -> None:
    text = (project / "chromasync.yaml").read_text()
    (project / "chromasync.yaml").write_text(text.replace("    include: false\n", ""))
    settings = configured(project)
    api.ingest(api.ConfiguredSources(), settings, embedder=embedder)
    before = by_source(settings, "chromasync-notes")
    assert set(before) == {"alpha", "beta"}
    docs_before = stored(settings, "chromasync-docs")

    removed = api.remove_source(settings, "alpha")
    assert removed.records_deleted > 0 and removed.declaration_removed
    assert removed.collections == ("chromasync-notes",)
    assert removed.collections_dropped == ()  # beta's records are still in it
    assert by_source(settings, "chromasync-notes") == {"beta": before["beta"]}
    assert stored(settings, "chromasync-docs") == docs_before
    assert [r.source for r in api.status(settings)] == ["docs", "beta"] or {
        r.source for r in api.status(settings)
    } == {"docs", "beta"}
    after = (project / "chromasync.yaml").read_text()
    assert "path: alpha" not in after and "# comment kept" in after
    assert [e.label for e in api.configured_entries(configured(project))] == ["beta", "docs"]
    with pytest.raises(NotFound):
        api.remove_source(configured(project), "alpha")


def test_add_and_list_sources(project: Path, embedder: HashEmbedder) -> None:
    settings = configured(project)
    (project / "gamma").mkdir()
    (project / "gamma" / "g.md").write_text("# G\n\ngamma text\n")
    entry = api.add_source(settings, project / "gamma", kind="journal")
    assert entry.label == "gamma" and entry.path == project / "gamma"
    text = (project / "chromasync.yaml").read_text()
    assert text.startswith("version: 1\n# comment kept\n") and "path: gamma" in text
    with pytest.raises(ConfigError, match="already exists"):
        api.add_source(configured(project), project / "gamma")
    settings = configured(project)
    api.ingest(api.ConfiguredSources(("gamma",)), settings, embedder=embedder)
    rows = {r.label: r for r in api.list_sources(settings)}
    assert rows["gamma"].collection == "chromasync-journal" and rows["gamma"].chunks > 0
    assert rows["beta"].files == 0 and not rows["beta"].include


def test_identity_key_keeps_ids_across_rename(tmp_path: Path, embedder: HashEmbedder) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    note = root / "one.md"
    note.write_text("---\nrecord_uuid: 1234-abcd\n---\n# One\n\nStable identity text.\n")
    (root / "two.md").write_text("# Two\n\nNo identity.\n")
    age_tree(root)
    cfg = tmp_path / "chromasync.yaml"
    cfg.write_text(
        f"store: {{data_dir: {tmp_path / 'data'}}}\nsources:\n"
        f"  - path: {root}\n    identity_key: record_uuid\n"
    )
    settings = api.configure({}, {}, tmp_path)
    api.ingest(api.ConfiguredSources(), settings, embedder=embedder)
    first = {i: m for i, m in stored(settings, "chromasync-notes").items() if m["path"] == "one.md"}
    assert first and all(m["document_id"] == "1234-abcd" for m in first.values())
    (root / "moved").mkdir()
    note.rename(root / "moved" / "renamed.md")
    calls = embedder.calls
    [summary] = api.ingest(api.ConfiguredSources(), settings, embedder=embedder)
    assert summary.files_deleted == 1 and summary.files_new == 1
    assert summary.chunks_embedded == 0 and embedder.calls == calls
    after = stored(settings, "chromasync-notes")
    moved = {i for i, m in after.items() if m["path"] == "moved/renamed.md"}
    assert moved == set(first)  # same record IDs under the new path
    assert not any(m["path"] == "one.md" for m in after.values())


def test_cli_sources_commands(project: Path) -> None:
    runner = CliRunner()
    env = {"CHROMASYNC_CONFIG": str(project / "chromasync.yaml"), "COLUMNS": "250"}
    listed = runner.invoke(main, ["sources", "list", "--json"], env=env)
    assert listed.exit_code == 0, listed.stderr
    assert '"label": "docs"' in listed.stdout and listed.stderr == ""
    ingest = runner.invoke(main, ["ingest", "--source", "alpha", "--json"], env=env)
    assert ingest.exit_code == 0, ingest.stderr
    assert '"source": "alpha"' in ingest.stdout and '"embed_ms"' in ingest.stdout
    bad = runner.invoke(main, ["ingest", "--source", "nope"], env=env)
    assert bad.exit_code == 1 and "no source labelled 'nope'" in bad.stderr and bad.stdout == ""
    removed = runner.invoke(main, ["sources", "remove", "alpha"], env=env)
    assert removed.exit_code == 0, removed.stderr
    assert removed.stdout.startswith("removed source 'alpha':")
    status = runner.invoke(main, ["status"], env=env)
    assert status.exit_code == 0 and "state:" in status.stdout and "not indexed" in status.stdout


def test_private_file_removed_on_next_run(tmp_path: Path, embedder: HashEmbedder) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    secret = root / "diary.md"
    secret.write_text("---\ntitle: Diary\n---\n# Diary\n\nprivate-canary-words here\n")
    (root / "public.md").write_text("# Public\n\nopen words\n")
    age_tree(root)
    settings = api.resolve_settings({"data_dir": str(tmp_path / "d"), "provider": "hash"}, {})
    api.ingest([api.source_for(root)], settings, embedder=embedder)
    assert any(m["path"] == "diary.md" for m in stored(settings, "chromasync-notes").values())
    secret.write_text("---\ntitle: Diary\nPublish: no\n---\n# Diary\n\nprivate-canary-words\n")
    set_mtime(secret, 1_700_000_000)
    [summary] = api.ingest([api.source_for(root)], settings, embedder=embedder)
    assert summary.files_skipped.get("private") == 1 and summary.files_deleted == 1
    docs = api.open_store(settings).collection("chromasync-notes", create=False)
    assert not any(
        "private-canary" in (r.document or "") for r in docs.iter_records(documents=True)
    )
    assert all(m["path"] != "diary.md" for m in stored(settings, "chromasync-notes").values())


def test_cli_ingest_options(project: Path) -> None:
    runner = CliRunner()
    env = {"CHROMASYNC_CONFIG": str(project / "chromasync.yaml"), "COLUMNS": "250"}
    settings = configured(project)

    manifest = project.parent / "desired.jsonl"
    dry = runner.invoke(
        main, ["ingest", "--dry-run", "--output-manifest", str(manifest), "--json"], env=env
    )
    assert dry.exit_code == 0, dry.stderr
    assert "desired records" in dry.stderr
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    assert {r["source"] for r in rows} == {"alpha", "docs"}
    assert all(
        "text" not in r and r["record_hash"] and r["end_line"] >= r["start_line"] for r in rows
    )
    assert not (project.parent / "data" / "chroma").exists()  # a dry run stores nothing
    with_text = runner.invoke(
        main,
        ["ingest", "--dry-run", "--output-manifest", str(manifest), "--include-text", "-s", "docs"],
        env=env,
    )
    assert with_text.exit_code == 0, with_text.stderr
    texts = [json.loads(line)["text"] for line in manifest.read_text().splitlines()]
    assert any("About topic 1." in t for t in texts)
    usage = runner.invoke(main, ["ingest", "--output-manifest", str(manifest)], env=env)
    assert usage.exit_code == 2 and "--output-manifest needs --dry-run" in usage.stderr

    limited = runner.invoke(main, ["ingest", "-s", "docs", "--limit", "2", "--json"], env=env)
    assert limited.exit_code == 0, limited.stderr
    assert json.loads(limited.stdout)[0]["files_new"] == 2

    full = runner.invoke(main, ["ingest"], env=env)
    assert full.exit_code == 0, full.stderr
    # stdout is not a terminal: plain lines, one block per source and one for the total
    assert "\ntotal\n" in full.stdout and "  chunks  " in full.stdout
    assert "\n  skipped " in full.stdout

    (project / "docs" / "content" / "page0.md").unlink()
    kept = runner.invoke(main, ["ingest", "-s", "docs", "--no-gc", "--json"], env=env)
    assert json.loads(kept.stdout)[0]["files_deleted"] == 0
    assert "content/page0.md" in {m["path"] for m in stored(settings, "chromasync-docs").values()}

    refused = runner.invoke(main, ["ingest", "-s", "docs", "--reset"], env=env, input="n\n")
    assert refused.exit_code == 1 and "Drop collection(s) chromasync-docs" in refused.stderr
    assert stored(settings, "chromasync-docs")
    reset = runner.invoke(main, ["ingest", "-s", "docs", "--reset", "--yes", "--json"], env=env)
    assert reset.exit_code == 0, reset.stderr
    assert "dropped: chromasync-docs" in reset.stderr
    [again] = json.loads(reset.stdout)
    assert again["files_new"] == 3 and again["files_deleted"] == 0
    assert stored(settings, "chromasync-notes")  # other collections untouched


def test_chunking_max_tokens_from_config(tmp_path: Path, embedder: HashEmbedder) -> None:
    root = tmp_path / "long"
    root.mkdir()
    paragraphs = "\n\n".join(f"Paragraph {i} " + "word " * 30 for i in range(12))
    (root / "long.md").write_text(f"# Long\n\n{paragraphs}\n")
    age_tree(root)
    cfg = tmp_path / "chromasync.yaml"
    base = f"store: {{data_dir: {tmp_path / 'd'}}}\nsources: [{{path: {root}}}]\n"
    cfg.write_text(base)
    dry = api.default_options(api.configure({}, {}, tmp_path), dry_run=True)
    [wide] = api.ingest(
        api.ConfiguredSources(), api.configure({}, {}, tmp_path), dry, embedder=embedder
    )
    cfg.write_text(base + "chunking: {max_tokens: 40}\n")
    narrow_settings = api.configure({}, {}, tmp_path)
    assert narrow_settings.chunk_max_tokens == 40
    narrow_options = api.default_options(narrow_settings, dry_run=True)
    [narrow] = api.ingest(
        api.ConfiguredSources(), narrow_settings, narrow_options, embedder=embedder
    )
    assert narrow.chunks_total > wide.chunks_total
