"""The search daemon's pure parts (`owner.daemon`, `fastsearch`): its idle clock, the keys
it accepts, its settings key, the switches, and which command lines its client sends."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from chromasync.config.parsed import ConfigFile
from chromasync.config.settings import Settings
from chromasync.fastsearch import daemon_key, parse_daemon_search
from chromasync.owner.daemon import (
    IDLE_TIMEOUT,
    Activity,
    KeyRing,
    daemon_off,
    idle_timeout,
    settings_key,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_idle_time_counts_from_the_last_request_and_not_while_one_runs() -> None:
    clock = Clock()
    activity = Activity(clock)
    clock.now += 5
    assert activity.idle_for() == 5
    activity.begin()
    clock.now += 50
    assert activity.idle_for() == 0  # a slow request in flight is not idleness
    activity.end()
    clock.now += 2
    assert activity.idle_for() == 2
    activity.restart()  # once it listens
    assert activity.idle_for() == 0


def test_the_key_ring_is_bounded_and_keeps_the_newest() -> None:
    ring = KeyRing(limit=3)
    for key in "abcd":
        ring.add(key)
    assert "a" not in ring and all(k in ring for k in "bcd")
    ring.add("b")  # used again: newest
    ring.add("e")
    assert "c" not in ring and all(k in ring for k in "bde")


def test_switches_read_the_environment() -> None:
    assert not daemon_off({}) and not daemon_off({"CHROMASYNC_NO_DAEMON": ""})
    assert not daemon_off({"CHROMASYNC_NO_DAEMON": "0"})
    assert daemon_off({"CHROMASYNC_NO_DAEMON": "1"}) and daemon_off({"CHROMASYNC_NO_DAEMON": "yes"})
    assert idle_timeout({}) == IDLE_TIMEOUT
    assert idle_timeout({"CHROMASYNC_DAEMON_IDLE": "30"}) == 30
    assert idle_timeout({"CHROMASYNC_DAEMON_IDLE": "soon"}) == IDLE_TIMEOUT
    assert idle_timeout({"CHROMASYNC_DAEMON_IDLE": "-5"}) == 0.2


def test_settings_key_changes_with_any_setting_secret_or_config_file_but_not_the_chat_model(
    tmp_path: Path,
) -> None:
    base = Settings(data_dir=tmp_path)
    key = settings_key(base)
    assert settings_key(Settings(data_dir=tmp_path)) == key
    assert settings_key(dataclasses.replace(base, provider="hash")) != key
    assert settings_key(dataclasses.replace(base, chroma_token="s3cret")) != key
    assert "s3cret" not in key
    config = ConfigFile(path=tmp_path / "chromasync.yaml", found_by="--config")
    with_file = dataclasses.replace(base, config_file=config)
    other = dataclasses.replace(
        base, config_file=dataclasses.replace(config, inputs=(("x.yaml", b"a: 1"),))
    )
    assert settings_key(with_file) != settings_key(other)
    assert settings_key(dataclasses.replace(base, llm_model="llama")) == key  # ask's own


def test_the_client_sends_search_lines_it_can_render_and_leaves_the_rest_to_the_cli() -> None:
    line = parse_daemon_search(
        ["search", "grinder", "--k", "3", "--tag", "a", "--tag=b", "--data-dir", "d", "--json"]
    )
    assert line is not None and line.query == "grinder"
    assert line.params == [("k", "3"), ("tag", "a"), ("tag", "b")]
    assert line.store == [("--data-dir", "d")] and line.output == {"--json"}
    for argv in (
        ["search"],
        ["search", "  "],
        ["search", "a", "b"],
        ["search", "a", "--help"],
        ["search", "a", "--rerank", "model"],
        ["search", "a", "--no-daemon"],
        ["search", "a", "--files", "--json"],
        ["search", "a", "--k"],
        ["ingest", "a"],
    ):
        assert parse_daemon_search(argv) is None, argv


def test_the_line_key_depends_on_store_options_folder_environment_and_config(
    tmp_path: Path,
) -> None:
    def key(argv: list[str], env: dict[str, str], cwd: str = "/w") -> str:
        line = parse_daemon_search(["search", "q", *argv])
        assert line is not None
        return daemon_key(line, env, cwd)

    env = {"CHROMASYNC_DATA_DIR": "d", "HOME": "/h", "PATH": "/bin"}
    base = key(["--provider", "hash"], env)
    assert key(["--provider", "hash"], {**env, "PATH": "/usr/bin"}) == base
    assert key(["--provider", "hash"], {**env, "CHROMASYNC_NO_DAEMON": ""}) == base
    assert key(["--provider", "hash", "--k", "3", "--json"], env) == base  # the request's
    assert key(["--provider", "local"], env) != base
    assert key(["--provider", "hash"], env, "/elsewhere") != base
    assert key(["--provider", "hash"], {**env, "CHROMASYNC_X": "1"}) != base
    secret = key(["--provider", "hash"], {**env, "CHROMASYNC_CHROMA_TOKEN": "s3cret"})
    assert secret != base and "s3cret" not in secret
    # a changed config file (another collection, a moved data dir) is another daemon's key
    cwd = str(tmp_path)
    before = key([], {}, cwd)
    (tmp_path / "chromasync.yaml").write_text("version: 1\nstore: {collection: other}\n")
    moved = key([], {}, cwd)
    (tmp_path / "chromasync.yaml").write_text("version: 1\nstore: {data_dir: elsewhere}\n")
    assert len({before, moved, key([], {}, cwd)}) == 3
