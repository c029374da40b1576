"""Planning (`plan.triage`), pure: triage by stat, the writes of one file, the mass-deletion
guard and record IDs, each against its documented behaviour."""

from __future__ import annotations

import hashlib
import json
import pickle
import re
from dataclasses import replace
from typing import Any

import pytest

from chromasync.corpus.links import MAX_FILE_LINKS, MAX_LINKS
from chromasync.errors import SourceError
from chromasync.metakeys import (
    BOOKKEEPING_KEYS,
    CHUNK_HASH_KEY,
    FILE_HASH_KEY,
    FILE_VERSION_KEY,
    LEGACY_NAMES,
    OWNER_KEY,
    RECORD_FIELDS,
    RECORD_HASH_KEY,
    normalise_for_hash,
)
from chromasync.plan.packed import Packer, record_id
from chromasync.plan.triage import (
    MASS_DELETE_MIN,
    RACY_WINDOW_NS,
    RecordContext,
    build_records,
    check_deletions,
    deletions,
    id_prefix,
    is_racy,
    namespace_id,
    plan_file,
    triage,
)
from chromasync.records import Chunk, Discovery, Document, FileStat, FileState, RecordRef, Skip

OLD = 1_600_000_000 * 10**9
CTX = RecordContext(source="notes", source_kind="notes", embedding_model="hash-v1")


def _stat(rel: str = "a.md", **kw: int) -> FileStat:
    fields: dict[str, Any] = {"size": 10, "mtime_ns": OLD, "ctime_ns": OLD + 5, "inode": 42}
    fields.update(kw)
    return FileStat(rel, "/root/" + rel, **fields)


def _state(rel: str = "a.md", **kw: Any) -> FileState:
    fields: dict[str, Any] = {
        "size": 10,
        "mtime_ns": OLD,
        "file_hash": "h",
        "version": 1,
        "checked_ns": OLD + 10 * RACY_WINDOW_NS,
        "records": (RecordRef(f"{rel}-0", "c", "r"),),
        "ctime_ns": OLD + 5,
        "inode": 42,
    }
    fields.update(kw)
    return FileState(rel, **fields)


# -- triage: what stat alone decides ---------------------------------------------------------


@pytest.mark.parametrize(
    ("known", "seen", "checksum", "verdict"),
    [
        pytest.param({}, {}, False, "unchanged", id="same-stat"),
        pytest.param({}, {"size": 11}, False, "read", id="size"),
        pytest.param({}, {"mtime_ns": OLD + 1}, False, "read", id="mtime"),
        pytest.param({}, {"ctime_ns": OLD + 6}, False, "read", id="ctime-rewrite-restored"),
        pytest.param({}, {"inode": 43}, False, "read", id="inode-replaced"),
        pytest.param({"checked_ns": OLD + RACY_WINDOW_NS}, {}, False, "read", id="racy"),
        pytest.param(
            {"checked_ns": OLD + RACY_WINDOW_NS + 1}, {}, False, "unchanged", id="settled"
        ),
        pytest.param({}, {}, True, "read", id="checksum-reads-all"),
        pytest.param({"skip_reason": "private", "records": ()}, {}, False, "skip", id="kept-skip"),
        pytest.param(
            {"skip_reason": "private", "records": ()}, {"size": 9}, False, "read", id="skip-edited"
        ),
        pytest.param(None, {}, False, "read", id="new"),
    ],
)
def test_triage_one_file(
    known: dict[str, Any] | None, seen: dict[str, int], checksum: bool, verdict: str
) -> None:
    manifest = {} if known is None else {"a.md": _state(**known)}
    result = triage(Discovery((_stat(**seen),), ()), manifest, checksum=checksum)
    got = {
        "unchanged": result.unchanged == ("a.md",),
        "read": [f.rel_path for f in result.to_read] == ["a.md"],
        "skip": dict(result.remembered_skips) == {"a.md": "private"},
    }
    assert got == {name: name == verdict for name in got}
    assert result.gone == ()


