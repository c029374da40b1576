"""Issue 29, "their files" and "their labels": the seeds' files as they are written.

A sources map with its own front matter, quoted ISO dates, a fence with trailing blanks,
Latin-1 text, `.mdown`/`.mkd`, an extensionless README, the same folder under two labels,
and a mistyped `--source`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from chromasync import api
from chromasync.cli.main import main
from chromasync.config.settings import Settings
from chromasync.errors import ConfigError, NotFound, SourceError

from ..conftest import age_tree, invoke_cli, run_cli

LATIN1 = (
    "Le café de la gare était fermé ce matin; nous avons pris le thé à côté, près de "
    "l'église. Ça coûte très cher à Noël, dit-elle, mais la qualité est là.\n"
)


def _paths(settings: Settings) -> dict[str, dict[str, object]]:
    collection = api.open_store(settings).collection(settings.collection, create=False)
    return {str(r.metadata["path"]): dict(r.metadata) for r in collection.iter_records()}


def test_sources_map_front_matter_is_accepted_and_shown(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nhello\n")
    sources = tmp_path / "content-sources.md"
    sources.write_text(
        "---   \n"  # a fence with trailing blanks opens the block too
        "title: Content sources\n"
        "date_created: 2025-01-10\n"
        'date_modified: "2025-09-15T10:00:00Z"\n'
        "schema_version: 1.2\n"
        "content_sources:\n"
        "  - label: notes\n"
        "    path: notes\n"
        "---\n# Curation notes\n"
    )
    runner = CliRunner()
    flags = ["config", "show", "--sources-file", str(sources), "--data-dir", str(tmp_path / "d")]
    result = runner.invoke(main, [*flags, "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["sources_file"]["about"] == {
        "title": "Content sources",
        "schema_version": "1.2",
        "date_created": "2025-01-10",
        "date_modified": "2025-09-15T10:00:00Z",  # as written
    }
    assert [s["label"] for s in shown["sources"]] == ["notes"]
    plain = runner.invoke(main, flags)
    assert plain.exit_code == 0 and "date_created: 2025-01-10" in plain.stdout
    # an unknown key there stays an error, naming the key
    sources.write_text("---\ndate_creatd: 2025-01-10\ncontent_sources: []\n---\n")
    with pytest.raises(ConfigError, match="date_creatd"):
        api.configure({}, {}, tmp_path, sources_file=sources)


def _corpus(root: Path) -> None:
    root.mkdir()
    (root / "quoted.md").write_text(
        '---\ntitle: Quoted\npublished_at: "2025-09-15"\n---\n# Quoted\n\nkestrel release\n'
    )
    (root / "stamped.md").write_text(
        '---\ntitle: Stamped\ndate: "2024-03-01T08:30:00Z"\n---\n# Stamped\n\nkestrel memo\n'
    )
    (root / "old.md").write_text("---\ndate: 2023-01-01\n---\n# Old\n\nkestrel archive\n")
    (root / "vague.md").write_text('---\ndate: "last tuesday"\n---\n# Vague\n\nkestrel note\n')
    (root / "spaced.md").write_text("---  \t\nowner: ops\n---\n# Spaced\n\nkestrel fence\n")
    (root / "latin.txt").write_bytes(LATIN1.encode("latin-1"))
    (root / "notes.mdown").write_text("# Mdown\n\nkestrel mdown\n")
    (root / "notes.mkd").write_text("# Mkd\n\nkestrel mkd\n")
    (root / "README").write_text("Kestrel project readme\n")
    (root / "LICENSE").write_text("MIT License, kestrel\n")
    (root / "Makefile").write_text("all:\n\techo kestrel\n")  # not a text name: still skipped
    age_tree(root)


def test_their_files_are_read(tmp_path: Path, settings: Settings) -> None:
    root = tmp_path / "seed"
    _corpus(root)
    # a source that says `encoding: utf-8` keeps a file that is not UTF-8 a counted skip;
    # by default (`detect`) it is read, Latin-1 exactly
    [plain] = api.ingest([api.source_for(root, "seed", encoding="utf-8")], settings)
    assert plain.files_skipped == {"undecodable": 1, "unsupported-extension": 1}
    assert "latin.txt" not in _paths(settings)
    [summary] = api.ingest([api.source_for(root, "seed")], settings)
    assert summary.files_new == 1  # the remembered `undecodable` skip is read again
    stored = _paths(settings)
    assert set(stored) == {
        "quoted.md",
        "stamped.md",
        "old.md",
        "vague.md",
        "spaced.md",
        "latin.txt",
        "notes.mdown",
        "notes.mkd",
        "README",
        "LICENSE",
    }
    assert summary.files_skipped == {"unsupported-extension": 1}  # Makefile
    # quoted ISO dates are dates, as unquoted ones are
    assert stored["quoted.md"]["published_at"] == "2025-09-15"
    assert stored["quoted.md"]["published_at_ts"] == 1757894400
    assert stored["stamped.md"]["date_ts"] == 1709281800
    # an unreadable date field: indexed all the same, one counted warning
    assert "date_ts" not in stored["vague.md"]
    assert plain.warnings == {"date-unreadable": 1}  # counted on the run that reads it
    assert plain.as_json()["warnings"] == {"date-unreadable": 1}
    # a fence with trailing blanks is front matter, not text
    assert stored["spaced.md"]["owner"] == "ops"
    assert stored["notes.mdown"]["heading"] == "Mdown"
    assert stored["notes.mkd"]["heading"] == "Mkd"
    assert stored["README"]["source_kind"] == "notes"
    hits = api.search("église Noël", settings, k=3, mode="keyword")
    assert hits and hits[0].path == "latin.txt" and "église" in hits[0].text
    # --after and --sort date see the quoted dates
    after = api.retrieve(
        api.SearchRequest(
            "kestrel",
            mode="keyword",
            k=10,
            filters=api.Filters(after=1704067200, date_fields=("date", "published_at")),
        ),
        settings,
    )
    assert {h.path for h in after.hits} == {"quoted.md", "stamped.md"}
    dated = api.retrieve(
        api.SearchRequest(
            "kestrel",
            mode="keyword",
            k=10,
            sort="date",
            filters=api.Filters(date_fields=("date", "published_at")),
        ),
        settings,
    )
    assert [h.path for h in dated.hits][:3] == ["quoted.md", "stamped.md", "old.md"]


RUSSIAN = "Привет, как дела? Это текст на русском языке.\n"
GREEK = "Καλημέρα σας, αυτό είναι ένα κείμενο στα ελληνικά για τη δοκιμή.\n"
JAPANESE = "これは日本語のテキストです。シフトJISでエンコードされています。東京は晴れです。\n"


@pytest.mark.parametrize(
    ("raw", "encoding", "text"),
    [
        (LATIN1.encode("latin-1"), "detect", LATIN1),
        (RUSSIAN.encode("cp1251"), "cp1251", RUSSIAN),
        (JAPANESE.encode("shift_jis"), "detect", JAPANESE),
    ],
)
def test_a_source_encoding_reads_legacy_text(raw: bytes, encoding: str, text: str) -> None:
    from chromasync.corpus.read import decode_text

    refused = decode_text(raw, "utf-8")
    assert not isinstance(refused, str) and refused.reason == "undecodable"
    assert decode_text(raw, encoding) == text


@pytest.mark.parametrize(
    "text",
    [
        "crème brûlée naïve",  # cp1257 read it "crčme brūlée naļve"
        "x é\n",
        "Ça",
        "été",
        "þú ert",
        "Größe über Maß",
        "l’été à Noël — “déjà” vu… 12 €",  # cp1252's marks (0x80-0x9F)
        "Renée’s café",  # an accented letter before a cp1252 quote mark
        "Ærøskøbing, Þórsmörk, año, coração, œuvre, Ÿ",
        LATIN1 * 200,
    ],
)
def test_western_text_is_read_exactly_at_any_length(text: str) -> None:
    from chromasync.corpus.read import decode_text

    encoding = "latin-1" if all(ord(c) < 256 for c in text) else "cp1252"
    assert decode_text(text.encode(encoding)) == text


@pytest.mark.parametrize(
    "raw",
    [
        bytes(range(128, 256)) * 8,
        b"ends mid-character " + "€".encode()[:2],  # truncated UTF-8
        b"a surrogate \xed\xa0\x80\n",
        b"an overlong slash \xc0\xaf\n",
        "Да".encode("cp1251"),  # too short to tell, and not Western
        "Привет".encode("cp1251"),
        "z\xb3amaæ".encode("latin-1"),  # Polish "złamać" (cp1250): a symbol mid-word
        "テスト".encode("shift_jis"),
    ],
)
def test_detection_refuses_what_it_cannot_tell(raw: bytes) -> None:
    from chromasync.corpus.read import decode_text

    skip = decode_text(raw)
    assert not isinstance(skip, str) and skip.reason == "undecodable", (raw, skip)


def test_legacy_text_is_read_by_its_detected_charset() -> None:
    """Not Western, long enough for a detector: read in the charset detected (never as
    cp1252's accented letters)."""
    from chromasync.corpus.read import decode_text

    assert decode_text(RUSSIAN.encode("cp1251") * 2) == RUSSIAN * 2
    assert decode_text(GREEK.encode("cp1253") * 2) == GREEK * 2


def test_utf16_with_a_bom_is_read_and_binary_stays_skipped() -> None:
    from chromasync.corpus.read import decode_text

    assert decode_text(b"\xff\xfe" + "Crème brûlée\n".encode("utf-16-le")) == "Crème brûlée\n"
    assert decode_text(b"\xfe\xff" + "Crème brûlée\n".encode("utf-16-be")) == "Crème brûlée\n"
    for raw in (b"caf\xe9 \x00\x01 bytes", b"\x89PNG\r\n\x1a\ncaf\xe9"):
        skip = decode_text(raw)
        assert not isinstance(skip, str) and skip.reason == "binary", raw


def test_unreadable_date_warning_in_cli_json(tmp_path: Path, cli_env: dict[str, str]) -> None:
    root = tmp_path / "seed"
    _corpus(root)
    result = CliRunner().invoke(main, ["ingest", str(root), "--json"], env=cli_env)
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert row["warnings"] == {"date-unreadable": 1}
    plain = CliRunner().invoke(main, ["ingest", str(root), "--checksum"], env=cli_env)
    assert "warned  date-unreadable 1" in plain.stdout


def test_same_folder_under_a_second_label_is_refused(tmp_path: Path, settings: Settings) -> None:
    root = tmp_path / "seed"
    _corpus(root)
    api.ingest([api.source_for(root, "reach")], settings)
    with pytest.raises(SourceError, match="already indexed as source 'reach'"):
        api.ingest([api.source_for(root, "reach-again")], settings)
    # two labels over different files of one folder (a monorepo's parts) stay fine
    mono = tmp_path / "mono"
    (mono / "docs").mkdir(parents=True)
    (mono / "src").mkdir()
    (mono / "docs" / "a.md").write_text("# Docs\n\nhello\n")
    (mono / "src" / "b.py").write_text("def b():\n    return 1\n")
    age_tree(mono)
    api.ingest([api.source_for(mono, "mono-docs", include=("docs/",))], settings)
    api.ingest([api.source_for(mono, "mono-src", include=("src/",))], settings)


def test_unknown_source_label_is_an_error(tmp_path: Path, cli_env: dict[str, str]) -> None:
    root = tmp_path / "reachedu"
    _corpus(root)
    runner = CliRunner()
    assert runner.invoke(main, ["ingest", str(root)], env=cli_env).exit_code == 0
    for command in (
        ["search", "kestrel", "--source", "reachdeu", "--no-daemon"],
        ["verify", "--source", "reachdeu"],
    ):
        result = runner.invoke(main, command, env=cli_env)
        assert result.exit_code == 1, (command, result.output)
        assert "did you mean 'reachedu'" in result.stderr, command
    ok = runner.invoke(
        main, ["search", "kestrel", "--source", "reachedu", "--no-daemon"], env=cli_env
    )
    assert ok.exit_code == 0 and "kestrel" in ok.stdout
    with pytest.raises(NotFound, match="did you mean"):
        settings = api.configure({"provider": "hash"}, cli_env)
        api.retrieve(
            api.SearchRequest("kestrel", filters=api.Filters(sources=("reachdeu",))), settings
        )


def test_ingest_once_hidden_and_encoding_flags(tmp_path: Path, cli_env: dict[str, str]) -> None:
    root = tmp_path / "flags"
    (root / ".github").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".github" / "guide.md").write_text("# Guide\n\nhidden kestrel\n")
    (root / ".git" / "HEAD.md").write_text("# never\n")
    (root / "latin.txt").write_bytes(LATIN1.encode("latin-1"))
    age_tree(root)
    runner = CliRunner()
    once = runner.invoke(main, ["ingest", "--once", str(root), "--json"], env=cli_env)
    assert once.exit_code == 0, once.output  # the cron line's flag: one pass, the default
    [row] = json.loads(once.stdout)
    assert row["files_new"] == 1 and "undecodable" not in row["files_skipped"]  # latin.txt
    flags = ["ingest", str(root), "--include-hidden", "--encoding", "utf-8", "--json"]
    [row] = json.loads(runner.invoke(main, flags, env=cli_env).stdout)
    assert row["files_new"] == 1 and row["files_skipped"] == {"hidden": 1}
    bad = runner.invoke(main, ["ingest", str(root), "--encoding", "klingon"], env=cli_env)
    assert bad.exit_code == 2 and "not a known codec" in bad.stderr


