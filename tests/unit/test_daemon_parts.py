"""The search daemon's pure parts (`owner.daemon`, `fastpath`): its idle clock, its
settings key, the switches, and which command lines its client sends."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chromasync.config.parsed import ConfigFile
from chromasync.config.settings import Settings
from chromasync.fastpath import _named, daemon_search
from chromasync.owner.daemon import exit_when_idle, settings_key
from chromasync.owner.dial import daemon_off


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_idle_time_counts_from_the_last_request_and_not_while_one_runs() -> None:
    """The daemon leaves `timeout` seconds after the last request, counted from when it
    listens, never while one is in flight, and at once when a writer waits."""
    clock = Clock()
    state = SimpleNamespace(total_requests=0, tasks=set())
    server = SimpleNamespace(should_exit=False, started=False, server_state=state)
    script = iter(
        [
            lambda: setattr(server, "started", True),  # a slow start is no idleness
            lambda: state.tasks.add("req"),
            *([lambda: None] * 20),  # 20 s in one request
            lambda: (state.tasks.clear(), setattr(state, "total_requests", 1)),
            *([lambda: None] * 20),
        ]
    )
    times: list[float] = []

    def sleep(_step: float) -> None:
        clock.now += 1
        next(script)()
        times.append(clock.now)

    exit_when_idle(server, 10.0, lambda: False, clock, sleep)
    assert server.should_exit and times[-1] == 100 + 1 + 1 + 20 + 1 + 10
    server.should_exit, left = False, []
    exit_when_idle(server, 10.0, lambda: not left.append(1), clock, sleep)
    assert server.should_exit and left == [1]


def test_switches_read_the_environment() -> None:
    assert not daemon_off({}) and not daemon_off({"CHROMASYNC_NO_DAEMON": ""})
    assert not daemon_off({"CHROMASYNC_NO_DAEMON": "0"})
    assert daemon_off({"CHROMASYNC_NO_DAEMON": "1"}) and daemon_off({"CHROMASYNC_NO_DAEMON": "yes"})


def test_the_idle_timeout_comes_from_its_flag_or_the_environment_within_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`daemon run --idle-timeout`, else CHROMASYNC_DAEMON_IDLE, else 600 s, kept within
    0.2 s..7 days; a value that is no number is a usage error."""
    import click

    from chromasync.cli.daemon import run
    from chromasync.cli.main import main

    # under the root's context, as the CLI makes it: click caches a command's help option
    # on the command, so a context without the root's `-h` would change its --help for good
    root = click.Context(main, info_name="chromasync", **main.context_settings)

    def idle(*args: str) -> object:
        return run.make_context("run", list(args), parent=root).params["idle_timeout"]

    monkeypatch.delenv("CHROMASYNC_DAEMON_IDLE", raising=False)
    assert idle() == 600 and idle("--idle-timeout", "30") == 30
    monkeypatch.setenv("CHROMASYNC_DAEMON_IDLE", "30")
    assert idle() == 30 and idle("--idle-timeout", "5") == 5
    monkeypatch.setenv("CHROMASYNC_DAEMON_IDLE", "-5")
    assert idle() == 0.2
    monkeypatch.setenv("CHROMASYNC_DAEMON_IDLE", "soon")
    with pytest.raises(click.BadParameter):
        idle()


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


@pytest.mark.parametrize("field", ["rerank_model", "model"])
def test_settings_key_changes_when_a_model_folder_is_replaced_in_place(
    tmp_path: Path, field: str
) -> None:
    """A reranker retrained into its folder after the daemon started was still scored with
    the old weights the daemon held (issue 40): the folder's files are keyed, as the
    config file's bytes are."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"old weights")
    settings = dataclasses.replace(Settings(data_dir=tmp_path), **{field: str(folder)})
    keys = (settings_key(settings), settings_key(settings, owner=True))
    assert (settings_key(settings), settings_key(settings, owner=True)) == keys
    (folder / "model.safetensors").write_bytes(b"new weights, longer")
    after = (settings_key(settings), settings_key(settings, owner=True))
    assert after[0] != keys[0] and after[1] != keys[1]


def test_the_client_finds_the_daemon_by_the_data_dir_and_config_given() -> None:
    named, names = _named(["search", "q", "--data-dir", "d", "--config=c.yaml", "--k", "3"])
    assert named == {"--data-dir": "d", "--config": "c.yaml"}
    assert {"--data-dir", "--config", "--k"} <= names
    assert _named(["search", "q", "--data-dir"])[0] == {}  # click says what is missing
    named, names = _named(["search", "--", "--data-dir", "d"])
    assert named == {} and "--data-dir" not in names  # a query, not an option


def test_the_client_leaves_to_the_cli_what_no_daemon_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No daemon for the data dir, `--no-daemon`, `CHROMASYNC_NO_DAEMON`, another command:
    the client answers nothing (None) and the CLI runs the command."""
    monkeypatch.chdir(tmp_path)
    env = {"CHROMASYNC_DATA_DIR": str(tmp_path / "data")}
    assert daemon_search(["search", "q"], env) is None  # none runs
    assert daemon_search(["search", "q", "--no-daemon"], env) is None
    assert daemon_search(["search", "q"], {**env, "CHROMASYNC_NO_DAEMON": "1"}) is None
    assert daemon_search(["ingest", "."], env) is None
    assert not (tmp_path / "data").exists()  # nothing started, nothing written


