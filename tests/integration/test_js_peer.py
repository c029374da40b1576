"""A JavaScript `chromadb` client (tests/js, installed by `make js-peer`) on `chroma run`:
by text it downloads its model from the Hugging Face hub and never reads Chroma's folder;
given that folder's files in transformers.js's layout (docs/peers.md's commands, run), or
given query vectors, it gets chromasync's dense top 5.

node's fetch does not use HTTP(S)_PROXY, so the script is told a dead hub (`--hub`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from chromasync.embed import shared

from ..conftest import REPO, age_tree, unique_collection
from ..servers import free_port
from .test_peers import QUERIES, _ingest_and_search, _peer_env

pytestmark = pytest.mark.model

JS = REPO / "tests" / "js"
#: A closed loopback port (fetch refuses port 9 itself, before trying it).
DEAD_HUB = f"http://127.0.0.1:{free_port()}/"


@pytest.fixture(scope="session")
def node() -> str:
    """node, with tests/js's packages installed (in CI, missing packages fail the test)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    if not (JS / "node_modules" / "@chroma-core" / "default-embed").is_dir():
        reason = "the JavaScript client is not installed in tests/js/node_modules (`make js-peer`)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return node


@pytest.fixture(scope="module")
def indexed(
    node: str, chroma_server: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, object]:
    """examples/notes, indexed with the default model into `chroma run`."""
    corpus = tmp_path_factory.mktemp("js-peer") / "notes"
    shutil.copytree(REPO / "examples" / "notes", corpus)
    age_tree(corpus)
    data = tmp_path_factory.mktemp("js-peer-data")
    env = {
        "CHROMASYNC_DATA_DIR": str(data / "data"),
        "CHROMASYNC_CACHE_DIR": str(data / "cache"),
        "CHROMASYNC_COLLECTIONS": "shared",
        "CHROMASYNC_CHROMA_URL": chroma_server,
        "CHROMASYNC_COLLECTION": unique_collection(),
    }
    collection, tops = _ingest_and_search(env, corpus)
    return {"node": node, "url": chroma_server, "collection": collection, "tops": tops}


def _query(
    indexed: dict[str, object], queries: object, *flags: str
) -> subprocess.CompletedProcess[str]:
    args = [str(indexed["node"]), "query.mjs", str(indexed["url"]), str(indexed["collection"])]
    return subprocess.run(
        [*args, json.dumps(queries), "--hub", DEAD_HUB, *flags],
        cwd=JS,
        capture_output=True,
        text=True,
        env=_peer_env(),
        timeout=300,
        check=False,
    )


def test_by_text_it_downloads_and_never_reads_chromas_folder(indexed: dict[str, object]) -> None:
    assert shared.is_whole(shared.model_folder())  # chromasync put Chroma's model there
    out = _query(indexed, QUERIES[:1])
    assert out.returncode != 0, out.stdout
    assert "fetch failed" in out.stderr and "ECONNREFUSED" in out.stderr, out.stderr


def link_model_as_the_docs_say() -> Path:
    """Run docs/peers.md's link commands, HOME the session's Chroma home; their folder."""
    doc = (REPO / "docs" / "peers.md").read_text(encoding="utf-8")
    script = doc.split("## A JavaScript client", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    env = _peer_env()
    subprocess.run(["bash", "-ec", script], env=env, check=True, timeout=60)
    return Path(env["HOME"]) / ".cache" / "transformers-js"


def test_by_text_from_chromas_folder(indexed: dict[str, object]) -> None:
    out = _query(indexed, QUERIES, "--models", str(link_model_as_the_docs_say()))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["function"] == "default"
    assert got["tops"] == indexed["tops"]


def test_by_query_vectors(indexed: dict[str, object]) -> None:
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    chroma = ONNXMiniLM_L6_V2()
    chroma.DOWNLOAD_PATH = shared.model_folder().parent  # the session's HOME, not the user's
    vectors = [[float(x) for x in vector] for vector in chroma(QUERIES)]
    out = _query(indexed, vectors, "--vectors")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["tops"] == indexed["tops"]
