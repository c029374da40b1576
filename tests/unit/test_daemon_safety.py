"""The search daemon's safety rules (`owner.dial`, `owner.daemon`, `owner.locate`), with real
processes and files but no daemon: the socket's folder is checked for owner and mode before
use, a secret never reaches the daemon's argv, its log is appended and rotated, and a frozen
daemon (SIGSTOP) is seen as such: never talked to, killed by `stop` and by a writer."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from chromasync import fastpath
from chromasync.datadir import DAEMON_LOG, READER_MARK, STATE_FILE
from chromasync.owner import daemon as daemons
from chromasync.owner import dial
from chromasync.owner.locate import find_owner, private_folder, socket_folder, socket_path
from chromasync.state.lock import StoreLock

# -- the socket's folder ------------------------------------------------------------------------


def test_the_fallback_folder_is_used_only_when_it_is_private_and_ours(tmp_path: Path) -> None:
    fixed = tmp_path / f"chromasync-{os.getuid()}"
    assert socket_folder(str(tmp_path)) == fixed  # made 0700 when absent
    assert private_folder(fixed) and (fixed.stat().st_mode & 0o777) == 0o700
    fixed.chmod(0o777)  # world-writable: another user could replace the socket
    other = socket_folder(str(tmp_path))
    assert other != fixed and private_folder(other)
    assert other.parent == tmp_path and other.name.startswith(fixed.name + "-")


@pytest.mark.parametrize("planted", ["file", "link", "foreign"])
def test_a_planted_fallback_folder_is_never_used(tmp_path: Path, planted: str) -> None:
    fixed = tmp_path / f"chromasync-{os.getuid()}"
    if planted == "file":
        fixed.write_text("not a folder")
    elif planted == "link":
        target = tmp_path / "elsewhere"
        target.mkdir(mode=0o700)
        fixed.symlink_to(target)
    else:
        if os.geteuid() != 0:
            pytest.skip("making a folder owned by another user needs root")
        fixed.mkdir(mode=0o700)
        os.chown(fixed, 65534, 65534)
    folder = socket_folder(str(tmp_path))
    assert folder != fixed and private_folder(folder)


def test_a_long_data_dir_gets_a_socket_in_a_private_folder_even_with_a_file_planted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve` computes this path when it starts: a file where the folder should be must not
    make it fail with a traceback."""
    import shutil
    import tempfile

    # a temporary folder of a usual length (pytest's tmp_path, under xdist, is long itself)
    short = Path(tempfile.mkdtemp(prefix="cs-"))
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(short))
        (short / f"chromasync-{os.getuid()}").write_text("planted")
        data_dir = tmp_path / ("d" * 120)
        data_dir.mkdir()
        path = socket_path(data_dir)
        assert private_folder(path.parent) and len(str(path)) < 108
    finally:
        shutil.rmtree(short)


def test_a_socket_is_talked_to_only_when_it_and_its_folder_are_ours(tmp_path: Path) -> None:
    folder = tmp_path / "sock"
    folder.mkdir(mode=0o700)
    path = folder / "s.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        assert dial.safe_socket(str(path))
        folder.chmod(0o777)  # anyone could have put it there
        assert not dial.safe_socket(str(path))
        folder.chmod(0o700)
        if os.geteuid() == 0:
            os.chown(path, 65534, 65534)
            assert not dial.safe_socket(str(path))
    (folder / "plain").write_text("x")
    assert not dial.safe_socket(str(folder / "plain"))  # not a socket
    assert not dial.safe_socket(str(folder / "missing"))


# -- the spawner ------------------------------------------------------------------------------


class FakePopen:
    """Records what a spawn would start, and dies at once."""

    calls: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, argv: list[str], **kwargs: Any) -> None:
        self.stdin = self
        self.written = b""
        FakePopen.calls.append({"argv": argv, "kwargs": kwargs, "popen": self})
        kwargs["stderr"].write(b"started\n")  # into the log

    def write(self, data: bytes) -> None:
        self.written += data

    def close(self) -> None:
        pass

    def poll(self) -> int:
        return 1


