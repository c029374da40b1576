"""The search daemon's life (`owner.daemon`, `cli.daemon`): real processes, real Chroma.

`search` starts it when no owner runs and talks to it; the console script's stdlib client
sends it the command line, which the daemon runs with the CLI itself when its settings are
the daemon's, so the client imports neither chromadb, click nor the model; it leaves
when idle, when asked, or when a writer needs the lock; a SIGKILL loses nothing; two
clients at once leave one daemon; `serve` owning the data dir is used, not replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chromasync.owner.locate import read_owner
from chromasync.state.lock import lock_holder

from ..conftest import REPO, run_cli

pytestmark = pytest.mark.skipif(bool(os.environ.get("CHROMASYNC_TEST_CHROMA_URL")), reason="")

HEAVY = ("chromadb", "onnxruntime", "click", "rich", "pydantic", "yaml", "numpy", "httpx")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "CHROMASYNC_DATA_DIR": str(tmp_path / "data"),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_COLLECTIONS": "shared",
        "CHROMASYNC_NO_DAEMON": "",  # this file is about the daemon
        "CHROMASYNC_DAEMON_IDLE": "120",
    }


@pytest.fixture
def indexed(tmp_path: Path, env: dict[str, str]) -> Iterator[Path]:
    notes = tmp_path / "notes"
    shutil.copytree(REPO / "examples" / "notes", notes)
    done = run_cli(["ingest", str(notes)], env=env)
    assert done.returncode == 0, done.stderr
    yield notes
    _stop(env)  # never leave a daemon behind


def _stop(env: dict[str, str]) -> None:
    run_cli(["daemon", "stop"], env=env)
    _wait_free(Path(env["CHROMASYNC_DATA_DIR"]))


def _wait_free(data_dir: Path, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lock_holder(data_dir) is None:
            return True
        time.sleep(0.05)
    return False


def _daemon_pid(env: dict[str, str]) -> int | None:
    data_dir = Path(env["CHROMASYNC_DATA_DIR"])
    info = read_owner(data_dir)
    holder = lock_holder(data_dir)
    if info is None or info.role != "daemon" or holder is None:
        return None
    return info.pid if holder.startswith(f"pid {info.pid}:") else None


def _search(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = run_cli(["search", *args], env=env)
    assert done.returncode == 0, done.stderr
    return done


PROBE = r"""
import json, sys
imported = []
sys.addaudithook(lambda event, args: imported.append(args[0]) if event == "import" else None)
sys.argv = ["chromasync", *json.loads(sys.argv[1])]
from chromasync.fastpath import main
try:
    code = main()
except SystemExit as exc:  # the CLI ran it (and exits)
    code = f"cli {exc.code}"
print(json.dumps({"code": code, "modules": sorted(sys.modules), "imported": imported}),
      file=sys.stderr)
"""


def _probe(env: dict[str, str], args: list[str]) -> tuple[dict[str, object], str, set[str]]:
    """Run the console script's entry with an import audit: (report, stdout, modules)."""
    full = {**os.environ, **env, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    loaded = set(report["modules"]) | set(report["imported"])
    return report, done.stdout, loaded


def test_search_starts_a_daemon_that_answers_the_next_call_without_heavy_imports(
    indexed: Path, env: dict[str, str]
) -> None:
    first = _search(env, "calibrate the grinder", "--json")
    assert "starting the search daemon" in first.stderr
    pid = _daemon_pid(env)
    assert pid is not None
    status = run_cli(["daemon", "status", "--json"], env=env)
    assert status.returncode == 0 and json.loads(status.stdout)["owner"]["pid"] == pid

    report, out, loaded = _probe(env, ["search", "calibrate the grinder", "--json"])
    assert report["code"] == 0  # answered by the daemon, not by the CLI
    alone_json = _search(env, "calibrate the grinder", "--json", "--no-daemon").stdout
    assert out == alone_json  # the in-process path's JSON, byte for byte
    assert json.loads(first.stdout) == json.loads(out)
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}
    assert "chromasync.api" not in loaded and "chromasync.cli.main" not in loaded

    # plain lines in a pipe, --files, --no-daemon: the same text by either path
    plain = _search(env, "calibrate the grinder").stdout
    _report, fast_plain, _loaded = _probe(env, ["search", "calibrate the grinder"])
    assert fast_plain == plain
    alone = _search(env, "calibrate the grinder", "--no-daemon").stdout
    assert alone == plain
    files = _search(env, "grinder", "--files").stdout.splitlines()
    assert files and files[0] == "guides/install.md" and len(set(files)) == len(files)
    assert _daemon_pid(env) == pid  # one daemon served all of it

    # `daemon stop` asks it through the lock, as a writer does: it leaves by itself
    stop = run_cli(["daemon", "stop"], env=env)
    assert stop.returncode == 0, stop.stderr
    assert stop.stdout.startswith("stopped `chromasync daemon`") and "killed" not in stop.stdout
    assert lock_holder(Path(env["CHROMASYNC_DATA_DIR"])) is None  # free once it says so
    deadline = time.monotonic() + 30
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)
    stop = run_cli(["daemon", "stop"], env=env)
    assert stop.returncode == 0 and stop.stdout.startswith("no daemon runs")


