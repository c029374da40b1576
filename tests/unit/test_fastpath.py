"""The fast path's pure parts: which command lines qualify, the key, and the tree listing,
which must be exactly what discovery records for the same tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chromasync import fastpath
from chromasync.corpus.listing import tree_listing
from chromasync.corpus.walk import discover_source
from chromasync.fastpath import parse_invocation
from chromasync.records import SourceSpec
from chromasync.state import lock
from chromasync.sync.summary import render_plain


@pytest.mark.parametrize(
    ("argv", "eligible"),
    [
        (["ingest", "notes"], True),
        (["ingest", "notes", "--json", "--quiet"], True),
        (["ingest", "a", "b", "-q", "--data-dir", "d", "--collection=c"], True),
        (["ingest", "-s", "docs", "--config", "x.yaml", "--no-gitignore"], True),
        (["ingest", "notes", "--include", "*.md", "--exclude", "drafts/"], True),
        (["ingest"], True),
        (["ingest", "notes", "--dry-run"], False),
        (["ingest", "notes", "--checksum"], False),
        (["ingest", "notes", "--reembed"], False),
        (["ingest", "notes", "--limit", "3"], False),
        (["ingest", "notes", "--chroma-token", "s3cret"], False),
        (["ingest", "notes", "--embed-option", "api_key=s3cret"], False),
        (["ingest", "notes", "--wait"], False),
        (["ingest", "notes", "--reset", "--yes"], False),
        (["ingest", "notes", "--help"], False),
        (["ingest", "notes", "--data-dir"], False),  # a value is missing: the CLI says so
        (["ingest", "notes", "-qs", "docs"], False),
        (["search", "notes"], False),
        (["--version"], False),
        ([], False),
    ],
)
def test_eligible_command_lines(argv: list[str], eligible: bool) -> None:
    assert (parse_invocation(argv, {}) is not None) is eligible


def test_the_switches_that_turn_it_off() -> None:
    argv = ["ingest", "notes", "--json"]
    invocation = parse_invocation(argv, {})
    assert invocation is not None and invocation.given("--json")
    assert parse_invocation(argv, {"CHROMASYNC_NO_FASTPATH": "1"}) is None
    assert parse_invocation(argv, {"CHROMASYNC_CRASH_AT": "after-upsert"}) is None
    assert parse_invocation(argv, {"CHROMASYNC_NO_FASTPATH": ""}) is not None


def test_the_key_follows_what_settings_depend_on() -> None:
    invocation = parse_invocation(["ingest", "notes"], {})
    assert invocation is not None
    env = {"CHROMASYNC_COLLECTION": "a", "PATH": "/bin", "HOME": "/root"}
    key = invocation.key(env, "/work")
    assert invocation.key(dict(env), "/work") == key
    assert invocation.key({**env, "CHROMASYNC_COLLECTION": "b"}, "/work") != key
    assert invocation.key({**env, "HOME": "/home/x"}, "/work") != key
    assert invocation.key(env, "/elsewhere") != key
    other = parse_invocation(["ingest", "notes", "--json"], {})
    assert other is not None and other.key(env, "/work") != key
    # not settings: unrelated variables, the switches
    for extra in (
        {"PATH": "/usr/bin"},
        {"CHROMASYNC_NO_FASTPATH": ""},
        {"CHROMASYNC_NO_DAEMON": "1"},
    ):
        assert invocation.key({**env, **extra}, "/work") == key
    # a secret counts (one key scheme for every fast path) by its digest only
    for extra in ({"CHROMASYNC_CHROMA_TOKEN": "s3cret"}, {"CHROMASYNC_EMBEDDING_API_KEY": "k"}):
        assert invocation.key({**env, **extra}, "/work") != key


def test_the_key_covers_the_config_file_it_reads(tmp_path: Path) -> None:
    """An edited chromasync.yaml makes another key (the snapshot of the old file is not
    even looked at), wherever the file comes from: the folder, --config or the environment."""
    cwd = str(tmp_path)
    config = tmp_path / "chromasync.yaml"

    def key(argv: list[str], env: dict[str, str]) -> str:
        invocation = parse_invocation(argv, env)
        assert invocation is not None
        return invocation.key(env, cwd)

    absent = key(["ingest", "notes"], {})
    config.write_text("version: 1\nstore: {collection: a}\n")
    first = key(["ingest", "notes"], {})
    config.write_text("version: 1\nstore: {collection: b}\n")
    assert len({absent, first, key(["ingest", "notes"], {})}) == 3
    named = tmp_path / "other.yaml"
    named.write_text("version: 1\n")
    by_flag = key(["ingest", "notes", "--config", str(named)], {})
    by_env = key(["ingest", "notes"], {"CHROMASYNC_CONFIG": str(named)})
    named.write_text("version: 1\nstore: {data_dir: elsewhere}\n")
    assert key(["ingest", "notes", "--config", str(named)], {}) != by_flag
    assert key(["ingest", "notes"], {"CHROMASYNC_CONFIG": str(named)}) != by_env


def test_the_data_dir_guess(tmp_path: Path) -> None:
    invocation = parse_invocation(["ingest", "notes", "--data-dir", "flagged"], {})
    assert invocation is not None
    cwd = str(tmp_path)
    assert invocation.data_dir({}, cwd) == str(tmp_path / "flagged")
    plain = parse_invocation(["ingest", "notes"], {})
    assert plain is not None
    assert plain.data_dir({"CHROMASYNC_DATA_DIR": "/d"}, cwd) == "/d"
    assert plain.data_dir({}, cwd) == str(tmp_path / ".chromasync")
    (tmp_path / "chromasync.yaml").write_text("version: 1\nsources: []\n")
    assert plain.data_dir({}, cwd) == str(tmp_path / ".chromasync")
    project = tmp_path / "project"
    project.mkdir()
    (project / "cfg.yaml").write_text("version: 1\nstore: {data_dir: state, collection: x}\n")
    named = {"CHROMASYNC_CONFIG": str(project / "cfg.yaml")}
    assert plain.data_dir(named, cwd) == str(project.resolve() / "state")
    assert plain.data_dir({"CHROMASYNC_CONFIG": "missing.yaml"}, cwd) is None


def test_the_fast_path_locks_the_file_the_store_lock_creates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a `StoreLock` holds the data dir, the fast path stops before reading any
    snapshot; once it is released, the fast path takes the same file's lock itself (a name
    that disagreed would find no lock file, and never get as far as the snapshot)."""
    data_dir = tmp_path / "data"
    argv = ["ingest", str(tmp_path), "--json", "--data-dir", str(data_dir)]
    replayed: list[str] = []
    monkeypatch.setattr(fastpath, "_replay", lambda path, *_: replayed.append(path))
    with lock.StoreLock(data_dir):
        assert fastpath.quick_ingest(argv, {}) is None
        assert replayed == []
    assert fastpath.quick_ingest(argv, {}) is None  # no snapshot: the CLI takes over
    assert len(replayed) == 1 and replayed[0].startswith(str(data_dir))