def test_chunk_report_takes_ingest_s_flags_and_sources(
    tmp_path: Path, cli_env: dict[str, str], settings: Settings
) -> None:
    """No PATH: the current folder; `(none)` for README; token totals, largest first; the
    file and chunk flags of ingest; a configured source's `subdirs` (issue 29)."""
    root = tmp_path / "site"
    (root / "content").mkdir(parents=True)
    (root / "drafts").mkdir()
    (root / "content" / "big.md").write_text("# Big\n\n" + "lorem ipsum dolor. " * 400)
    (root / "content" / "small.py").write_text("def f():\n    return 1\n")
    (root / "README").write_text("Site readme\n")
    (root / "drafts" / "draft.md").write_text("# Draft\n\nnot yet\n")
    age_tree(root)
    runner = CliRunner()

    def report(*args: str, cwd: Path = root) -> dict[str, object]:
        result = invoke_cli(["chunk-report", *args, "--json"], env=cli_env, cwd=cwd)
        assert result.returncode == 0, result.stderr
        data: dict[str, object] = json.loads(result.stdout)
        return data

    here = report()
    assert here["root"] == str(root) and here["schema"] == 2
    rows = here["extensions"]
    assert isinstance(rows, list)
    assert rows[0]["extension"] == ".md"  # the largest token total first
    totals = [r["tokens"]["total"] for r in rows]
    assert totals == sorted(totals, reverse=True) and "(none)" in [r["extension"] for r in rows]
    only_md = report("--include-extension", "md", "--chunk-size", "64")
    assert {r["extension"] for r in only_md["extensions"]} == {".md"}  # type: ignore[union-attr]
    assert only_md["max_tokens"] == 64 and only_md["chunks"] > here["chunks"]  # type: ignore[operator]
    no_py = report("--exclude-extension", ".py")
    assert ".py" not in {r["extension"] for r in no_py["extensions"]}  # type: ignore[union-attr]

    # a configured source's subdirs: the report counts what ingest writes
    config = tmp_path / "chromasync.yaml"
    config.write_text("version: 1\nsources:\n  - {label: site, path: site, subdirs: [content]}\n")
    env = {**cli_env, "CHROMASYNC_CONFIG": str(config)}
    declared = invoke_cli(["chunk-report", str(root), "--json"], env=env)
    by_label = invoke_cli(["chunk-report", "--source", "site", "--json"], env=env)
    assert declared.returncode == 0 and by_label.returncode == 0, declared.stderr
    data = json.loads(declared.stdout)
    assert json.loads(by_label.stdout)["files"] == data["files"] == 2
    ingested = runner.invoke(main, ["ingest", "-s", "site", "--json"], env=env)
    [row] = json.loads(ingested.stdout)
    assert (row["files_new"], row["chunks_total"]) == (data["files"], data["chunks"])


