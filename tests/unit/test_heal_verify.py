"""Heal (`sync.heal.rebuild_manifest`) and verify's comparison (`sync.verify.compare_source`),
pure: records in, a manifest or a list of differences out."""

from __future__ import annotations

from typing import Any

import pytest

from chromasync.metakeys import stored_key
from chromasync.plan.triage import RACY_WINDOW_NS, triage
from chromasync.records import Discovery, FileStat, FileState, RecordRef
from chromasync.store.chroma import StoredRecord
from chromasync.sync.heal import rebuild_manifest
from chromasync.sync.verify import compare_source
from chromasync.versions import CHUNKING_VERSION

OLD = 1_600_000_000 * 10**9


def _row(
    rid: str, path: str, index: int, count: int, older: bool = False, **meta: Any
) -> StoredRecord:
    """A stored record; `meta` by the bookkeeping keys' older names (`file_hash=`), which
    it holds under today's, or, `older`, under those names (an index not upgraded yet)."""
    metadata: dict[str, Any] = {
        "path": path,
        "chunk_index": index,
        "chunk_count": count,
        "file_hash": "h-" + path,
        "chunk_hash": "c-" + rid,
        "record_hash": "r-" + rid,
        "version": 1,
        "chunking_version": CHUNKING_VERSION,
    }
    metadata.update(meta)
    if not older:
        metadata = {stored_key(k): v for k, v in metadata.items()}
    return StoredRecord(rid, metadata, "text of " + rid)


def _file(path: str, *ids: str, **kw: Any) -> FileState:
    fields: dict[str, Any] = {
        "size": 10,
        "mtime_ns": OLD,
        "file_hash": "h-" + path,
        "version": 1,
        "checked_ns": OLD + 10 * RACY_WINDOW_NS,
        "records": tuple(RecordRef(i, "c-" + i, "r-" + i) for i in ids),
        "ctime_ns": OLD + 5,
        "inode": 7,
    }
    fields.update(kw)
    return FileState(path, **fields)


# -- heal ------------------------------------------------------------------------------------

TWO = [_row("a1", "a.md", 1, 2), _row("a0", "a.md", 0, 2)]


@pytest.mark.parametrize(
    ("rows", "consistent"),
    [
        pytest.param(TWO, True, id="whole"),
        pytest.param(TWO[:1], False, id="a-chunk-missing"),
        pytest.param([*TWO, _row("a2", "a.md", 2, 3)], False, id="counts-disagree"),
        pytest.param([TWO[0], _row("a0", "a.md", 0, 2, file_hash="h-new")], False, id="two-hashes"),
        pytest.param([_row("a0", "a.md", 0, 1, file_hash="")], False, id="no-hash"),
        pytest.param([TWO[0], _row("a0", "a.md", 1, 2)], False, id="index-twice"),
    ],
)
def test_heal_marks_half_written_files(rows: list[StoredRecord], consistent: bool) -> None:
    rebuilt = rebuild_manifest(rows, {})
    state = rebuilt.files["a.md"]
    assert (state.file_hash == "h-a.md") is consistent
    assert rebuilt.inconsistent == (() if consistent else ("a.md",))
    assert [r.id for r in state.records] == [r.id for r in rebuilt.records["a.md"]]
    assert (state.size, state.mtime_ns, state.checked_ns) == (-1, -1, 0)  # nothing to trust


@pytest.mark.parametrize("older", [False, True], ids=["today", "older-names"])
def test_heal_orders_records_and_keeps_their_hashes_and_the_latest_version(older: bool) -> None:
    rows = [_row("a1", "a.md", 1, 2, older, version=3), _row("a0", "a.md", 0, 2, older, version=2)]
    rebuilt = rebuild_manifest(rows, {})
    state = rebuilt.files["a.md"]
    assert state.records == (RecordRef("a0", "c-a0", "r-a0"), RecordRef("a1", "c-a1", "r-a1"))
    assert state.version == 3
    assert [r.document for r in rebuilt.records["a.md"]] == ["text of a0", "text of a1"]
    assert rebuilt.chunking_versions == {CHUNKING_VERSION}


@pytest.mark.parametrize(
    ("previous", "trusted"),
    [
        pytest.param(_file("a.md", "a0", "a1"), True, id="same-content"),
        pytest.param(_file("a.md", "a0", "a1", file_hash="h-older"), False, id="other-content"),
        pytest.param(None, False, id="unknown"),
    ],
)
def test_heal_keeps_the_stat_of_a_file_whose_content_it_describes(
    previous: FileState | None, trusted: bool
) -> None:
    """`previous` supplies the stat fields, so that an untouched file stays unchanged for
    triage after a heal: without ctime and inode it was re-read, every file, every heal."""
    rebuilt = rebuild_manifest(TWO, {"a.md": previous} if previous else {})
    on_disk = FileStat("a.md", "/r/a.md", 10, OLD, OLD + 5, 7)
    verdict = triage(Discovery((on_disk,), ()), rebuilt.files)
    assert verdict.unchanged == (("a.md",) if trusted else ())
    if trusted:
        assert rebuilt.files["a.md"] == previous