def _tricky_tree(root: Path) -> None:
    (root / "docs" / "deep" / "deeper").mkdir(parents=True)
    (root / "build" / "out").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: main\n")
    (root / ".gitignore").write_text("build/\n*.tmp\n")
    (root / "docs" / ".gitignore").write_text("private/\n")
    (root / "docs" / "private").mkdir()
    (root / "docs" / "private" / "secret.md").write_text("# no\n")
    (root / "a.md").write_text("# A\n")
    (root / "b.tmp").write_text("scratch\n")
    (root / "picture.png").write_bytes(b"\x89PNG\r\n")
    (root / ".hidden.md").write_text("# hidden\n")
    (root / "docs" / "deep" / "deeper" / "c.py").write_text("def f():\n    return 1\n")
    (root / "docs" / "z.txt").write_text("zzz\n")
    (root / "build" / "out" / "gen.md").write_text("# generated\n")
    (root / "empty").mkdir()
    os.symlink("a.md", root / "link-inside.md")
    os.symlink("/etc/hostname", root / "link-outside.md")
    os.symlink("missing.md", root / "link-broken.md")
    os.symlink(".", root / "docs" / "loop")
    os.mkfifo(root / "pipe.md")
    (root / os.fsdecode(b"bad-\xff-name.md")).write_text("# bytes\n")