def test_ingest_takes_the_repository_indexer_s_flags(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    root = tmp_path / "checkout"
    root.mkdir()
    for i in range(7):
        (root / f"n{i}.md").write_text(f"# Note {i}\n\nkestrel {i}\n")
    (root / "main.py").write_text("def main():\n    return 0\n")
    age_tree(root)
    runner = CliRunner()
    sha = "0123456789abcdef0123456789abcdef01234567"
    args = [
        "ingest",
        str(root),
        "--identity",
        "acme/handbook@main",
        "--commit-sha",
        sha,
        "--batch-size",
        "2",
        "--retry-attempts",
        "3",
        "--exclude-extension",
        "py",
        "--json",
    ]
    result = runner.invoke(main, args, env=cli_env)
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert row["source"] == "acme/handbook@main" and row["files_new"] == 7
    settings = api.configure({"provider": "hash"}, cli_env)
    stored = _paths(settings)
    assert set(stored) == {f"n{i}.md" for i in range(7)}
    meta = stored["n0.md"]
    assert meta["indexed_commit_sha"] == sha and meta["repository"] == "acme/handbook"
    assert meta["branch"] == "main" and meta["chromasync_source"] == "acme/handbook@main"
    for bad, words in (
        (["--identity", "just-a-name"], "ORGANIZATION/REPOSITORY"),
        (["--commit-sha", "xyz"], "not a commit id"),
        (["--batch-size", "0"], "0"),
    ):
        refused = runner.invoke(main, ["ingest", str(root), *bad], env=cli_env)
        assert refused.exit_code == 2 and words in refused.stderr, bad
    # the store takes writes in requests of at most --batch-size records
    from chromasync.store.target import StoreConfig

    limited = api.configure({"provider": "hash", "batch_size": 2}, cli_env)
    assert limited.batch_size == 2
    assert StoreConfig(tmp_path, batch_size=2).batch_size == 2
    store = api.open_store(limited)
    assert store.limits.max_batch == 2 and store.max_batch == 2


def test_the_cron_line_s_rerun_takes_the_fast_path(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """`ingest --once` (and the indexer's flags) keep an unchanged re-run on the fast path."""
    root = tmp_path / "cron"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nkestrel\n")
    age_tree(root)
    args = ["ingest", "--once", str(root), "--exclude-extension", "py", "--json", "--quiet"]
    env = {**cli_env, "PYTHONPROFILEIMPORTTIME": "1"}
    # children: the test is about what a fresh interpreter imports on the fast path
    runs = [run_cli(args, env=env) for _ in range(3)]  # new, the no-op that records, fast
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in runs[-1].stderr.splitlines()}
    assert "chromasync.fastpath" in imported and "click" not in imported
    [row] = json.loads(runs[-1].stdout)
    assert row["files_unchanged"] == 1


def test_identical_files_are_one_hit_also_at_the_others(
    tmp_path: Path, settings: Settings, cli_env: dict[str, str]
) -> None:
    """Two files with the same text: one hit, naming the other path, on every surface
    (the API and REST/MCP's JSON through `Hit.as_json`, the CLI's lines) (issue 29)."""
    root = tmp_path / "copies"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    text = "# Ospreys\n\nOspreys dive feet first for fish near the estuary.\n"
    (root / "a" / "osprey.md").write_text(text)
    (root / "b" / "osprey-copy.md").write_text(text)
    (root / "other.md").write_text("# Gulls\n\nGulls steal chips on the pier.\n")
    age_tree(root)
    api.ingest([api.source_for(root, "copies")], settings)
    for mode in ("hybrid", "dense", "keyword"):
        hits = api.search("ospreys dive for fish", settings, k=3, mode=mode)
        copies = [h for h in hits if "osprey" in h.path]
        assert len(copies) == 1, (mode, [h.path for h in hits])
        assert {copies[0].path, *copies[0].also_at} == {"a/osprey.md", "b/osprey-copy.md"}
        assert copies[0].as_json()["also_at"] == list(copies[0].also_at)
        # k hits still: the folded copy takes no place (keyword: only the copies match)
        two = api.search("ospreys dive for fish", settings, k=2, mode=mode)
        assert len(two) == (1 if mode == "keyword" else 2), mode
        assert len({h.path for h in two} & {"b/osprey-copy.md", "a/osprey.md"}) == 1
    env = {**cli_env, "CHROMASYNC_NO_DAEMON": "1"}
    plain = CliRunner().invoke(main, ["search", "ospreys dive", "--k", "3"], env=env)
    assert plain.exit_code == 0 and "also at: " in plain.stdout
    data = json.loads(
        CliRunner().invoke(main, ["search", "ospreys dive", "--json"], env=env).stdout
    )
    assert sum("osprey" in h["path"] for h in data["hits"]) == 1


def _two_content_roots(tmp_path: Path) -> Path:
    for site in ("site", "docs"):
        (tmp_path / site / "content").mkdir(parents=True)
        (tmp_path / site / "content" / "a.md").write_text(f"# {site}\n\nkestrel {site}\n")
    sources = tmp_path / "content-sources.md"
    sources.write_text(  # the ingest design's map: two roots ending in `content`, no labels
        "---\ncontent_sources:\n  - path: site/content\n  - path: docs/content\n---\n"
    )
    return sources


def test_two_roots_ending_in_content_get_distinct_labels(tmp_path: Path) -> None:
    sources = _two_content_roots(tmp_path)
    runner = CliRunner()
    flags = ["config", "show", "--sources-file", str(sources), "--data-dir", str(tmp_path / "d")]
    shown = runner.invoke(main, [*flags, "--json"])
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.stdout)["sources"]
    assert [r["label"] for r in rows] == ["site/content", "docs/content"]
    assert "2 roots end in 'content'" in rows[0]["label_from"]
    assert rows[1]["label_from"] == "the path's last 2 parts: 2 roots end in 'content'"
    plain = runner.invoke(main, flags, env={"COLUMNS": "200"})
    assert "label 'site/content' from the path's last 2 parts" in plain.stdout
    # beside a config that names a `content` source, both derived ones move aside
    (tmp_path / "chromasync.yaml").write_text(
        "version: 1\nsources_file: content-sources.md\n"
        f"sources:\n  - {{label: content, path: {tmp_path / 'site'}}}\n"
    )
    settings = api.configure({"provider": "hash"}, {}, tmp_path)
    entries = api.configured_entries(settings)
    assert [e.label for e in entries] == ["content", "site/content", "docs/content"]
    # two named labels that clash stay an error
    sources.write_text(
        "---\ncontent_sources:\n  - {path: site/content, label: x}\n"
        "  - {path: docs/content, label: x}\n---\n"
    )
    with pytest.raises(ConfigError, match="already used"):
        api.configure({}, {}, tmp_path)