def test_heal_keeps_remembered_skips_and_forgets_the_rest() -> None:
    skipped = _file("p.md", skip_reason="private")
    previous = {"p.md": skipped, "gone.md": _file("gone.md", "g0"), "a.md": _file("a.md", "a0")}
    rebuilt = rebuild_manifest(TWO, previous)
    assert set(rebuilt.files) == {"a.md", "p.md"}
    assert rebuilt.files["p.md"] == skipped


def test_heal_of_nothing_is_empty() -> None:
    rebuilt = rebuild_manifest([], {})
    assert (rebuilt.files, rebuilt.records, rebuilt.inconsistent) == ({}, {}, ())


# -- verify's comparison ---------------------------------------------------------------------

MANIFEST = {
    "a.md": _file("a.md", "a0", "a1"),
    "b.md": _file("b.md", "b0"),
    "p.md": _file("p.md", skip_reason="private"),
}
STORED = [_row("a0", "a.md", 0, 2), _row("a1", "a.md", 1, 2), _row("b0", "b.md", 0, 1)]
KEYWORD = {"a0", "a1", "b0"}
DISK = {p: FileStat(p, "/r/" + p, 10, OLD) for p in ("a.md", "b.md", "p.md")}


@pytest.mark.parametrize(
    ("stored", "keyword", "disk", "problems"),
    [
        pytest.param(STORED, KEYWORD, DISK, {}, id="in-agreement"),
        pytest.param(STORED, KEYWORD, None, {}, id="no-disk-view"),
        pytest.param(STORED[:2], KEYWORD, DISK, {"missing": ("b0",)}, id="missing"),
        pytest.param(
            [*STORED, _row("c0", "c.md", 0, 1)], KEYWORD, DISK, {"orphans": ("c0",)}, id="orphan"
        ),
        pytest.param(
            [_row("a0", "a.md", 0, 2, record_hash="r-other"), *STORED[1:]],
            KEYWORD,
            DISK,
            {"mismatched": ("a0",)},
            id="mismatched",
        ),
        pytest.param(
            [*STORED, _row("a0-old", "a.md", 0, 2)],
            KEYWORD,
            DISK,
            {"orphans": ("a0-old",), "duplicates": ("a0", "a0-old")},
            id="duplicate-position",
        ),
        pytest.param(STORED, {"a0", "a1"}, DISK, {"keyword_missing": ("b0",)}, id="kw-missing"),
        pytest.param(STORED, {*KEYWORD, "z"}, DISK, {"keyword_orphans": ("z",)}, id="kw-orphan"),
        pytest.param(
            STORED,
            KEYWORD,
            {**DISK, "a.md": FileStat("a.md", "/r/a.md", 11, OLD)},
            {"stale_files": ("a.md",)},
            id="stale-size",
        ),
        pytest.param(
            STORED,
            KEYWORD,
            {**DISK, "b.md": FileStat("b.md", "/r/b.md", 10, OLD + 1)},
            {"stale_files": ("b.md",)},
            id="stale-mtime",
        ),
        pytest.param(
            STORED,
            KEYWORD,
            {**DISK, "new.md": FileStat("new.md", "/r/new.md", 1, OLD)},
            {"unindexed_files": ("new.md",)},
            id="unindexed",
        ),
        pytest.param(
            STORED,
            KEYWORD,
            {"a.md": DISK["a.md"], "p.md": DISK["p.md"]},
            {"gone_files": ("b.md",)},
            id="gone",
        ),
        pytest.param(
            STORED,
            KEYWORD,
            {"a.md": DISK["a.md"], "b.md": DISK["b.md"]},
            {},
            id="skipped-file-gone-is-fine",
        ),
    ],
)
def test_compare_source(
    stored: list[StoredRecord],
    keyword: set[str],
    disk: dict[str, FileStat] | None,
    problems: dict[str, tuple[str, ...]],
) -> None:
    check = compare_source("coll", "notes", MANIFEST, stored, keyword, disk)
    found = {name: getattr(check, name) for name, count in check.problem_counts().items() if count}
    assert found == problems
    assert check.ok is (not problems)
    assert (check.collection, check.source, check.files, check.records) == ("coll", "notes", 2, 3)
    as_json = check.as_json()
    assert as_json["ok"] is check.ok
    assert as_json["examples"] == {k: list(v) for k, v in problems.items()}