@pytest.mark.parametrize(
    "spec_fields",
    [{}, {"use_gitignore": False}, {"subdirs": ("docs", "build")}, {"exclude": ("docs/deep/",)}],
)
def test_the_fast_walk_lists_what_discovery_recorded(
    tmp_path: Path, spec_fields: dict[str, object]
) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    _tricky_tree(root)
    spec = SourceSpec(label="t", root=root, **spec_fields)  # type: ignore[arg-type]
    seen = discover_source(spec, listing=True)
    assert seen.listing is not None
    starts = spec.starts
    fast = tree_listing(str(root), starts, frozenset(seen.pruned_dirs), spec.use_gitignore)
    assert fast == seen.listing
    if spec.use_gitignore and not spec.subdirs:
        assert set(seen.pruned_dirs) >= {"build", "docs/private"}
    # a change anywhere discovery looks shows; one where it does not look does not
    (root / "build" / "out" / "more.md").write_text("ignored folder\n")
    again = tree_listing(str(root), starts, frozenset(seen.pruned_dirs), spec.use_gitignore)
    assert (again == seen.listing) is ("build" in seen.pruned_dirs)
    (root / "docs" / "z.txt").write_text("zzy\n")  # same size
    assert tree_listing(str(root), starts, frozenset(seen.pruned_dirs), True) != seen.listing