def test_a_path_with_a_newline_is_one_line_of_files_by_every_route(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """`search --files` escapes a newline as it escapes \\r and ESC (one path, one line);
    `-0`/`--null` prints each path raw, NUL-ended; in process, through the daemon, and through
    the console script's stdlib client alike."""
    notes = tmp_path / "odd"
    notes.mkdir()
    (notes / "new\nline.md").write_text("# Grinder\n\nCalibrate the grinder weekly.\n")
    (notes / "tab\tand\x1besc.md").write_text("# Grinder\n\nThe grinder burrs.\n")
    assert run_cli(["ingest", str(notes)], env=env).returncode == 0
    try:
        alone = _search(env, "grinder", "--files", "--no-daemon").stdout
        assert sorted(alone.splitlines()) == ["new\\nline.md", "tab\\tand\\x1besc.md"]
        assert _search(env, "grinder", "--files").stdout == alone  # starts the daemon
        _report, fast, _loaded = _probe(env, ["search", "grinder", "--files"])
        assert fast == alone
        raw = _search(env, "grinder", "-0", "--no-daemon").stdout
        assert sorted(raw.split("\0")) == ["", "new\nline.md", "tab\tand\x1besc.md"]
        assert _search(env, "grinder", "--null").stdout == raw
        report, fast_raw, _loaded = _probe(env, ["search", "grinder", "-0"])
        assert fast_raw == raw and report["code"] == 0
        assert run_cli(["search", "grinder", "-0", "--json"], env=env).returncode == 2
    finally:
        _stop(env)


def test_summarize_with_a_chat_model_calls_it_while_a_daemon_runs(
    indexed: Path, env: dict[str, str]
) -> None:
    """The daemon holds no chat settings: `summarize --llm-url` runs where they are honoured
    (in the command's process), and gets what it gets with no daemon."""
    from tests.chat_server import ChatServer, Reply

    _search(env, "grinder")  # starts the daemon
    pid = _daemon_pid(env)
    assert pid is not None
    with ChatServer() as server:
        server.default = Reply(content="A summary from the model.")
        flags = ["--group-by", "path:1", "--llm-url", server.url, "--llm-model", "test-chat"]
        done = run_cli(["summarize", *flags, "--json"], env=env)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["model_calls"] >= 1 and server.requests
        assert any(g["summary"] == "A summary from the model." for g in report["groups"])
    assert _daemon_pid(env) == pid  # the daemon was left alone


def _on_a_terminal(env: dict[str, str], args: list[str]) -> tuple[dict[str, object], bytes]:
    """`_probe` with stdout on a pseudo-terminal: (report, the bytes it drew)."""
    full = {**os.environ, **env, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "90"}
    full |= {"TERM": "xterm-256color"}
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        stdout=slave,
        stderr=subprocess.PIPE,
        env=full,
    )
    os.close(slave)
    drawn = b""
    with contextlib.suppress(OSError):  # EIO once the process has closed it
        while chunk := os.read(master, 1 << 16):
            drawn += chunk
    os.close(master)
    _out, err = proc.communicate(timeout=120)
    return json.loads(err.decode().strip().splitlines()[-1]), drawn


def test_a_terminal_gets_the_clis_own_colours_and_width_through_the_daemon(
    indexed: Path, env: dict[str, str]
) -> None:
    _search(env, "grinder")  # starts it
    report, drawn = _on_a_terminal(env, ["search", "calibrate the grinder"])
    assert report["code"] == 0  # the daemon drew it, for this terminal
    alone_report, alone = _on_a_terminal(env, ["search", "calibrate the grinder", "--no-daemon"])
    assert alone_report["code"] == "cli 0"
    assert b"\x1b[" in drawn and drawn == alone


