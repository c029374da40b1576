"""Issue 39, the designs' record fields: `char_count`, `ingested_at`, `last_modified_mtime`
on every record, the repository indexer's fields on a source with an identity, none of them
in a record's hash (an unchanged re-run still writes nothing) nor in a hit any surface shows.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.metakeys import IDENTITY_FIELDS, RECORD_FIELDS, RECORD_HASH_KEY
from chromasync.store.chroma import Collection
from chromasync.sync import planning

from ..conftest import invoke_cli, set_mtime

MTIME = 1_700_000_000.5


def _records(settings: Settings) -> dict[str, tuple[dict[str, Any], str]]:
    collection = api.open_store(settings).collection(settings.collection, create=False)
    return {
        r.id: (dict(r.metadata), r.document or "") for r in collection.iter_records(documents=True)
    }


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "handbook"
    (root / "src").mkdir(parents=True)
    (root / "guide.md").write_text("# Guide\n\nHow the kestrel hunts.\n\n## More\n\nIt hovers.\n")
    (root / "src" / "tool.py").write_text("def hover():\n    return 'kestrel'\n")
    (root / "NOTES.txt").write_text("plain words about falcons\n")
    for path in root.rglob("*.*"):
        set_mtime(path, MTIME)
    return root


def test_every_record_has_the_ingest_design_s_fields(
    checkout: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    api.ingest([api.source_for(checkout)], settings, embedder=embedder)
    stored = _records(settings)
    assert stored
    for meta, document in stored.values():
        assert meta["char_count"] == len(document)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(meta["ingested_at"]))
        assert meta["last_modified_mtime"] == pytest.approx(MTIME)
        assert not set(IDENTITY_FIELDS) & set(meta)  # no identity, no indexer fields


def test_an_identity_adds_the_repository_indexer_s_fields(
    checkout: Path, cli_env: dict[str, str]
) -> None:
    ran = invoke_cli(
        ["ingest", str(checkout), "--identity", "acme/handbook@main", "--json"], env=cli_env
    )
    assert ran.returncode == 0, ran.stderr
    settings = api.configure({"provider": "hash"}, cli_env)
    by_path = {str(m["path"]): m for m, _doc in _records(settings).values()}
    # the indexer's namespace id: sha256 of the JSON list [organization, repository, branch]
    namespace = hashlib.sha256(b'["acme","handbook","main"]').hexdigest()
    expected = {
        "guide.md": (".md", "markdown", "markdown"),
        "src/tool.py": (".py", "python", "code"),
        "NOTES.txt": (".txt", "text", "generic"),
    }
    assert set(by_path) == set(expected)
    for path, (extension, file_type, strategy) in expected.items():
        meta = by_path[path]
        assert {k: meta[k] for k in IDENTITY_FIELDS} == {
            "organization": "acme",
            "namespace_id": namespace,
            "file_name": path.rsplit("/", 1)[-1],
            "file_extension": extension,
            "file_type": file_type,
            "chunking_strategy": strategy,
            "schema_version": 1,
        }, path
        assert meta["repository"] == "acme/handbook" and meta["branch"] == "main"

    # what an agent sees stays lean: a hit carries none of them (CLI --json here; REST and
    # MCP in test_rest.py and test_mcp.py), though `--where` filters on them
    found = invoke_cli(["search", "kestrel", "--json", "--where", "file_type=python"], env=cli_env)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert [h["path"] for h in hits] == ["src/tool.py"]
    assert not RECORD_FIELDS & set(hits[0]["metadata"]), hits[0]["metadata"]


def test_the_fields_change_no_record_hash_and_an_unchanged_rerun_writes_nothing(
    checkout: Path, settings: Settings, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    identity = {"identity": ("acme", "handbook", "main")}
    plain_dir = settings.data_dir.parent / "plain"
    plain = api.resolve_settings(
        {"data_dir": str(plain_dir), "provider": "hash"}, {"CHROMASYNC_COLLECTIONS": "shared"}
    )
    api.ingest([api.source_for(checkout, "handbook")], plain, embedder=embedder)
    api.ingest([api.source_for(checkout, "handbook", **identity)], settings, embedder=embedder)
    first = _records(settings)
    # with or without the fields, at another time: the same records hash the same
    hashes = {i: m[RECORD_HASH_KEY] for i, (m, _d) in first.items()}
    assert hashes == {i: m[RECORD_HASH_KEY] for i, (m, _d) in _records(plain).items()}

    writes: list[int] = []
    real_upsert = Collection.upsert

    def counted(self: Collection, records: Any, *args: Any, **kwargs: Any) -> Any:
        writes.append(len(records))
        return real_upsert(self, records, *args, **kwargs)

    monkeypatch.setattr(Collection, "upsert", counted)
    later = 2_000_000_000 * 10**9  # another second: a new ingested_at for anything written
    monkeypatch.setattr(planning, "time", SimpleNamespace(time_ns=lambda: later))
    for path in checkout.rglob("*.*"):  # touched: every file is read again
        os.utime(path, (MTIME + 60, MTIME + 60))
    options = api.default_options(settings, checksum=True)
    spec = api.source_for(checkout, "handbook", **identity)
    [again] = api.ingest([spec], settings, options, embedder=embedder)
    assert (again.chunks_embedded, again.chunks_reused, again.files_updated) == (0, 0, 0)
    assert writes == [] and _records(settings) == first  # nothing written, ingested_at kept

    (checkout / "guide.md").write_text("# Guide\n\nHow the kestrel hunts, now longer.\n")
    set_mtime(checkout / "guide.md", MTIME + 120)
    [edited] = api.ingest([spec], settings, options, embedder=embedder)
    assert edited.files_updated == 1 and writes
    changed = {m["path"]: m for m, _d in _records(settings).values()}
    assert changed["guide.md"]["ingested_at"] == "2033-05-18T03:33:20Z"
    assert changed["guide.md"]["last_modified_mtime"] == pytest.approx(MTIME + 120)
    assert changed["NOTES.txt"]["ingested_at"] == first_ingested(first, "NOTES.txt")


def first_ingested(records: dict[str, tuple[dict[str, Any], str]], path: str) -> object:
    return next(m["ingested_at"] for m, _d in records.values() if m["path"] == path)