def _broken_import(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Importing `name` fails as a half-imported numpy makes it fail (installed, not
    missing: an `ImportError` that is no `ModuleNotFoundError`)."""
    import builtins

    real = builtins.__import__

    def fake(module: str, *args: Any, **kwargs: Any) -> Any:
        if module.split(".")[0] == name:
            raise ImportError(
                "cannot import name 'NDArray' from partially initialized module 'numpy._typing'"
            )
        return real(module, *args, **kwargs)

    monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(builtins, "__import__", fake)


def test_a_package_that_fails_to_import_is_not_reported_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from chromasync.embed import runtime
    from chromasync.errors import ChromasyncError, not_installed
    from chromasync.store.connect import open_store
    from chromasync.store.target import StoreConfig

    assert not_installed(ModuleNotFoundError("x", name="chromadb.api"), "chromadb")
    assert not not_installed(ModuleNotFoundError("x", name="numpy"), "chromadb")
    assert not not_installed(ImportError("partially initialized", name="chromadb"), "chromadb")
    for name, call in (
        ("chromadb", lambda: open_store(StoreConfig(data_dir=tmp_path))),
        ("onnxruntime", runtime.onnx_providers),
    ):
        with monkeypatch.context() as patch:
            _broken_import(patch, name)
            with pytest.raises(ChromasyncError) as failed:
                call()
        said = str(failed.value)
        assert "not installed" not in said and "partially initialized" in said, said
        assert f"{name} is installed but failed to import" in said


DAEMON_PROBE = r"""
import sys, threading
seen = []
start = threading.Thread.start
def noting(self):
    seen.append((getattr(self, "_target", None).__name__ if getattr(self, "_target", None) else
                 self.name, "numpy" in sys.modules, "chromadb" in sys.modules))
    return start(self)
threading.Thread.start = noting
from chromasync.cli.main import main
try:
    main(["daemon", "run", "--idle-timeout", "0.2"])
except SystemExit:
    pass
print(seen, file=sys.stderr)
"""


def test_the_daemon_imports_the_store_and_numpy_before_any_thread_runs(tmp_path: Path) -> None:
    """Two threads importing numpy at once fail ("partially initialized module"): the daemon
    imports them once, in its main thread, before its warm-up and its first request."""
    import ast
    import subprocess

    from ..conftest import REPO

    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "CHROMASYNC_DATA_DIR": str(tmp_path / "data"),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_NO_DAEMON": "",
    }
    done = subprocess.run(
        [sys.executable, "-c", DAEMON_PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    seen = ast.literal_eval(done.stderr.strip().splitlines()[-1])
    warm = [s for s in seen if s[0] == "_warm"]
    assert warm, done.stderr
    assert all(numpy and chromadb for _name, numpy, chromadb in seen), seen


@given(
    st.lists(
        st.text(
            alphabet=st.characters(blacklist_categories=("Cs",))
            | st.sampled_from([chr(c) for c in range(0xDC80, 0xDD00)])  # undecodable argv bytes
        ),
        max_size=5,
    ),
    st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=4),
)
def test_the_clients_json_is_what_json_reads(argv: list[str], env: dict[str, str]) -> None:
    """The stdlib client writes its request without the json module (`dial.json_text`):
    what it writes reads back as the very values, undecodable bytes of a command line too."""
    import json

    from chromasync.owner.dial import json_text

    body = {"argv": argv, "cwd": "/x", "env": env, "tty": [True, False], "n": None, "k": 1.5}
    assert json.loads(json_text(body)) == body