def test_a_command_line_of_other_settings_goes_to_the_cli_which_replaces_the_daemon(
    indexed: Path, env: dict[str, str]
) -> None:
    _search(env, "grinder", "--json")
    first = _daemon_pid(env)
    other = {**env, "CHROMASYNC_CHUNK_MAX_TOKENS": "200"}  # other settings
    report, _out, loaded = _probe(other, ["search", "grinder", "--json"])
    assert report["code"] in ("cli 0", None)  # the daemon said "not mine": the CLI ran it
    assert "chromasync.cli.main" in loaded
    # the CLI saw other settings: it replaced the daemon with one of its own
    pid = _daemon_pid(other)
    assert pid is not None and pid != first
    report, _out, _loaded = _probe(other, ["search", "grinder", "--json"])
    assert report["code"] == 0


def test_the_daemon_runs_any_search_command_line_as_the_cli_prints_it(
    indexed: Path, env: dict[str, str]
) -> None:
    """Options the old client had no parameter for are the CLI's own in the daemon: the
    output is `--no-daemon`'s, byte for byte; what is no search of its settings (a usage
    error, `--no-daemon`) is left to the CLI, which says it as it would alone."""
    _search(env, "grinder")  # starts it
    for args in (["--explain"], ["--min-score", "0.1", "--json"], ["--k", "2", "--files"]):
        report, out, loaded = _probe(env, ["search", "grinder", *args])
        assert report["code"] == 0, args  # the daemon answered
        assert "chromasync.cli.main" not in loaded
        assert out == _search(env, "grinder", *args, "--no-daemon").stdout, args
    report, _out, loaded = _probe(env, ["search", "--k", "0", "grinder"])
    assert report["code"] == "cli 2" and "chromasync.cli.main" in loaded
    report, _out, loaded = _probe(env, ["search", "grinder", "--no-daemon"])
    assert report["code"] == "cli 0" and "chromasync.cli.main" in loaded


def test_idle_daemon_exits_and_the_next_search_starts_another(
    indexed: Path, env: dict[str, str]
) -> None:
    quick = {**env, "CHROMASYNC_DAEMON_IDLE": "0.5"}
    first = _search(quick, "grinder")
    # started (its pid is not read: under load the half-second idle may already be over)
    assert "starting the search daemon" in first.stderr
    assert _wait_free(Path(env["CHROMASYNC_DATA_DIR"]), timeout=60)
    assert read_owner(Path(env["CHROMASYNC_DATA_DIR"])) is None  # it cleaned up after itself
    again = _search(quick, "grinder")
    assert "starting the search daemon" in again.stderr  # a new one, not the old one


def test_sigkill_loses_nothing_and_a_stale_socket_is_replaced(
    indexed: Path, env: dict[str, str]
) -> None:
    before = _search(env, "grinder", "--json").stdout
    pid = _daemon_pid(env)
    assert pid is not None
    data_dir = Path(env["CHROMASYNC_DATA_DIR"])
    info = read_owner(data_dir)
    assert info is not None
    os.kill(pid, signal.SIGKILL)
    assert _wait_free(data_dir)
    assert Path(info.socket).exists() and (data_dir / "owner.json").exists()  # left behind

    report, _out, _loaded = _probe(env, ["search", "grinder", "--json"])
    after = _search(env, "grinder", "--json").stdout
    assert report["code"] in (0, "cli 0", None)
    assert json.loads(after) == json.loads(before)
    new = _daemon_pid(env)
    assert new is not None and new != pid
    again = run_cli(["ingest", str(indexed), "--json"], env=env)  # nothing lost, nothing to do
    assert again.returncode == 0, again.stderr
    [summary] = json.loads(again.stdout)  # one shape: a list, one row per source
    assert (summary["files_new"], summary["files_updated"], summary["files_deleted"]) == (0, 0, 0)
    assert summary["files_unchanged"] == 5


def test_a_query_in_flight_when_the_daemon_is_killed_is_answered_by_the_next_one(
    indexed: Path, env: dict[str, str]
) -> None:
    _search(env, "grinder")
    pid = _daemon_pid(env)
    assert pid is not None
    results: list[subprocess.CompletedProcess[str]] = []
    worker = threading.Thread(
        target=lambda: results.append(run_cli(["search", "espresso", "--json"], env=env))
    )
    worker.start()
    os.kill(pid, signal.SIGKILL)  # in flight or about to be: either way the search answers
    worker.join(timeout=300)
    assert results and results[0].returncode == 0, results[0].stderr if results else ""
    assert json.loads(results[0].stdout)["hits"]


