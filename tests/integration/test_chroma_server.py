"""Against a real `chroma run` server, directly and through a fault-injecting proxy:
retries, the bounded give-up, no deletion after a failed upsert, credentials kept secret,
Chroma Cloud's limits, and a server that advertises no batch size."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import StoreError
from chromasync.plan.limits import SKIP_REASON
from chromasync.sync.ingest import IngestOptions

from ..conftest import age_tree, invoke_cli, set_mtime, unique_collection
from ..servers import Fault, FaultProxy

pytestmark = pytest.mark.server

SECRET = "tok-SECRET-4f1d2c9b"


def _settings(data_dir: Path, url: str, collection: str, **more: Any) -> Settings:
    flags = {
        "data_dir": str(data_dir),
        "provider": "hash",
        "chroma_url": url,
        "collection": collection,
        **more,
    }
    return resolve_settings(flags, {"CHROMASYNC_COLLECTIONS": "shared"})


def _stored(settings: Settings) -> dict[str, dict[str, Any]]:
    collection = api.open_store(settings).collection(settings.collection, create=False)
    return {r.id: dict(r.metadata) for r in collection.iter_records()}


def _delays(caplog: pytest.LogCaptureFixture) -> list[float]:
    found = []
    for record in caplog.records:
        match = re.search(r"retry \d+ of \d+ in ([0-9.]+) s", record.getMessage())
        if match:
            found.append(float(match.group(1)))
    return found


def test_ingest_and_search_against_server(
    notes: Path, tmp_path: Path, chroma_server: str, embedder: HashEmbedder
) -> None:
    settings = _settings(tmp_path / "d", chroma_server, unique_collection())
    [first] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert first.chunks_embedded == first.chunks_total > 0
    assert len(_stored(settings)) == first.chunks_total
    [again] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
    assert again.chunks_embedded == 0 and again.files_unchanged == first.files_new
    hits = api.search("grinder calibration", settings, k=3, embedder=embedder)
    assert hits and hits[0].path
    collection = api.open_store(settings).collection(settings.collection, create=False)
    assert collection.metadata["chromasync_embedding_provider"] == "hash"
    assert collection.metadata["chromasync_embedding_model"] == embedder.model_id


def test_transient_failures_are_retried(
    notes: Path,
    tmp_path: Path,
    chroma_server: str,
    embedder: HashEmbedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="chromasync.retry")
    with FaultProxy(chroma_server) as proxy:
        settings = _settings(tmp_path / "d", proxy.url, unique_collection())
        proxy.add(
            Fault("status", "/upsert", "POST", status=503),
            Fault("drop", "/upsert", "POST"),
            Fault("status", "/upsert", "POST", status=429, headers={"Retry-After": "1"}),
            Fault("status", "/upsert", "POST", status=502),
        )
        [summary] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
        outcomes = [s.outcome for s in proxy.requests("POST", "/upsert")]
    assert outcomes == ["status 503", "drop", "status 429", "status 502", "forwarded"]
    delays = _delays(caplog)
    assert len(delays) == 4
    assert delays[2] >= 1.0  # Retry-After honoured
    assert len(_stored(_settings(tmp_path / "d", chroma_server, settings.collection))) == (
        summary.chunks_total
    )


def test_slow_response_times_out_and_is_retried(
    notes: Path, tmp_path: Path, chroma_server: str, embedder: HashEmbedder
) -> None:
    with FaultProxy(chroma_server) as proxy:
        settings = _settings(tmp_path / "d", proxy.url, unique_collection(), chroma_timeout=2)
        proxy.add(Fault("slow", "/upsert", "POST", delay=4.0))
        [summary] = api.ingest([api.source_for(notes)], settings, embedder=embedder)
        outcomes = [s.outcome for s in proxy.requests("POST", "/upsert")]
    assert outcomes[:2] == ["slow", "forwarded"]
    direct = _settings(tmp_path / "d", chroma_server, settings.collection)
    assert len(_stored(direct)) == summary.chunks_total


def _edit(notes: Path) -> None:
    (notes / "journal" / "2026-05-01.md").unlink()
    (notes / "ideas.txt").write_text("Only one idea now: water the plants.\n")
    set_mtime(notes / "ideas.txt", 1_700_000_000)


def test_failed_upsert_is_never_followed_by_deletions(
    notes: Path, tmp_path: Path, chroma_server: str, embedder: HashEmbedder
) -> None:
    data = tmp_path / "d"
    direct = _settings(data, chroma_server, unique_collection())
    api.ingest([api.source_for(notes)], direct, embedder=embedder)
    before = _stored(direct)
    _edit(notes)
    with FaultProxy(chroma_server) as proxy:
        proxied = _settings(data, proxy.url, direct.collection, chroma_retries=3)
        proxy.add(Fault("status", "/upsert", "POST", times=-1, status=503))
        with pytest.raises(StoreError) as info:
            api.ingest([api.source_for(notes)], proxied, embedder=embedder)
        assert len(proxy.requests("POST", "/upsert")) == 3  # bounded
        assert proxy.requests("POST", "/delete") == []
    message = str(info.value)
    assert "gave up after 3 attempt(s)" in message and "HTTP 503" in message
    assert proxy.url.split("//")[1] in message  # names the server
    assert _stored(direct) == before  # nothing deleted, nothing half-written
    [summary] = api.ingest([api.source_for(notes)], direct, embedder=embedder)
    after = _stored(direct)
    assert len(after) == summary.chunks_total
    assert "journal/2026-05-01.md" not in {m["path"] for m in after.values()}


@pytest.mark.slow
def test_cli_give_up_exits_1_and_never_deletes(
    notes: Path, tmp_path: Path, chroma_server: str
) -> None:
    collection = unique_collection()
    env = {
        "CHROMASYNC_DATA_DIR": str(tmp_path / "d"),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_COLLECTION": collection,
        "CHROMASYNC_CHROMA_TOKEN": SECRET,
        "CHROMASYNC_CHROMA_RETRIES": "2",
        "CHROMASYNC_COLLECTIONS": "shared",
    }
    first = invoke_cli(
        ["ingest", str(notes), "--json"], {**env, "CHROMASYNC_CHROMA_URL": chroma_server}
    )
    assert first.returncode == 0, first.stderr
    direct = _settings(tmp_path / "d", chroma_server, collection)
    before = _stored(direct)
    _edit(notes)
    with FaultProxy(chroma_server) as proxy:
        proxy.add(Fault("drop", "/upsert", "POST", times=-1))
        result = invoke_cli(["ingest", str(notes)], {**env, "CHROMASYNC_CHROMA_URL": proxy.url})
        assert proxy.requests("POST", "/delete") == []
    assert result.returncode == 1
    assert "gave up after 2 attempt(s)" in " ".join(result.stderr.split())
    assert SECRET not in result.stdout + result.stderr
    assert _stored(direct) == before


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_credentials_refused_plainly_and_never_shown(
    notes: Path,
    tmp_path: Path,
    chroma_server: str,
    embedder: HashEmbedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    data = tmp_path / "d"
    with FaultProxy(chroma_server) as proxy:
        settings = _settings(data, proxy.url, unique_collection(), chroma_token=SECRET)
        api.ingest([api.source_for(notes)], settings, embedder=embedder)  # token accepted
        (notes / "new.md").write_text("# New\n\nKites.\n")
        set_mtime(notes / "new.md", 1_700_000_000)
        proxy.clear()
        proxy.add(Fault("status", "/upsert", "POST", status=401, times=-1))
        with pytest.raises(StoreError) as info:
            api.ingest([api.source_for(notes)], settings, embedder=embedder)
        assert len(proxy.requests("POST", "/upsert")) == 1  # not retried
        # the CLI says the same, and shows no secret either
        env = {
            "CHROMASYNC_DATA_DIR": str(data),
            "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
            "CHROMASYNC_COLLECTION": settings.collection,
            "CHROMASYNC_CHROMA_URL": proxy.url,
            "CHROMASYNC_CHROMA_TOKEN": SECRET,
            "CHROMASYNC_COLLECTIONS": "shared",
        }
        result = invoke_cli(["ingest", str(notes)], env)
        shown = invoke_cli(["config", "show"], env)
    message = str(info.value)
    assert "refused the credentials (HTTP 401)" in message
    assert SECRET not in message
    assert result.returncode == 1
    assert "refused the credentials" in " ".join(result.stderr.split())
    assert SECRET not in result.stdout + result.stderr
    assert shown.returncode == 0 and "(set)" in shown.stdout and SECRET not in shown.stdout
    assert SECRET not in caplog.text
    assert SECRET.encode() not in _all_bytes(data)  # manifest, cache, lock


@pytest.mark.slow
def test_flag_token_reaches_the_server(tmp_path: Path, notes: Path, chroma_server: str) -> None:
    """The token travels as a bearer header (seen by the proxy), never in the output."""
    with FaultProxy(chroma_server) as proxy:
        result = invoke_cli(
            [
                "ingest",
                str(notes),
                "--chroma-url",
                proxy.url,
                "--chroma-token",
                SECRET,
                "--collection",
                unique_collection(),
                "--provider",
                "hash",
                "--data-dir",
                str(tmp_path / "d"),
            ]
        )
        sent = {s.headers.get("authorization") for s in proxy.seen}
    assert result.returncode == 0, result.stderr
    assert sent == {f"Bearer {SECRET}"}
    assert SECRET not in result.stdout + result.stderr


def _many_notes(root: Path, count: int) -> Path:
    root.mkdir()
    for i in range(count):
        (root / f"n{i:04d}.md").write_text(f"# Note {i}\n\nShort note number {i} about kites.\n")
    keys = "\n".join(f"key{i:02d}: v{i}" for i in range(40))
    (root / "keys.md").write_text(f"---\n{keys}\n---\n# Keys\n\nA note with many keys.\n")
    # One 20,000-character word of 4-byte characters: a single word piece ([UNK]), cut by
    # the chunker at its character limit into pieces of ~20 KB each, over the 16 KiB limit.
    (root / "huge.md").write_text("# Huge\n\n" + "\U0001f642" * 20_000 + "\n")
    age_tree(root)
    return root


def _batch_sizes(proxy: FaultProxy) -> list[int]:
    return [len(json.loads(s.body)["ids"]) for s in proxy.requests("POST", "/upsert")]


def test_cloud_limits_adapt_batches_keys_and_documents(
    tmp_path: Path, chroma_server: str, embedder: HashEmbedder
) -> None:
    """`chroma-cloud+http://` drives CloudClient (API key as X-Chroma-Token) at the local
    server, so Chroma Cloud's limits apply: 300 records per write, 32 keys, 16 KiB."""
    corpus = _many_notes(tmp_path / "many", 420)
    collection = unique_collection()
    with FaultProxy(chroma_server) as proxy:
        url = proxy.url.replace("http://", "chroma-cloud+http://")
        settings = resolve_settings(
            {
                "data_dir": str(tmp_path / "d"),
                "provider": "hash",
                "chroma_url": url,
                "collection": collection,
            },
            {"CHROMA_API_KEY": SECRET, "CHROMASYNC_COLLECTIONS": "shared"},
        )
        assert settings.chroma_token == SECRET
        [plan] = api.ingest(
            [api.source_for(corpus)], settings, IngestOptions(dry_run=True), embedder=embedder
        )
        [summary] = api.ingest([api.source_for(corpus)], settings, embedder=embedder)
        sizes = _batch_sizes(proxy)
        tokens = {s.headers.get("x-chroma-token") for s in proxy.seen if "/api/v2/" in s.path}
    assert tokens == {SECRET}  # CloudClient's header, on every Chroma request
    assert plan.metadata_keys_dropped == summary.metadata_keys_dropped > 0
    assert plan.files_skipped.get(SKIP_REASON) == summary.files_skipped.get(SKIP_REASON) == 1
    assert max(sizes) <= 300 and sum(sizes) == summary.chunks_embedded
    stored = _stored(_settings(tmp_path / "d", chroma_server, collection))
    assert max(len(m) for m in stored.values()) <= 32
    assert "huge.md" not in {m["path"] for m in stored.values()}
    assert {m["path"] for m in stored.values()} >= {"keys.md", "n0000.md"}