@pytest.mark.parametrize(
    ("checked", "racy"),
    [(OLD, True), (OLD + RACY_WINDOW_NS, True), (OLD + RACY_WINDOW_NS + 1, False)],
)
def test_is_racy(checked: int, racy: bool) -> None:
    assert is_racy(_state(checked_ns=checked)) is racy


MANIFEST = {p: _state(p) for p in ("a.md", "docs/b.md", "docs2/c.md", "d.md")}


@pytest.mark.parametrize(
    ("present", "skipped", "unreadable", "gone"),
    [
        pytest.param(("a.md", "docs/b.md", "docs2/c.md", "d.md"), (), (), (), id="all-there"),
        pytest.param((), (), (), ("a.md", "d.md", "docs/b.md", "docs2/c.md"), id="all-gone-sorted"),
        pytest.param(
            ("a.md",),
            (Skip("d.md", "permission-denied"),),
            (),
            ("docs/b.md", "docs2/c.md"),
            id="transient-skip-kept",
        ),
        pytest.param(
            ("a.md",),
            (Skip("d.md", "too-large"),),
            (),
            ("d.md", "docs/b.md", "docs2/c.md"),
            id="lasting-skip-deleted",
        ),
        pytest.param(("a.md", "d.md"), (), ("docs",), ("docs2/c.md",), id="unreadable-folder"),
        pytest.param((), (), ("",), (), id="unreadable-root-protects-all"),
    ],
)
def test_triage_gone(
    present: tuple[str, ...],
    skipped: tuple[Skip, ...],
    unreadable: tuple[str, ...],
    gone: tuple[str, ...],
) -> None:
    discovery = Discovery(tuple(_stat(p) for p in present), skipped, unreadable)
    assert triage(discovery, MANIFEST).gone == gone


# -- records: IDs, metadata, the writes of one file -----------------------------------------


def _doc(
    texts: tuple[str, ...],
    rel: str = "a.md",
    identity: str | None = None,
    metadata: dict[str, Any] | None = None,
    file_hash: str | None = None,
):
    doc = Document(
        rel_path=rel,
        text="\n".join(texts),
        body_start_line=1,
        file_hash=file_hash or "hash-of-" + "|".join(texts),
        kind="markdown",
        language=None,
        metadata=metadata or {},
        identity=identity,
    )
    chunks = [Chunk(t, n + 1, n + 1, heading=f"H{n}") for n, t in enumerate(texts)]
    return doc, chunks


ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{16}-[0-9a-f]{16}-\d+$")


def test_packed_metadata_reads_as_the_dict_it_packs() -> None:
    """A record's own values win over its document's, each key comes once, and what a
    writer makes of it (`dict`, JSON) is the dict a record held before (issue 40)."""
    pack = Packer({"path": "a.md", "heading": "shared", "tags": ["x"]})
    first = pack({"heading": "Intro", "chunk_index": 0})
    second = pack({"heading": "Use", "chunk_index": 1, "links": ["b.md"]})
    assert dict(first) == {"path": "a.md", "heading": "Intro", "tags": ["x"], "chunk_index": 0}
    assert list(second) == ["path", "tags", "heading", "chunk_index", "links"]
    assert len(second) == 5 and second.get("links") == ["b.md"] and "nope" not in second
    assert first == dict(first) and first != second
    assert json.loads(json.dumps(dict(second))) == dict(second)


