"""Other Chroma clients query chromasync's collections by text, offline, and get what
chromasync's dense search gets: Chroma's default function itself, a plain chromadb client
in another process, and the real `chroma-mcp` from PyPI (its own environment, driven by the
`mcp` SDK's stdio client) on the embedded store and on `chroma run`.

Every peer runs with HOME pointing at the session's Chroma home (conftest.CHROMA_HOME),
where chromasync put Chroma's model, and with a dead proxy, so a download would fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.embed import shared
from chromasync.embed.local import LocalEmbedder

from ..conftest import REPO, age_tree, unique_collection

pytestmark = pytest.mark.model

QUERIES = ["how do I calibrate the grinder", "feeding a sourdough starter", "garden watering"]
#: Where `make chroma-mcp` puts chroma-mcp's own environment (or name one).
CHROMA_MCP = Path(
    os.environ.get("CHROMASYNC_TEST_CHROMA_MCP") or REPO / ".venv-chroma-mcp" / "bin" / "chroma-mcp"
)
DEAD_PROXY = "http://127.0.0.1:9"


def _peer_env() -> dict[str, str]:
    """HOME where Chroma finds the model chromasync placed; no way out to the network."""
    folder = shared.models_root()
    if folder.parts[-3:] != (".cache", "chroma", "onnx_models"):
        pytest.skip(f"CHROMASYNC_CHROMA_MODELS ({folder}) is not under a HOME Chroma reads")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHROMASYNC_")}
    env.update(
        {
            "HOME": str(folder.parents[2]),
            "HTTPS_PROXY": DEAD_PROXY,
            "HTTP_PROXY": DEAD_PROXY,
            "NO_PROXY": "127.0.0.1,localhost",
            "ANONYMIZED_TELEMETRY": "False",
        }
    )
    return env


def _cosines(a: list[list[float]], b: Any) -> list[float]:
    return [
        float(sum(x * float(y) for x, y in zip(u, v, strict=True)))
        for u, v in zip(a, b, strict=True)
    ]


def test_chroma_default_function_and_chromasync_agree(tmp_path: Path) -> None:
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    texts = [*QUERIES, "word " * 400]  # one past the 256-token window: both truncate
    ours = LocalEmbedder(cache_dir=tmp_path, variant="fp32")
    vectors = ours.embed_documents(texts)
    assert shared.is_whole(shared.model_folder())  # chromasync put Chroma's model there
    chroma = ONNXMiniLM_L6_V2()
    chroma.DOWNLOAD_PATH = shared.model_folder().parent  # the session's HOME, not the user's
    assert min(_cosines(vectors, chroma(texts))) >= 0.9999
    query = LocalEmbedder(cache_dir=tmp_path)  # the default variant's query model
    assert min(_cosines([query.embed_query(t) for t in texts], chroma(texts))) >= 0.9999


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("peers") / "notes"
    shutil.copytree(REPO / "examples" / "notes", root)
    age_tree(root)
    return root


def _ingest_and_search(env: dict[str, str], corpus: Path) -> tuple[str, list[list[str]]]:
    """Ingest with the default model; (collection, each query's dense top 5 ids)."""
    settings = resolve_settings({}, env)
    [summary] = api.ingest([api.source_for(corpus)], settings)
    assert summary.chunks_embedded > 5
    tops = [[h.id for h in api.search(q, settings, k=5, mode="dense")] for q in QUERIES]
    assert all(len(top) == 5 for top in tops)
    return settings.collection, tops


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> dict[str, Any]:
    data = tmp_path_factory.mktemp("peers-data")
    env = {
        "CHROMASYNC_DATA_DIR": str(data),
        "CHROMASYNC_CACHE_DIR": str(tmp_path_factory.mktemp("peers-cache")),
        "CHROMASYNC_COLLECTIONS": "shared",
    }
    collection, tops = _ingest_and_search(env, corpus)
    return {"path": data / "chroma", "collection": collection, "tops": tops}


PLAIN_CLIENT = """
import json, sys
import chromadb
path, name = sys.argv[1], sys.argv[2]
client = chromadb.HttpClient(host=path.split(":")[0], port=int(path.split(":")[1])) \\
    if ":" in path else chromadb.PersistentClient(path=path)
collection = client.get_collection(name)
queries = json.loads(sys.argv[3])
print(json.dumps({
    "function": collection.configuration_json["embedding_function"],
    "tops": [collection.query(query_texts=[q], n_results=5)["ids"][0] for q in queries],
}))
"""


def test_a_plain_client_queries_by_text(embedded: dict[str, Any]) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            PLAIN_CLIENT,
            str(embedded["path"]),
            embedded["collection"],
            json.dumps(QUERIES),
        ],
        capture_output=True,
        text=True,
        env=_peer_env(),
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["function"]["name"] == "default"
    assert got["tops"] == embedded["tops"]


def _chroma_mcp_tops(args: list[str], collection: str) -> list[list[str]]:
    if not CHROMA_MCP.is_file():
        pytest.skip(
            f"chroma-mcp is not installed at {CHROMA_MCP} (`make chroma-mcp` makes its "
            "environment from PyPI; or set CHROMASYNC_TEST_CHROMA_MCP)"
        )
    params = StdioServerParameters(command=str(CHROMA_MCP), args=args, env=_peer_env())
    tops: list[list[str]] = []

    async def session() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            for query in QUERIES:
                result = await client.call_tool(
                    "chroma_query_documents",
                    {"collection_name": collection, "query_texts": [query], "n_results": 5},
                )
                assert not result.is_error, result.content
                tops.append(json.loads(result.content[0].text)["ids"][0])

    anyio.run(session)
    return tops


def test_chroma_mcp_on_the_embedded_store(embedded: dict[str, Any]) -> None:
    args = ["--client-type", "persistent", "--data-dir", str(embedded["path"])]
    assert _chroma_mcp_tops(args, embedded["collection"]) == embedded["tops"]


def test_chroma_mcp_and_a_plain_client_on_chroma_run(
    chroma_server: str, corpus: Path, tmp_path: Path
) -> None:
    env = {
        "CHROMASYNC_DATA_DIR": str(tmp_path / "data"),
        "CHROMASYNC_CACHE_DIR": str(tmp_path / "cache"),
        "CHROMASYNC_COLLECTIONS": "shared",
        "CHROMASYNC_CHROMA_URL": chroma_server,
        "CHROMASYNC_COLLECTION": unique_collection(),
    }
    collection, tops = _ingest_and_search(env, corpus)
    host, port = chroma_server.removeprefix("http://").split(":")
    out = subprocess.run(
        [sys.executable, "-c", PLAIN_CLIENT, f"{host}:{port}", collection, json.dumps(QUERIES)],
        capture_output=True,
        text=True,
        env=_peer_env(),
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["tops"] == tops
    args = ["--client-type", "http", "--host", host, "--port", port, "--ssl", "false"]
    assert _chroma_mcp_tops(args, collection) == tops