@pytest.fixture
def fake_popen(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    FakePopen.calls = []
    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    yield FakePopen.calls


def test_the_console_clients_daemon_gets_no_secret_in_its_argv(
    tmp_path: Path, fake_popen: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The stdlib client starts the daemon for a command line of `--data-dir`/`--config`
    only (its flags on stdin, the environment inherited); one with any other settings
    option (`--chroma-token`...) it leaves to the CLI, which starts the daemon of those."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / STATE_FILE).write_bytes(b"")
    (data_dir / "lock").write_bytes(b"")
    env = {"CHROMASYNC_CHROMA_TOKEN": "s3cret-t0ken", "CHROMASYNC_NO_FASTPATH": "1"}
    secret = ["search", "q", "--data-dir", str(data_dir), "--chroma-token", "s3cret-t0ken"]
    assert fastpath.daemon_search(secret, env) is None and not fake_popen
    argv = ["search", "q", "--data-dir", str(data_dir)]
    assert fastpath.daemon_search(argv, env) is None  # it died: the CLI runs the search
    [call] = fake_popen
    assert "s3cret-t0ken" not in " ".join(call["argv"])
    assert json.loads(call["popen"].written) == {"flags": {"data_dir": str(data_dir)}}
    assert "starting the search daemon" in capsys.readouterr().err


def test_the_full_clis_daemon_gets_its_flags_on_stdin(
    tmp_path: Path, fake_popen: list[dict[str, Any]]
) -> None:
    dial.spawn(str(tmp_path), {"chroma_token": "s3cret"})
    assert "s3cret" not in " ".join(fake_popen[0]["argv"])
    assert json.loads(fake_popen[0]["popen"].written) == {"flags": {"chroma_token": "s3cret"}}


def test_the_log_is_appended_by_each_start(
    tmp_path: Path, fake_popen: list[dict[str, Any]]
) -> None:
    (tmp_path / DAEMON_LOG).write_bytes(b"first start\n")
    (tmp_path / DAEMON_LOG).chmod(0o644)
    dial.spawn(str(tmp_path), {})
    assert fake_popen[0]["kwargs"]["stdout"] is fake_popen[0]["kwargs"]["stderr"]
    assert (tmp_path / DAEMON_LOG).read_bytes() == b"first start\nstarted\n"
    (tmp_path / DAEMON_LOG).unlink()
    dial.spawn(str(tmp_path), {})
    assert (tmp_path / DAEMON_LOG).stat().st_mode & 0o777 == 0o600


# -- a frozen daemon ----------------------------------------------------------------------------

READER = r"""
import fcntl, json, os, socket, sys, time
data_dir = sys.argv[1]
fd = os.open(os.path.join(data_dir, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, f"pid {os.getpid()}: {sys.argv[2]}chromasync daemon run\n".encode())
path = os.path.join(data_dir, "owner.sock")
server = socket.socket(socket.AF_UNIX)
server.bind(path)
server.listen(8)
with open(os.path.join(data_dir, "owner.json"), "w") as out:
    json.dump({"pid": os.getpid(), "role": "daemon", "socket": path}, out)
print("ready", flush=True)
time.sleep(600)
"""


@pytest.fixture
def frozen_daemon(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A stand-in daemon (owner.json, the lock as a reader, a listening socket), stopped."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    proc = subprocess.Popen(
        [sys.executable, "-c", READER, str(data_dir), READER_MARK],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    with proc.stdout:
        assert proc.stdout.readline().strip() == "ready"
    assert dial.daemon_pid(str(data_dir)) == proc.pid
    assert dial.daemon_socket(str(data_dir)) is not None  # alive: talked to
    proc.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while not dial.frozen(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    yield data_dir, proc
    proc.kill()
    proc.wait()


def test_a_frozen_daemon_is_not_talked_to(
    frozen_daemon: tuple[Path, subprocess.Popen[str]],
) -> None:
    data_dir, proc = frozen_daemon
    assert dial.frozen(proc.pid)
    assert dial.daemon_socket(str(data_dir)) is None  # the search runs in its own process
    info = find_owner(data_dir)
    assert info is not None and info.role == "daemon" and not daemons.answers(info)


def test_a_writer_is_not_kept_waiting_by_a_frozen_daemon(
    frozen_daemon: tuple[Path, subprocess.Popen[str]],
) -> None:
    data_dir, proc = frozen_daemon
    began = time.monotonic()
    assert dial.make_way(str(data_dir))
    with StoreLock(data_dir):
        pass
    assert time.monotonic() - began < 10
    assert proc.wait(timeout=10) == -signal.SIGKILL


def test_a_live_daemon_is_asked_through_the_lock_and_leaves(tmp_path: Path) -> None:
    """`make_way` (`daemon stop`, `ensure`, a writer) asks a live daemon through the lock's
    leave request, which it checks between requests: it leaves by itself, not killed."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    leaves = READER.replace("time.sleep(600)", WAITS_FOR_A_WRITER)
    proc = subprocess.Popen(
        [sys.executable, "-c", leaves, str(data_dir), READER_MARK],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    with proc.stdout:
        assert proc.stdout.readline().strip() == "ready"
    assert dial.daemon_pid(str(data_dir)) == proc.pid
    assert dial.make_way(str(data_dir))
    assert proc.wait(timeout=10) == 0  # it left: not killed
    assert dial.daemon_pid(str(data_dir)) is None
    with StoreLock(data_dir):
        pass
    assert not dial.make_way(str(data_dir))  # no daemon holds the lock: nothing to do


#: The daemon's idle thread, as `state.lock.someone_waits` reads the leave request.
WAITS_FOR_A_WRITER = """
while True:
    want = os.open(os.path.join(data_dir, "lock.want"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(want, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(0)
    os.close(want)
    time.sleep(0.02)
"""


def test_where_nothing_tells_a_frozen_daemon_the_deadline_ends_the_wait(
    frozen_daemon: tuple[Path, subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither /proc nor `ps`: the stopped daemon is taken for a live one, and the client's
    deadline (`REPLY_TIMEOUT`, here 0.5 s) ends the wait; the search then runs here."""
    data_dir, _ = frozen_daemon
    monkeypatch.setattr(dial, "PROC", str(data_dir / "no-proc"))
    found = dial.daemon_socket(str(data_dir))
    assert found is not None  # not told: talked to
    began = time.monotonic()
    assert dial.post(found, "/daemon/run", {"argv": ["search", "kites"]}, None, 0.5) is None
    assert time.monotonic() - began < 2.0