def test_a_file_records_at_most_max_file_links_links() -> None:
    """A file's records hold at most `MAX_FILE_LINKS` link targets in all, the first ones
    (600,000 links in 8 MiB were 28 MB of strings held until the file was written)."""
    per_chunk = MAX_LINKS
    texts = tuple(
        " ".join(f"[x](n/{c}-{i}.md)" for i in range(per_chunk))
        for c in range(MAX_FILE_LINKS // per_chunk + 2)
    )
    doc, chunks = _doc(texts)
    records = build_records(doc, chunks, 1, RecordContext("notes", "notes", "m"))
    held = [len(r.metadata.get("links", [])) for r in records]
    assert sum(held) == MAX_FILE_LINKS
    assert held[: MAX_FILE_LINKS // per_chunk] == [per_chunk] * (MAX_FILE_LINKS // per_chunk)
    assert held[-2:] == [0, 0]


@pytest.mark.parametrize(
    ("source", "key", "occurrence"),
    [("notes", "a.md", 0), ("x" * 500, "deep/" * 200 + "f.md", 12345), ("", "", 0)],
)
def test_record_id_shape(source: str, key: str, occurrence: int) -> None:
    rid = record_id(id_prefix(source, key), "f" * 64, occurrence)
    assert ID.match(rid) and rid.endswith(f"-{occurrence}")
    assert len(rid.encode()) <= 64
    assert rid == record_id(id_prefix(source, key), "f" * 64, occurrence)


def test_packed_records_are_the_same_by_every_route() -> None:
    """A file's records are packed (`plan.packed`) and made when asked: by index, slice,
    iteration, `id_rows`, `take` and a pickle (what plan-ahead sends) alike."""
    records = build_records(*_doc(("x", "y", "x")), 1, CTX)
    made = list(records)
    assert [(r.id, r.record_hash) for r in made] == [(i, h) for _, i, h in records.id_rows()]
    assert records[1] == made[1] and list(records[1:]) == made[1:] and records == made
    assert list(records.take([2, 0])) == [made[2], made[0]]
    assert pickle.loads(pickle.dumps(records)) == records
    assert made[0].id.endswith("-0") and made[2].id.endswith("-1")  # equal chunks
    assert made[0].chunk_hash == made[2].chunk_hash != made[1].chunk_hash
    assert [r.metadata["chunk_index"] for r in made] == [0, 1, 2]
    assert made[2].metadata["heading"] == "H2" and made[2].document == "x"


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("a  \nb\t\n", "a\nb"),
        ("\n\nbody\n\n", "body"),
        ("  indented", "  indented"),
        ("a\n\n\nb", "a\n\n\nb"),
    ],
)
def test_normalise_for_hash(text: str, normal: str) -> None:
    assert normalise_for_hash(text) == normal
    if text == normal:  # a record holds its chunk's text once (issue 40: memory)
        assert normalise_for_hash(text) is text


def _ids(rel: str, texts: tuple[str, ...], identity: str | None = None) -> list[str]:
    return [r.id for r in build_records(*_doc(texts, rel, identity), 1, CTX)]


@pytest.mark.parametrize(
    ("before", "after", "same"),
    [
        pytest.param(("a.md", ("x", "y")), ("a.md", ("x", "y")), [True, True], id="stable"),
        pytest.param(("a.md", ("x", "y")), ("a.md", ("x", "z")), [True, False], id="edit-one"),
        pytest.param(("a.md", ("x", "y")), ("a.md", ("x  ", "y")), [True, True], id="trailing"),
        pytest.param(("a.md", ("x", "y")), ("b.md", ("x", "y")), [False, False], id="rename"),
        pytest.param(
            ("a.md", ("x", "y"), "doc-1"),
            ("b.md", ("x", "y"), "doc-1"),
            [True, True],
            id="rename-with-identity",
        ),
    ],
)
def test_which_ids_survive(
    before: tuple[Any, ...], after: tuple[Any, ...], same: list[bool]
) -> None:
    assert [a == b for a, b in zip(_ids(*before), _ids(*after), strict=True)] == same


def test_identical_chunks_get_distinct_ids() -> None:
    ids = _ids("a.md", ("same", "other", "same", "same"))
    assert len(set(ids)) == 4
    assert [i.rsplit("-", 1)[1] for i in ids] == ["0", "0", "1", "2"]


def test_our_metadata_wins_over_front_matter_and_static() -> None:
    doc, chunks = _doc(("x",), metadata={"path": "evil", "title": "T", "team": "front"})
    ctx = replace(
        CTX, static_metadata={"source": "evil", "team": "static"}, extra_metadata={"sha": "c0"}
    )
    [record] = build_records(doc, chunks, 3, ctx)
    meta = record.metadata
    assert (meta["path"], meta["source"], meta[FILE_VERSION_KEY]) == ("a.md", "notes", 3)
    assert (meta["title"], meta["team"], meta["sha"]) == ("T", "static", "c0")
    assert meta[RECORD_HASH_KEY] == record.record_hash
    assert meta[CHUNK_HASH_KEY] == record.chunk_hash


