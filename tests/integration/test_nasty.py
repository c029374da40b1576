"""Every entry of the nasty corpus ends in one of its acceptable outcomes, twice."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.records import IngestSummary
from chromasync.sync import ahead

from ..conftest import SHARED

TOOL = SHARED / "tools" / "make_nasty_corpus.py"


def _make(out: Path, *flags: str) -> dict[str, object]:
    subprocess.run([sys.executable, str(TOOL), str(out), *flags], check=True, capture_output=True)
    name = "expected-after.json" if "--mutate" in flags else "expected.json"
    data: dict[str, object] = json.loads((out / name).read_text())
    return data


def _stored(settings: Settings) -> tuple[dict[str, list[str]], str]:
    """path -> documents, and every document and metadata value joined (for canaries)."""
    collection = api.open_store(settings).collection(settings.collection, create=False)
    by_path: dict[str, list[str]] = {}
    blob: list[str] = []
    for record in collection.iter_records(documents=True):
        by_path.setdefault(str(record.metadata["path"]), []).append(record.document or "")
        blob.append(record.document or "")
        blob.extend(str(v) for v in record.metadata.values())
    return by_path, "\n".join(blob)


def _check(expected: dict[str, object], settings: Settings) -> None:
    by_path, blob = _stored(settings)
    for entry in expected["entries"]:  # type: ignore[attr-defined]
        if entry["requires_non_root"] and os.geteuid() == 0:
            continue
        raw = base64.b64decode(entry["path_b64"])
        path = raw.decode("utf-8", "surrogateescape")
        indexed = path in by_path
        outcome = "index" if indexed else f"skip:{entry['reason']}"
        ok = (
            any(a == "index" for a in entry["acceptable"])
            if indexed
            else any(a.startswith("skip") for a in entry["acceptable"])
        )
        assert ok, f"{entry['case']}: {outcome} not in {entry['acceptable']}"
        if indexed and entry.get("marker"):
            assert entry["marker"] in "\n".join(by_path[path]), entry["case"]
        if indexed and entry.get("expect_text"):  # decoded exactly (Latin-1: not cp1257)
            assert entry["expect_text"] in "\n".join(by_path[path]), entry["case"]
    as_root = {  # root reads mode-000 files: those cases only hold for other users
        e.get("canary")
        for e in expected["entries"]  # type: ignore[attr-defined]
        if e["requires_non_root"] and os.geteuid() == 0
    }
    for canary in expected["never_in_collection"]:  # type: ignore[attr-defined]
        if canary not in as_root:
            assert canary not in blob, canary


@pytest.fixture
def nasty(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    out = tmp_path / "nasty"
    return out, _make(out)


def _ingest(root: Path, settings: Settings, embedder: HashEmbedder) -> IngestSummary:
    [summary] = api.ingest([api.source_for(root, "nasty")], settings, embedder=embedder)
    return summary


@pytest.mark.parametrize("plan_ahead", ["off", "on"])
def test_nasty_corpus_two_phases(
    nasty: tuple[Path, dict[str, object]],
    tmp_path: Path,
    plan_ahead: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Read and chunked in this process, and in a second one (`sync/ahead.py`)."""
    out, expected = nasty
    workers: list[object] = []
    real = ahead._Worker
    monkeypatch.setattr(ahead, "_Worker", lambda job: workers.append(job) or real(job))
    settings = resolve_settings(
        {"data_dir": str(tmp_path / "data"), "provider": "hash", "plan_ahead": plan_ahead},
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    embedder = HashEmbedder()
    first = _ingest(out / "corpus", settings, embedder)
    assert len(workers) == (plan_ahead == "on")
    _check(expected, settings)
    assert not (out / "corpus" / "NASTY-PWNED").exists()
    for reason in ("binary", "private", "frontmatter-invalid", "undecodable", "symlink-loop"):
        assert first.files_skipped.get(reason, 0) > 0, reason

    texts = embedder.texts_embedded
    second = _ingest(out / "corpus", settings, embedder)
    assert second.chunks_embedded == 0 and embedder.texts_embedded == texts
    assert second.files_skipped == first.files_skipped

    after = _make(out, "--mutate")
    third = _ingest(out / "corpus", settings, embedder)
    _check(after, settings)
    must = after["expected_embed_calls"]["must_reembed"]  # type: ignore[index]
    assert 0 < third.chunks_embedded <= len(must)
    by_path, _ = _stored(settings)
    assert "mutate/deleted.md" not in by_path and "mutate/rename-me.md" not in by_path
    assert "mutate/goes-private.md" not in by_path


def test_a_data_dir_inside_its_own_source_is_not_indexed(
    tmp_path: Path, embedder: HashEmbedder
) -> None:
    """`notes/index/` (not hidden) is the data dir of `notes/`: its `owner.json` and
    `summaries.json` are never indexed, on the first run or the next (they were)."""
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nThe espresso grinder needs calibrating.\n")
    settings = resolve_settings(
        {"data_dir": str(root / "index"), "provider": "hash"}, {"CHROMASYNC_COLLECTIONS": "shared"}
    )
    api.ingest([api.source_for(root)], settings, embedder=embedder)
    (root / "index" / "owner.json").write_text('{"pid": 1, "note": "OWNER-CANARY"}')
    api.summaries(settings, group_by="path:1")
    assert (root / "index" / "summaries.json").is_file()
    (root / "b.md").write_text("# B\n\nBloom the coffee.\n")
    summary = api.ingest([api.source_for(root)], settings, embedder=embedder)[0]
    by_path, blob = _stored(settings)
    assert sorted(by_path) == ["a.md", "b.md"]
    assert "OWNER-CANARY" not in blob
    assert summary.files_skipped.get("ignored", 0) >= 1
