"""Preflight: planned records checked against a store's limits (pure)."""

from __future__ import annotations

import pytest

from chromasync.corpus.frontmatter import RESERVED_KEYS
from chromasync.errors import StoreError
from chromasync.plan.limits import (
    CLOUD_LIMITS,
    DEFAULT_BATCH,
    SKIP_REASON,
    check_limits,
    combine_limits,
)
from chromasync.records import ChunkRecord, FileChange, FileStat, StoreLimits

OURS = {k: 1 for k in sorted(RESERVED_KEYS) if k not in ("symbol", "document_id")}


def _record(rid: str, document: str = "text", user_keys: int = 0) -> ChunkRecord:
    metadata: dict[str, str | int] = dict(OURS)
    metadata.update({f"user_{i:02d}": i for i in range(user_keys)})
    return ChunkRecord(rid, "c" * 64, "r" * 64, document, metadata)


def _change(path: str, *records: ChunkRecord, embed: bool = True) -> FileChange:
    stat = FileStat(path, "/x/" + path, 10, 1)
    return FileChange(
        path, stat, "f" * 64, 1, records, records if embed else (), (), (), is_new=True
    )


def test_no_limits_changes_nothing() -> None:
    changes = [_change("a.md", _record("a-1", user_keys=40))]
    checked = check_limits(changes, StoreLimits(max_batch=5461))
    assert checked.changes == tuple(changes)
    assert checked.batch_size == 5461
    assert checked.keys_dropped == 0 and not checked.oversized and not checked.notes


@pytest.mark.parametrize("advertised", [None, -1, 0])
def test_no_advertised_batch_adapts_to_default(advertised: int | None) -> None:
    checked = check_limits([_change("a.md", _record("a-1"))], StoreLimits(max_batch=advertised))
    assert checked.batch_size == DEFAULT_BATCH
    assert any("no maximum batch size" in n for n in checked.notes)


def test_cloud_limits_trim_user_keys_and_keep_ours() -> None:
    record = _record("a-1", user_keys=40)
    checked = check_limits([_change("a.md", record)], CLOUD_LIMITS)
    [change] = checked.changes
    [kept] = change.records
    assert len(kept.metadata) == CLOUD_LIMITS.max_metadata_keys
    assert set(OURS) <= set(kept.metadata)
    user = sorted(k for k in kept.metadata if k.startswith("user_"))
    assert user == [f"user_{i:02d}" for i in range(len(user))]  # the first in sorted order
    assert checked.keys_dropped == len(record.metadata) - 32
    assert change.to_embed == change.records  # the written records are the trimmed ones
    assert kept.record_hash == record.record_hash  # hashed before trimming: stable
    assert checked.batch_size == 300
    assert any("dropped" in n for n in checked.notes)


def test_trim_is_deterministic() -> None:
    changes = [_change("a.md", _record("a-1", user_keys=25), _record("a-2", user_keys=25))]
    assert check_limits(changes, CLOUD_LIMITS) == check_limits(changes, CLOUD_LIMITS)


def test_dropped_keys_counted_only_for_written_records() -> None:
    change = _change("a.md", _record("a-1", user_keys=20), embed=False)
    checked = check_limits([change], CLOUD_LIMITS)
    assert checked.keys_dropped == 0
    assert len(checked.changes[0].records[0].metadata) == 32


def test_oversized_document_skips_its_file() -> None:
    big = "x" * (16 * 1024 + 1)
    changes = [_change("big.md", _record("b-1", big)), _change("ok.md", _record("o-1"))]
    checked = check_limits(changes, CLOUD_LIMITS)
    assert [c.rel_path for c in checked.changes] == ["ok.md"]
    assert set(checked.oversized) == {"big.md"}
    assert "16385 bytes" in checked.oversized["big.md"]
    assert any(SKIP_REASON in n for n in checked.notes)


def test_document_limit_counts_bytes_not_characters() -> None:
    text = "é" * 9000  # 9000 characters, 18000 bytes
    checked = check_limits([_change("e.md", _record("e-1", text))], CLOUD_LIMITS)
    assert "e.md" in checked.oversized


def test_id_too_long_fails_early() -> None:
    limits = StoreLimits(max_id_bytes=32, name="Tiny Chroma")
    with pytest.raises(StoreError, match="Tiny Chroma accepts IDs of at most 32 bytes"):
        check_limits([_change("a.md", _record("x" * 64))], limits)


def test_our_ids_fit_cloud() -> None:
    from chromasync.plan.packed import record_id
    from chromasync.plan.triage import id_prefix

    rid = record_id(id_prefix("a source with a long name" * 10, "deep/path" * 50), "f" * 64, 12345)
    assert len(rid.encode()) <= 64 < CLOUD_LIMITS.max_id_bytes  # type: ignore[operator]


@pytest.mark.parametrize(
    ("advertised", "base", "expected"),
    [
        (5461, StoreLimits(), 5461),
        (-1, StoreLimits(), None),
        (None, CLOUD_LIMITS, 300),
        (-1, CLOUD_LIMITS, 300),
        (100, CLOUD_LIMITS, 100),
        (1000, CLOUD_LIMITS, 300),
    ],
)
def test_combine_limits(advertised: int | None, base: StoreLimits, expected: int | None) -> None:
    assert combine_limits(advertised, base).max_batch == expected


@pytest.mark.parametrize(
    ("user_keys", "max_keys", "kept_user", "dropped"),
    [
        (5, len(OURS) + 5, 5, 0),  # exactly at the limit
        (6, len(OURS) + 5, 5, 1),
        (40, 32, 32 - len(OURS), 40 - (32 - len(OURS))),
        (3, len(OURS) - 2, 0, 3),  # fewer slots than our own keys: ours all stay
    ],
)
def test_metadata_key_limit(user_keys: int, max_keys: int, kept_user: int, dropped: int) -> None:
    record = _record("a-1", user_keys=user_keys)
    checked = check_limits([_change("a.md", record)], StoreLimits(max_metadata_keys=max_keys))
    [kept] = checked.changes[0].records
    assert set(OURS) <= set(kept.metadata)
    assert sorted(k for k in kept.metadata if k not in OURS) == [
        f"user_{i:02d}" for i in range(kept_user)
    ]
    assert checked.keys_dropped == dropped


@pytest.mark.parametrize(("size", "stored"), [(16 * 1024, True), (16 * 1024 + 1, False)])
def test_document_limit_boundary(size: int, stored: bool) -> None:
    checked = check_limits([_change("a.md", _record("a-1", "x" * size))], CLOUD_LIMITS)
    assert [c.rel_path for c in checked.changes] == (["a.md"] if stored else [])
    assert ("a.md" not in checked.oversized) is stored