def test_bookkeeping_keys_are_named_as_chromasyncs_own() -> None:
    """Each bookkeeping key is written under its `chromasync_` name only; the record hash
    is the one the older names gave (the rename rewrote no record), and front matter can
    set neither name."""
    front = {"version": "2.1", "chromasync_version": "x", "file_hash": "f", "title": "T"}
    doc, chunks = _doc(("x",), metadata=front)
    [record] = build_records(doc, chunks, 3, CTX)
    meta = dict(record.metadata)
    assert set(BOOKKEEPING_KEYS.values()) <= set(meta)
    assert not set(BOOKKEEPING_KEYS) & set(meta)
    assert all(k.startswith("chromasync_") for k in BOOKKEEPING_KEYS.values())
    assert meta[FILE_VERSION_KEY] == 3 and meta[FILE_HASH_KEY] == doc.file_hash
    older = {LEGACY_NAMES.get(k, k): v for k, v in meta.items()}
    for late in (OWNER_KEY, "document_id", "ref_doc_id", "record_hash", *RECORD_FIELDS):
        older.pop(late, None)
    older["source"] = CTX.source
    digest = json.dumps(older, sort_keys=True, ensure_ascii=False, default=str)
    assert hashlib.sha256((digest + "\x00" + record.document).encode()).hexdigest() == (
        record.record_hash
    )
    assert (meta["chunk_index"], meta["chunk_count"]) == (0, 1)


def test_the_designs_fields_are_written_beside_the_hash_not_in_it() -> None:
    """`char_count`, `ingested_at`, `last_modified_mtime` and an identity's fields: written,
    and no record's hash moves with them (an unchanged chunk written at another time, or
    indexed with an identity, is the same record)."""
    doc, chunks = _doc(("alpha", "beta gamma"))
    bare = build_records(doc, chunks, 1, CTX)
    later = replace(CTX, ingested_at="2030-01-01T00:00:00Z", identity=("acme", "handbook", "main"))
    full = build_records(doc, chunks, 1, later, mtime_ns=1_700_000_000_500_000_000)
    assert [r.record_hash for r in full] == [r.record_hash for r in bare]
    assert [r.id for r in full] == [r.id for r in bare]
    meta = dict(full[1].metadata)
    assert meta["char_count"] == len(full[1].document) and meta["ingested_at"].startswith("2030")
    assert meta["last_modified_mtime"] == 1_700_000_000.5
    assert meta["namespace_id"] == namespace_id("acme", "handbook", "main")
    assert (meta["file_name"], meta["file_extension"], meta["chunking_strategy"]) == (
        "a.md",
        ".md",
        "markdown",
    )
    assert set(RECORD_FIELDS) <= set(meta)
    assert set(RECORD_FIELDS) & set(bare[0].metadata) == {"char_count"}  # no time, no identity


def test_namespace_id_is_the_repository_indexers() -> None:
    """sha256 of the JSON list [organization, repository, branch], no spaces, not
    ASCII-escaped: what chromadb-repo-indexer's `identity.namespace_id` computes."""
    expected = hashlib.sha256('["Ünit","répo","main"]'.encode()).hexdigest()
    assert namespace_id("Ünit", "répo", "main") == expected
    assert namespace_id("a", "b", "c") != namespace_id("a", "b/c", "")


def _previous(texts: tuple[str, ...], version: int = 1, **kw: Any) -> FileState:
    records = build_records(*_doc(texts), version, CTX)
    refs = tuple(RecordRef(r.id, r.chunk_hash, r.record_hash) for r in records)
    return _state(file_hash="hash-of-" + "|".join(texts), version=version, records=refs, **kw)