def test_a_same_size_rewrite_with_its_mtime_put_back_still_shows(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    note = root / "n.md"
    note.write_text("# one\n")
    os.utime(note, ns=(1_600_000_000 * 10**9,) * 2)
    before = tree_listing(str(root), [""], frozenset(), True)
    note.write_text("# two\n")
    os.utime(note, ns=(1_600_000_000 * 10**9,) * 2)  # size and mtime as before: ctime moved
    assert tree_listing(str(root), [""], frozenset(), True) != before


def test_an_unreadable_start_gives_no_listing(tmp_path: Path) -> None:
    spec = SourceSpec(label="t", root=tmp_path, subdirs=("nowhere",))
    assert discover_source(spec, listing=True).listing is None
    assert tree_listing(str(tmp_path), ["nowhere"], frozenset(), True) is None


def test_plain_lines_with_a_total() -> None:
    rows = [
        {
            "collection": "c",
            "source": f"s{i}\x1b[31m",
            "files_seen": 3,
            "files_new": i,
            "files_updated": 0,
            "files_unchanged": 3 - i,
            "files_deleted": 0,
            "files_skipped": {"binary": 1},
            "chunks_total": 7,
            "chunks_embedded": 2,
            "chunks_reused": 5,
            "chunks_deleted": 0,
            "duration_ms": 1500,
            "embed_ms": 500,
            "dry_run": False,
            "metadata_keys_dropped": 0,
        }
        for i in range(2)
    ]
    text = render_plain(rows)
    assert "\x1b" not in text and "s0\\x1b[31m -> c" in text
    assert "\ntotal\n  files   6 seen: 1 new, 0 updated, 5 unchanged" in text
    assert "  time    3.00 s: embedding 1.00 s, the rest 2.00 s\n  skipped binary 2\n" in text


def test_a_terminal_still_gets_the_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from chromasync.cli.ingest import _print_summaries
    from chromasync.records import IngestSummary

    monkeypatch.setenv("COLUMNS", "250")
    _print_summaries(
        [
            IngestSummary(collection="c", source="a", files_seen=2, files_skipped={"binary": 1}),
            IngestSummary(collection="c", source="b", files_seen=3),
        ]
    )
    out = capsys.readouterr().out
    assert "embed time" in out and "total" in out and "skipped by reason: binary: 1" in out


#: Config files and whether the console script's reading of `data_dir` must be sure of them
#: (True) or may leave them to the CLI (False: None).
CONFIGS = [
    ("version: 1\nstore:\n  data_dir: state\n", True),
    ("version: 1\nstore:\n    collection: x\n    data_dir: 'my dir'  # here\n", True),
    ("version: 1\nstore: {collection: x, data_dir: ../elsewhere}\n", True),
    ("version: 1\nstore: {data_dir: state, collection: x}\n", True),
    ('version: 1\nstore:\n  data_dir: "quoted dir"\n', True),
    ("version: 1\nstore:\n  data_dir: a#b # c\n", True),
    ("version: 1\r\nstore:\r\n  data_dir: crlf\r\n", True),
    ("---\nversion: 1\nstore:\n  data_dir: /abs/dir\n", True),
    ("version: 1\nstore:\n  data_dir: d\nembedding:\n  provider: hash\n", True),
    ("version: 1\nserver:\n  data_dir: srv\n", True),
    ("version: 1\n# data_dir: nowhere\nstore: {collection: x}\n", False),
    ("version: 1\nstore:\n  data_dir: null\n", False),
    ("version: 1\nstore:\n  data_dir: 12\n", False),
    ("version: 1\nx: &a state\nstore:\n  data_dir: *a\n", False),
    ("version: 1\nstore:\n  data_dir: |\n    block\n", False),
    ("version: 1\nstore:\n  data_dir: 'it''s'\n", False),
    ('version: 1\nstore:\n  data_dir: "esc\\tape"\n', False),
    ('version: 1\nstore: {collection: "a,b", data_dir: x}\n', False),
    ("version: 1\nsources:\n  - {path: docs, metadata: {data_dir: x}}\n", False),
    ("version: 1\nstore:\n  data_dir: a\n  collection: data_dir\n", False),
]


@pytest.mark.parametrize(("text", "sure"), CONFIGS)
def test_the_data_dir_read_without_the_loader_is_the_loaders_or_none(
    tmp_path: Path, text: str, sure: bool
) -> None:
    """The console script reads a config file's `data_dir` by hand (no YAML parser: its
    import costs more than the search): what it finds is what the full loader resolves,
    through a symlinked folder too, or None (the CLI then resolves it)."""
    from chromasync.config.sources import configure
    from chromasync.datadir import config_bytes, guess_from
    from chromasync.errors import ConfigError

    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    (real / "chromasync.yaml").write_text(text, newline="")
    cwd = str(tmp_path / "link")
    guess = guess_from({}, {}, cwd, config_bytes(None, {}, cwd))
    try:
        expected = os.path.join(cwd, configure({}, {}, cwd, active_model=False).data_dir)
    except ConfigError:
        assert guess is None or not sure
        return
    assert guess == (expected if sure else None)


@pytest.mark.parametrize(
    ("text", "sure"),
    [
        ('version = 1\n[store]\ndata_dir = "state"\n', True),
        ("version = 1\n[store]\ncollection = 'x'\ndata_dir = 'lit dir'\n", True),
        ('version = 1\n[sources]\ndata_dir = "x"\n', False),
        ('version = 1\n[store]\ndata_dir = """x"""\n', False),
    ],
)
def test_a_toml_config_and_a_linked_config_file_read_as_the_loader_does(
    tmp_path: Path, text: str, sure: bool
) -> None:
    """`--config` names a TOML file, itself a link into another folder: paths in it are
    relative to the folder it is named in, as the loader reads them."""
    from chromasync.config.sources import configure
    from chromasync.datadir import config_bytes, guess_from
    from chromasync.errors import ConfigError

    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "cfg.toml").write_text(text)
    (tmp_path / "cfg.toml").symlink_to(tmp_path / "other" / "cfg.toml")
    cwd = str(tmp_path)
    guess = guess_from({"--config": "cfg.toml"}, {}, cwd, config_bytes("cfg.toml", {}, cwd))
    try:
        settings = configure({}, {}, cwd, config="cfg.toml", active_model=False)
    except ConfigError:
        assert guess is None or not sure
        return
    assert guess == (str(settings.data_dir) if sure else None)


def test_a_stamp_is_written_over_the_last_in_place(tmp_path: Path) -> None:
    """Each answered run rewrites its `.ran` stamp in place (no truncation to empty, which
    ext4 pays for with a flush): a shorter report leaves nothing of the longer one, 0600."""
    from chromasync.state.snapshots import stamp

    path = str(tmp_path / "key")
    stamp(path, '[{"duration_ms": 12345}]')
    stamp(path, '[{"duration_ms": 7}]')
    ran = tmp_path / "key.ran"
    assert ran.read_text() == '[{"duration_ms": 7}]'
    assert ran.stat().st_mode & 0o777 == 0o600
