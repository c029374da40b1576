"""Two ingesters share one `chroma run` server: keyword search still sees everything.

Each data dir's own keyword index covers only the sources it ingested; retrieval notices
that the collection holds more and searches a mirror rebuilt from the collection.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder

from ..conftest import age_tree, set_mtime

pytestmark = pytest.mark.server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    chroma = shutil.which("chroma") or str(Path(__import__("sys").executable).parent / "chroma")
    if not Path(chroma).exists():
        pytest.skip("the `chroma` command is not installed")
    port = _free_port()
    path = tmp_path_factory.mktemp("server")
    log = (path / "server.log").open("w")
    proc = subprocess.Popen(
        [chroma, "run", "--path", str(path / "db"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        else:
            pytest.fail("chroma run did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def _settings(data_dir: Path, url: str, **extra: object) -> Settings:
    flags = {"data_dir": str(data_dir), "provider": "hash", "chroma_url": url}
    flags.update({k: v for k, v in extra.items()})
    return api.resolve_settings(flags, {})


def _keyword(settings: Settings, query: str) -> set[str]:
    request = api.SearchRequest(query, mode="keyword", k=50)
    return {h.path for h in api.retrieve(request, settings, embedder=HashEmbedder()).hits}


def test_keyword_search_sees_other_ingesters_sources(tmp_path: Path, chroma_url: str) -> None:
    alpha_root = tmp_path / "alpha"
    beta_root = tmp_path / "beta"
    alpha_root.mkdir()
    beta_root.mkdir()
    (alpha_root / "a.md").write_text("# Alpha\n\nThe heron waits by the weir.\n")
    (beta_root / "b.md").write_text("# Beta\n\nA heron and a kingfisher share the weir.\n")
    (beta_root / "c.md").write_text("# Gamma\n\nOtters at dusk below the weir.\n")
    age_tree(tmp_path)
    alpha = _settings(tmp_path / "alpha-data", chroma_url, collection="shared-notes")
    beta = _settings(tmp_path / "beta-data", chroma_url, collection="shared-notes")
    api.ingest([api.source_for(alpha_root)], alpha, embedder=HashEmbedder())
    api.ingest([api.source_for(beta_root)], beta, embedder=HashEmbedder())

    # Alpha's own index holds only a.md; the collection holds all three files.
    assert _keyword(alpha, "weir") == {"a.md", "b.md", "c.md"}
    assert _keyword(beta, "heron") == {"a.md", "b.md"}
    phrase = api.SearchRequest(
        "weir", mode="hybrid", filters=api.make_filters(alpha, phrases=["otters at dusk"])
    )
    assert {h.path for h in api.retrieve(phrase, alpha, embedder=HashEmbedder()).hits} == {"c.md"}

    # Beta deletes a file: the count changes, so alpha's mirror refreshes at once.
    (beta_root / "c.md").unlink()
    api.ingest([api.source_for(beta_root)], beta, embedder=HashEmbedder())
    assert _keyword(alpha, "weir") == {"a.md", "b.md"}

    # Beta edits a file without changing the count: seen once the mirror is older than
    # keyword_refresh_s (0 here: every search re-checks).
    (beta_root / "b.md").write_text("# Beta\n\nA heron and a dipper share the weir.\n")
    set_mtime(beta_root / "b.md", 1_700_000_000)
    api.ingest([api.source_for(beta_root)], beta, embedder=HashEmbedder())
    eager = _settings(
        tmp_path / "alpha-data", chroma_url, collection="shared-notes", keyword_refresh_s=0
    )
    assert _keyword(eager, "dipper") == {"b.md"}
    assert _keyword(eager, "kingfisher") == set()
