"""Without the offline weights (`chromasync[local-weights]`), the default model is fetched
the way Chroma fetches it: its archive, once, into Chroma's folder, with progress, its
SHA-256 checked. A real loopback HTTP server stands in for Chroma's bucket, serving an
archive in Chroma's layout (made from the session's model); the download code is the real
one. Where neither the weights nor a download work, the error names the extra."""

from __future__ import annotations

import hashlib
import io
import logging
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from chromasync.embed import local, shared, tokens
from chromasync.embed.local import LocalEmbedder
from chromasync.errors import EmbeddingError

from ..conftest import REPO
from ..servers import StallingServer

TEXTS = ["How do I calibrate the grinder?", "Sourdough starter feeding"]


class _Files(SimpleHTTPRequestHandler):
    paths: list[str]

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.paths.append(self.path)
        super().do_GET()


@pytest.fixture
def bucket(tmp_path: Path) -> Iterator[tuple[str, list[str], Path]]:
    """(base URL, requested paths, served folder) of a loopback file server."""
    served = tmp_path / "bucket"
    served.mkdir()
    paths: list[str] = []
    handler = type("Files", (_Files,), {"paths": paths})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", paths, served
    finally:
        server.shutdown()
        server.server_close()


def _without_weights(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A machine without the extra, and an empty Chroma folder; that folder."""
    monkeypatch.setattr(tokens, "weights_dir", lambda: None)
    monkeypatch.setattr(local, "weights_dir", lambda: None)
    root = tmp_path / "home" / ".cache" / "chroma" / "onnx_models"
    monkeypatch.setenv("CHROMASYNC_CHROMA_MODELS", str(root))
    return root / shared.MODEL_NAME / "onnx"


@pytest.fixture
def no_weights(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return _without_weights(monkeypatch, tmp_path)


def _archive(served: Path, source: Path) -> str:
    """Chroma's archive (`onnx/<six files>`) of `source` in `served`; its SHA-256."""
    path = served / shared.ARCHIVE
    with tarfile.open(path, "w:gz") as tar:
        for name in shared.FILES:
            tar.add(source / name, arcname=f"onnx/{name}")
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.model
def test_the_first_run_downloads_chromas_model_once(
    bucket: tuple[str, list[str], Path],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    reference = LocalEmbedder(cache_dir=tmp_path / "ref", variant="fp32")  # the session's
    expected = reference.embed_documents(TEXTS)
    url, paths, served = bucket
    sha = _archive(served, reference.onnx_path().parent)
    folder = _without_weights(monkeypatch, tmp_path)
    monkeypatch.setenv("CHROMASYNC_MODEL_URL", f"{url}/{shared.ARCHIVE}")
    monkeypatch.setenv("CHROMASYNC_MODEL_SHA256", sha)
    caplog.set_level(logging.WARNING)

    fresh = LocalEmbedder(cache_dir=tmp_path / "cache", variant="fp32")
    assert fresh.max_tokens == 254 and fresh.dimension == 384  # no download for these
    assert paths == []
    got = fresh.embed_documents(TEXTS)
    assert paths == [f"/{shared.ARCHIVE}"]
    assert shared.is_whole(folder) and (folder.parent / shared.ARCHIVE).is_file()
    assert got == expected
    said = caplog.text
    assert "downloading Chroma's default model" in said and "100%" in said
    assert "local-weights" in said  # how to stay offline instead
    again = LocalEmbedder(cache_dir=tmp_path / "cache")  # auto: int8 without torch weights
    assert again.variant == "int8"
    assert tokens.default_token_meter().count("grinder") > 0
    assert paths == [f"/{shared.ARCHIVE}"]  # once


def test_a_wrong_archive_installs_nothing(
    bucket: tuple[str, list[str], Path], no_weights: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _, served = bucket
    (served / shared.ARCHIVE).write_bytes(b"not Chroma's archive")
    monkeypatch.setenv("CHROMASYNC_MODEL_URL", f"{url}/{shared.ARCHIVE}")
    with pytest.raises(EmbeddingError, match="expected SHA-256"):
        LocalEmbedder().tokenizer_path  # noqa: B018 - the tokenizer needs the model's files
    assert not no_weights.exists() and not (no_weights.parent / shared.ARCHIVE).exists()


def test_no_weights_and_no_download_names_the_extra(
    bucket: tuple[str, list[str], Path], no_weights: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, paths, _ = bucket
    monkeypatch.setenv("CHROMASYNC_MODEL_URL", f"{url}/missing/{shared.ARCHIVE}")
    with pytest.raises(EmbeddingError, match=r"HTTP 404.*chromasync\[local-weights\]"):
        tokens.default_token_meter()
    assert paths == [f"/missing/{shared.ARCHIVE}"]
    assert not no_weights.exists()


def test_an_archive_with_a_link_or_a_stray_path_is_refused(
    bucket: tuple[str, list[str], Path], no_weights: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _, served = bucket
    path = served / shared.ARCHIVE
    with tarfile.open(path, "w:gz") as tar:
        link = tarfile.TarInfo("onnx/model.onnx")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
        stray = tarfile.TarInfo("../outside.txt")
        tar.addfile(stray)
    monkeypatch.setenv("CHROMASYNC_MODEL_URL", f"{url}/{shared.ARCHIVE}")
    monkeypatch.setenv("CHROMASYNC_MODEL_SHA256", hashlib.sha256(path.read_bytes()).hexdigest())
    with pytest.raises(EmbeddingError, match=r"unsafe onnx/model\.onnx"):
        tokens.default_token_meter()
    assert not no_weights.exists()
    assert not (served.parent / "outside.txt").exists()


def test_a_server_that_drips_the_archive_is_cut_off_at_the_deadline(tmp_path: Path) -> None:
    """A byte every 0.1 s keeps every read within its timeout; the download's own deadline
    (`total_s`, here 1 s; an hour by default) ends it, and nothing is installed."""
    folder = tmp_path / "onnx"
    with StallingServer("drip-body", size=10_000, every=0.1) as server:
        started = time.monotonic()
        with pytest.raises(EmbeddingError, match="not downloaded within 1 s"):
            shared.download(folder, f"{server.url}/{shared.ARCHIVE}", timeout=0.5, total_s=1.0)
    assert time.monotonic() - started < 3.0  # it took 1,000 s (a byte every 0.1 s)
    assert not folder.exists()


#: SIGHUP as a terminal's process has it: a run under `nohup` (a CI runner's) would hand
#: its ignored SIGHUP down, and the download rightly goes on.
KILLED_DOWNLOAD = r"""
import signal, sys
from pathlib import Path
from chromasync.embed import shared
signal.signal(signal.SIGHUP, signal.SIG_DFL)
shared.download(Path(sys.argv[1]), sys.argv[2], timeout=30, total_s=60)
"""


def _start_download(folder: Path, url: str) -> subprocess.Popen[bytes]:
    """A download in its own process, once it has made its temporary folder."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_DOWNLOAD, str(folder), url],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not list(folder.parent.glob(".download-*/*")):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    return process


def test_a_killed_download_leaves_no_folder_behind(tmp_path: Path) -> None:
    """SIGTERM and SIGHUP clean up as SIGINT does; what SIGKILL leaves, the next download removes
    (its owner is gone), never the folder of a download still running."""
    folder = tmp_path / "models" / shared.MODEL_NAME / "onnx"
    folder.parent.mkdir(parents=True)
    with StallingServer("drip-body", size=10_000_000, every=0.05) as server:
        url = f"{server.url}/{shared.ARCHIVE}"
        for sig in (signal.SIGTERM, signal.SIGHUP):  # SIGHUP: a closed terminal (issue 40)
            stopped = _start_download(folder, url)
            stopped.send_signal(sig)
            assert stopped.wait(30) != 0
            assert not list(folder.parent.glob(".download-*")), sig

        killed = _start_download(folder, url)
        killed.kill()
        killed.wait(30)
        [left] = folder.parent.glob(".download-*")
        running = folder.parent / f".download-{os.getpid()}-running"
        running.mkdir()
    with pytest.raises(EmbeddingError):  # nothing listens there any more
        shared.download(folder, url, timeout=2, total_s=5)
    assert not left.exists() and running.is_dir()


@pytest.mark.model  # the model's own loading code, on its broken files
def test_a_damaged_model_from_a_mirror_says_which_folder_to_remove(
    bucket: tuple[str, list[str], Path], no_weights: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mirror's archive matches the SHA-256 the user set but holds broken files: every
    run that loads them says that removing the model's folder fetches it again."""
    url, paths, served = bucket
    archive = served / shared.ARCHIVE
    with tarfile.open(archive, "w:gz") as tar:
        for name in shared.FILES:
            data = f"not a real {name}".encode()
            member = tarfile.TarInfo(f"onnx/{name}")
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    monkeypatch.setenv("CHROMASYNC_MODEL_URL", f"{url}/{shared.ARCHIVE}")
    monkeypatch.setenv("CHROMASYNC_MODEL_SHA256", hashlib.sha256(archive.read_bytes()).hexdigest())
    hint = f"remove {no_weights.parent} and the next run fetches the model again"
    with pytest.raises(EmbeddingError, match="cannot load the tokenizer") as meter:
        tokens.default_token_meter()
    assert hint in str(meter.value)
    for variant in ("fp32", "int8"):
        with pytest.raises(EmbeddingError) as embed:
            LocalEmbedder(cache_dir=no_weights.parent / "cache", variant=variant).embed_query("x")
        assert hint in str(embed.value), variant
    assert paths == [f"/{shared.ARCHIVE}"]  # fetched once