def test_discover_without_the_config_skips_the_roots_it_declares(tmp_path: Path) -> None:
    """Run from elsewhere, on the sources file a config names (not written yet):
    the root the config declares is known, not appended again."""
    project = tmp_path / "project"
    for site in ("site", "blog"):
        for i in range(10):
            (project / site / "content").mkdir(parents=True, exist_ok=True)
            (project / site / "content" / f"p{i}.md").write_text(f"# {i}\n")
    (project / "chromasync.yaml").write_text(
        "version: 1\nsources_file: content-sources.md\nsources:\n  - {path: site/content}\n"
    )
    settings = api.resolve_settings({"data_dir": str(tmp_path / "d")}, {})
    found = api.discover(settings, project, project / "content-sources.md")
    assert [Path(p).parent.name for p in found.added] == ["blog"]
    assert [Path(p).parent.name for p in found.known] == ["site"]
    configured = api.configure({"provider": "hash"}, {}, project)
    assert {e.label for e in api.configured_entries(configured)} == {"content", "blog/content"}


def test_recognised_code_is_indexed(tmp_path: Path, settings: Settings) -> None:
    """`.css .kt .lua .sql .swift .vue .xml` were `unsupported-extension` skips; each is
    indexed, by its grammar's declarations where one is installed (not Vue, not SQL)."""
    root = tmp_path / "code"
    root.mkdir()
    files = {
        "a.css": ".kestrel {\n  color: red;\n}\n",
        "b.kt": "fun kestrel() {\n    println(1)\n}\n",
        "c.lua": "function kestrel()\n  return 1\nend\n",
        "d.sql": "CREATE TABLE kestrel (\n  id INT\n);\n",
        "e.swift": "func kestrel() {\n  print(1)\n}\n",
        "f.vue": "<template>\n  <p>kestrel</p>\n</template>\n",
        "g.xml": "<kestrel>\n  <note>1</note>\n</kestrel>\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    [summary] = api.ingest([api.source_for(root, "code")], settings)
    assert summary.files_new == 7 and summary.files_skipped == {}
    stored = _paths(settings)
    assert {m["language"] for m in stored.values()} == {
        "css",
        "kotlin",
        "lua",
        "sql",
        "swift",
        "vue",
        "xml",
    }
    symbols = {Path(p).name: m.get("symbol") for p, m in stored.items()}
    assert symbols == {
        "a.css": ".kestrel",
        "b.kt": "kestrel",
        "c.lua": "kestrel",
        "d.sql": None,
        "e.swift": "kestrel",
        "f.vue": None,
        "g.xml": "note",
    }
    hits = api.search("kestrel", settings, k=10, mode="keyword")
    assert len({h.path for h in hits}) == 7