def test_two_clients_at_once_leave_one_daemon(indexed: Path, env: dict[str, str]) -> None:
    full = {**os.environ, **env, "PYTHONPATH": str(REPO / "src")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "chromasync", "search", query, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=full,
        )
        for query in ("grinder", "sourdough")
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _out, err in outs]
    assert all(json.loads(out)["hits"] for out, _err in outs)
    pid = _daemon_pid(env)
    assert pid is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _daemons_of(env) != [pid]:
        time.sleep(0.1)  # a daemon that lost the race for the lock exits
    assert _daemons_of(env) == [pid]


def _daemons_of(env: dict[str, str]) -> list[int]:
    """The pids of `chromasync daemon run` processes started with this data dir."""
    mine = f"CHROMASYNC_DATA_DIR={env['CHROMASYNC_DATA_DIR']}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"daemon\0run" in cmdline and mine in environ.split(b"\0"):
            found.append(int(entry.name))
    return sorted(found)


def test_a_writer_makes_the_daemon_leave_and_keeps_the_fast_path(
    indexed: Path, env: dict[str, str]
) -> None:
    first = run_cli(["ingest", str(indexed), "--json"], env=env)  # records the snapshot
    assert first.returncode == 0
    _search(env, "grinder")
    assert _daemon_pid(env) is not None
    (indexed / "new.md").write_text("# New\n\nA fresh note about tamping.\n", encoding="utf-8")
    done = run_cli(["ingest", str(indexed), "--json"], env=env)
    assert done.returncode == 0, done.stderr
    assert "owned by" not in done.stderr  # it did not go through the reader
    assert _daemon_pid(env) is None
    hits = json.loads(_search(env, "tamping", "--json", "--mode", "keyword").stdout)["hits"]
    assert any(h["path"] == "new.md" for h in hits)  # a new daemon sees the write
    verify = run_cli(["verify"], env=env)
    assert verify.returncode == 0, verify.stderr