@pytest.mark.parametrize(
    ("previous", "texts", "ctx", "expected"),
    [
        pytest.param(None, ("x", "y"), CTX, (1, 2, 0, 0, True), id="new"),
        pytest.param(_previous(("x", "y")), ("x", "y"), CTX, (1, 0, 0, 0, False), id="same"),
        # The version moves, so the kept chunk's metadata (not its vector) is rewritten.
        pytest.param(_previous(("x", "y"), 4), ("x", "z"), CTX, (5, 1, 1, 1, False), id="edit"),
        pytest.param(_previous(("x", "y")), ("x",), CTX, (2, 0, 1, 1, False), id="shrink"),
        pytest.param(
            _previous(("x", "y")),
            ("x", "y"),
            replace(CTX, embedding_model="other"),
            (1, 0, 2, 0, False),
            id="metadata-only",
        ),
        pytest.param(
            _state(skip_reason="private", records=(), version=3),
            ("x",),
            CTX,
            (4, 1, 0, 0, True),
            id="was-skipped",
        ),
    ],
)
def test_plan_file(
    previous: FileState | None,
    texts: tuple[str, ...],
    ctx: RecordContext,
    expected: tuple[int, int, int, int, bool],
) -> None:
    doc, chunks = _doc(texts)
    change = plan_file(_stat(), doc, chunks, previous, ctx)
    got = (
        change.version,
        len(change.to_embed),
        len(change.to_rewrite),
        len(change.to_delete),
        change.is_new,
    )
    assert got == expected
    wanted = {r.id for r in change.records}
    before = {r.id for r in previous.records} if previous else set()
    assert {r.id for r in change.to_embed} == wanted - before
    assert set(change.to_delete) == before - wanted
    assert {r.id for r in change.to_rewrite} <= wanted & before


# -- the mass-deletion guard -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("known", "gone", "found", "allow", "refused"),
    [
        (100, MASS_DELETE_MIN, 80, False, False),  # few: always allowed
        (MASS_DELETE_MIN, MASS_DELETE_MIN, 0, False, True),  # all gone, nothing found: vanished
        (1, 1, 0, False, True),  # whatever the source's size
        (1, 1, 0, True, False),
        (1, 1, 1, False, False),  # one file replaced by another: the root is there
        (3, 3, 2, False, False),
        (MASS_DELETE_MIN, MASS_DELETE_MIN - 1, 1, False, False),
        (30, MASS_DELETE_MIN + 1, 9, False, True),  # 21 of 30: most of the source
        (30, 30, 5, False, True),  # most of it, even with new files beside
        (100, 50, 50, False, False),  # half is not "more than half"
        (100, 51, 49, False, True),
        (100, 51, 49, True, False),
        (1000, 499, 501, False, False),
    ],
)
def test_check_deletions(known: int, gone: int, found: int, allow: bool, refused: bool) -> None:
    if refused:
        every = rf"all {known} indexed file\(s\) are gone" if found == 0 else f"{gone} of {known}"
        with pytest.raises(SourceError, match=rf"'notes': {every} .*--allow-mass"):
            check_deletions(known, gone, allow, "notes", found_files=found)
    else:
        check_deletions(known, gone, allow, "notes", found_files=found)


def test_a_record_two_rows_share_goes_with_the_last_of_them() -> None:
    """A record another row still lists is kept (an older release let two files with one
    identity share records; a run cut off while a file took an identity over)."""
    shared = (RecordRef("x", "c", "r"),)
    manifest = {
        "copy.md": _state("copy.md", records=shared),
        "original.md": _state("original.md", records=shared),
        "other.md": _state("other.md"),
    }
    assert deletions([], ["copy.md"], [], manifest, set()) == []
    assert deletions([], ["copy.md", "other.md"], [], manifest, set()) == ["other.md-0"]
    # the other row gone too, skipped, or re-written without it: deleted
    assert deletions([], ["copy.md", "original.md"], [], manifest, set()) == ["x"]
    assert deletions([], ["copy.md"], ["original.md"], manifest, set()) == ["x"]
    assert deletions(["x"], ["copy.md"], [], manifest, set(), {"original.md"}) == ["x"]
    assert deletions(["x"], [], [], manifest, {"x"}, {"original.md"}) == []  # still wanted