def test_server_without_batch_limit_adapts(
    tmp_path: Path,
    chroma_server: str,
    embedder: HashEmbedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    corpus = _many_notes(tmp_path / "many", 30)
    shutil.rmtree(corpus / "huge.md", ignore_errors=True)
    (corpus / "huge.md").unlink()
    caplog.set_level(logging.WARNING, logger="chromasync.sync.ingest")

    def no_limit(path: str, body: bytes) -> bytes:
        if "pre-flight-checks" in path:
            data = json.loads(body)
            data["max_batch_size"] = -1
            return json.dumps(data).encode()
        return body

    with FaultProxy(chroma_server) as proxy:
        proxy.rewrite = no_limit
        settings = _settings(tmp_path / "d", proxy.url, unique_collection())
        [summary] = api.ingest([api.source_for(corpus)], settings, embedder=embedder)
        sizes = _batch_sizes(proxy)
    assert "advertises no maximum batch size" in caplog.text
    assert sum(sizes) == summary.chunks_embedded and max(sizes) <= 1000


def test_reembed_refuses_to_drop_other_ingesters_records(
    notes: Path, tmp_path: Path, chroma_server: str
) -> None:
    collection = unique_collection()
    alpha = _settings(tmp_path / "a", chroma_server, collection)
    beta = _settings(tmp_path / "b", chroma_server, collection)
    api.ingest([api.source_for(notes, "alpha")], alpha, embedder=HashEmbedder())
    api.ingest([api.source_for(notes, "beta")], beta, embedder=HashEmbedder())
    before = _stored(beta)
    with pytest.raises(StoreError, match=r"also holds records of source 'beta'"):
        api.ingest(
            [api.source_for(notes, "alpha")],
            alpha,
            IngestOptions(reembed=True),
            embedder=HashEmbedder(dimension=32),
        )
    assert _stored(beta) == before
    # alone in its collection, a fresh data dir (a CI job) may re-embed its own source
    solo = _settings(tmp_path / "c", chroma_server, unique_collection())
    api.ingest([api.source_for(notes, "alpha")], solo, embedder=HashEmbedder())
    fresh = _settings(tmp_path / "c2", chroma_server, solo.collection)
    [summary] = api.ingest(
        [api.source_for(notes, "alpha")],
        fresh,
        IngestOptions(reembed=True),
        embedder=HashEmbedder(dimension=32),
    )
    assert summary.chunks_embedded == summary.chunks_total > 0