def test_serve_takes_over_from_the_daemon_and_searches_go_through_serve(
    indexed: Path, env: dict[str, str]
) -> None:
    _search(env, "grinder")
    pid = _daemon_pid(env)
    assert pid is not None
    full = {**os.environ, **env, "PYTHONPATH": str(REPO / "src")}
    serve = subprocess.Popen(
        [sys.executable, "-m", "chromasync", "serve", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=full,
    )
    try:
        data_dir = Path(env["CHROMASYNC_DATA_DIR"])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            info = read_owner(data_dir)
            if info is not None and info.role == "serve" and Path(info.socket).exists():
                break
            assert serve.poll() is None, serve.stderr.read() if serve.stderr else ""
            time.sleep(0.1)
        else:
            pytest.fail("serve did not take over")
        done = _search(env, "grinder", "--json")
        assert json.loads(done.stdout)["hits"]
        assert "starting the search daemon" not in done.stderr  # serve answered
        info = read_owner(data_dir)
        assert info is not None and info.role == "serve"
    finally:
        serve.send_signal(signal.SIGINT)
        serve.communicate(timeout=60)


def test_no_daemon_env_and_flag_keep_the_search_in_process(
    indexed: Path, env: dict[str, str]
) -> None:
    _search({**env, "CHROMASYNC_NO_DAEMON": "1"}, "grinder")
    assert _daemon_pid(env) is None
    _search(env, "grinder", "--no-daemon")
    assert _daemon_pid(env) is None
    stop = run_cli(["daemon", "status"], env=env)
    assert stop.returncode == 1 and "no daemon" in stop.stdout


CONNECTS = r"""
import json, sys
dialed = []
sys.addaudithook(
    lambda event, args: dialed.append(str(args[1])) if event == "socket.connect" else None
)
sys.argv = ["chromasync", *json.loads(sys.argv[1])]
from chromasync.cli.main import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "dialed": dialed}), file=sys.stderr)
"""


def test_no_daemon_never_touches_a_healthy_daemon_of_the_same_settings(
    indexed: Path, env: dict[str, str]
) -> None:
    """`--no-daemon` and `CHROMASYNC_NO_DAEMON=1` used to search through a daemon that
    answered with the same settings; now they never dial its socket, and it serves no one."""
    _search(env, "grinder")
    pid = _daemon_pid(env)
    info = read_owner(Path(env["CHROMASYNC_DATA_DIR"]))
    assert pid is not None and info is not None
    full = {**os.environ, **env, "PYTHONPATH": str(REPO / "src")}
    for argv, extra in (
        (["search", "grinder", "--json", "--no-daemon"], {}),
        (["search", "grinder", "--json"], {"CHROMASYNC_NO_DAEMON": "1"}),
        (["ask", "grinder", "--json", "--no-daemon"], {}),
    ):
        done = subprocess.run(
            [sys.executable, "-c", CONNECTS, json.dumps(argv)],
            capture_output=True,
            text=True,
            env={**full, **extra},
            timeout=120,
        )
        report = json.loads(done.stderr.strip().splitlines()[-1])
        assert report["code"] in (0, None), done.stderr
        assert info.socket not in report["dialed"], (argv, extra)
        assert json.loads(done.stdout)
    assert _daemon_pid(env) == pid  # still there, untouched


def test_no_daemon_starts_for_a_data_dir_with_nothing_indexed(
    tmp_path: Path, env: dict[str, str]
) -> None:
    empty = {**env, "CHROMASYNC_DATA_DIR": str(tmp_path / "typo")}
    done = run_cli(["search", "grinder"], env=empty)
    assert "starting the search daemon" not in done.stderr
    assert _daemon_pid(empty) is None


def _gone(pid: int) -> bool:
    """No such process, or a zombie (exited; in a container nobody may reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return stat.rpartition(b")")[2].split()[:1] == [b"Z"]


def test_a_frozen_daemon_never_holds_up_search_stop_or_ingest(
    indexed: Path, env: dict[str, str]
) -> None:
    """SIGSTOP: its socket accepts and never answers. `search` searches in its own process
    at once (it used to wait 180 s), `--no-daemon` too (60 s); an ingest ends the frozen
    reader (it held no work) instead of waiting 40 s and blaming an owner that "runs until
    stopped"; `daemon stop` says "stopped" only once the process is gone."""
    _search(env, "grinder")
    pid = _daemon_pid(env)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        for args in (["grinder", "--json"], ["grinder", "--json", "--no-daemon"]):
            began = time.monotonic()
            done = _search(env, *args)
            assert time.monotonic() - began < 30, args
            assert json.loads(done.stdout)["hits"], args
        began = time.monotonic()
        stop = run_cli(["daemon", "stop"], env=env)
        assert stop.returncode == 0, stop.stderr
        assert "stopped" in stop.stdout and "killed" in stop.stdout
        assert time.monotonic() - began < 30
        assert _daemon_pid(env) is None and _gone(pid)
    finally:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    _search(env, "grinder")
    second = _daemon_pid(env)
    assert second is not None
    os.kill(second, signal.SIGSTOP)
    try:
        (indexed / "frozen.md").write_text("# Frozen\n\nA note about descaling.\n")
        began = time.monotonic()
        done = run_cli(["ingest", str(indexed), "--json"], env=env)
        assert done.returncode == 0, done.stderr
        assert time.monotonic() - began < 30
        assert "runs until stopped" not in done.stderr
        assert _daemon_pid(env) is None
    finally:
        with contextlib.suppress(OSError):
            os.kill(second, signal.SIGKILL)


def test_a_changed_config_file_gets_a_fresh_daemon(
    indexed: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """The daemon answers for the config file it started with: after chromasync.yaml names
    another collection, the same command line is not answered from the old daemon."""
    work = tmp_path / "work"
    work.mkdir()
    config = work / "chromasync.yaml"
    config.write_text("version: 1\nstore: {collection: chromasync}\n")  # the default's
    plain = dict(env)
    first = run_cli(["search", "grinder", "--json"], env=plain, cwd=work)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["hits"]
    assert json.loads(run_cli(["search", "grinder", "--json"], env=plain, cwd=work).stdout)["hits"]
    config.write_text("version: 1\nstore: {collection: empty-one}\n")
    after = run_cli(["search", "grinder", "--json"], env=plain, cwd=work)
    body = json.loads(after.stdout) if after.returncode == 0 else {"hits": [], "collections": []}
    assert not body["hits"], "the old daemon answered for the old config"
    assert "chromasync" not in body.get("collections", [])


def test_a_changed_sources_file_gets_a_fresh_daemon(tmp_path: Path, env: dict[str, str]) -> None:
    """A command line's key names the config file's bytes, not those of the sources file it
    names; the daemon answered a registered line from the sources it started with (a source
    added with its own collection was not searched). Now it checks its settings' files."""
    work = tmp_path / "work"
    for name in ("a", "b"):
        (work / name).mkdir(parents=True)
        (work / name / f"{name}.md").write_text(f"# {name}\n\nThe grinder burrs of {name}.\n")
    (work / "chromasync.yaml").write_text("version: 1\nsources_file: content-sources.md\n")
    listed = work / "content-sources.md"
    entry_a = "  - path: ./a\n    label: a\n    include: true\n"
    entry_b = "  - path: ./b\n    label: b\n    collection: elsewhere\n    include: true\n"
    both = f"---\ncontent_sources:\n{entry_a}{entry_b}---\n# notes\n"
    listed.write_text(both)
    plain = {**env, "CHROMASYNC_DATA_DIR": str(tmp_path / "own")}
    try:
        assert run_cli(["ingest", "-q"], env=plain, cwd=work).returncode == 0
        listed.write_text(f"---\ncontent_sources:\n{entry_a}---\n# notes\n")
        for _ in range(2):  # the second through the console script's daemon client
            done = run_cli(["search", "grinder", "--files"], env=plain, cwd=work)
            assert done.returncode == 0, done.stderr
            assert done.stdout.split() == ["a.md"]
        listed.write_text(both)  # `elsewhere` is searched again
        done = run_cli(["search", "grinder", "--files"], env=plain, cwd=work)
        assert done.returncode == 0, done.stderr
        assert sorted(done.stdout.split()) == ["a.md", "b.md"], "the old daemon answered"
    finally:
        _stop(plain)


def test_sigterm_to_serve_exits_0_and_leaves_no_owner_files(
    indexed: Path, env: dict[str, str]
) -> None:
    full = {**os.environ, **env, "PYTHONPATH": str(REPO / "src")}
    data_dir = Path(env["CHROMASYNC_DATA_DIR"])
    serve = subprocess.Popen(
        [sys.executable, "-m", "chromasync", "serve", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=full,
    )
    try:
        deadline = time.monotonic() + 120
        info = None
        while time.monotonic() < deadline:
            info = read_owner(data_dir)
            if info is not None and info.role == "serve" and Path(info.socket).exists():
                break
            assert serve.poll() is None, serve.stderr.read() if serve.stderr else ""
            time.sleep(0.1)
        assert info is not None
        serve.send_signal(signal.SIGTERM)
        _out, err = serve.communicate(timeout=60)
        assert serve.returncode == 0, err
        assert "Traceback" not in err
        assert not (data_dir / "owner.json").exists()
        assert not Path(info.socket).exists()
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.communicate()


def _catches_sigint(pid: int) -> bool:
    """Python has set its SIGINT handler: the interpreter is up and runs the program."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next((line.split()[1] for line in status.splitlines() if line[:7] == "SigCgt:"), "0")
    return bool(int(caught, 16) & 1 << (signal.SIGINT - 1))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@pytest.mark.parametrize(
    ("args", "delays"),
    [
        (["serve", "--port", "0"], (0.2, 0.4, 0.7, 1.0, 1.5)),
        (["daemon", "run"], (0.2, 0.6)),
        (["watch"], (0.2, 0.6)),
    ],
)
def test_sigterm_at_any_moment_of_a_start_exits_0_and_leaves_no_owner_files(
    indexed: Path, env: dict[str, str], args: list[str], delays: tuple[float, ...]
) -> None:
    """SIGTERM in an import (0.2 s after the interpreter is up is in the CLI's imports)
    killed `serve` with the signal (exit -15); raised as a KeyboardInterrupt anywhere in a
    start it once left exit -2 (issue 40). The console script remembers it from its first
    line (`fastpath.hold_stop_signals`) until the service takes it (`rest.StopSignals`)."""
    full = {**os.environ, **env, "PYTHONPATH": str(REPO / "src")}
    data_dir = Path(env["CHROMASYNC_DATA_DIR"])
    for delay in delays:
        proc = subprocess.Popen(
            [sys.executable, "-m", "chromasync", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=full,
        )
        try:
            deadline = time.monotonic() + 30
            while not _catches_sigint(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(delay)
            proc.send_signal(signal.SIGTERM)
            _out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 0, (delay, err)
        assert "Traceback" not in err and "stopped" in err, (delay, err)
        assert not (data_dir / "owner.json").exists() and lock_holder(data_dir) is None
