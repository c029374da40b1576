"""Files that share a front-matter identity (`identity_key: record_uuid`): a copy, a rename,
a deletion. Each file is indexed under its own path; deleting one never loses the other
(`plan/identities.py`). A hypothesis machine then copies, renames, edits and deletes such
files at random and checks the collection against the disk after every ingest.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import NotFound
from chromasync.records import IngestSummary
from chromasync.state.manifest import State

from ..conftest import age_tree

LABEL = "kb"


def _note(uuid: str, marker: str) -> str:
    return f"---\nrecord_uuid: {uuid}\n---\n# Note\n\nThe grinder needs calibrating. {marker}\n"


def _records(settings: Settings) -> list[tuple[str, dict[str, object], str]]:
    try:
        collection = api.open_store(settings).collection(settings.collection, create=False)
    except NotFound:
        return []
    return [
        (r.id, dict(r.metadata), r.document or "") for r in collection.iter_records(documents=True)
    ]


def _ingest(root: Path, settings: Settings, embedder: HashEmbedder) -> IngestSummary:
    spec = api.source_for(root, LABEL, identity_key="record_uuid")
    [summary] = api.ingest([spec], settings, embedder=embedder)
    return summary


def _found(settings: Settings, word: str) -> set[str]:
    """The paths keyword search cites for `word` (identical texts: one hit, "also at")."""
    hits = api.search(word, settings, k=10, mode="keyword")
    return {p for h in hits for p in (h.path, *h.also_at)}


@pytest.mark.parametrize("plan_ahead", ["off", "on"])
def test_a_copy_and_its_deletion_lose_nothing(
    tmp_path: Path, embedder: HashEmbedder, plan_ahead: str
) -> None:
    """Planned in this process, and in a second one (`sync/ahead.py`)."""
    settings = resolve_settings(
        {"data_dir": str(tmp_path / "data"), "provider": "hash", "plan_ahead": plan_ahead},
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    root = tmp_path / "kb"
    root.mkdir()
    (root / "original.md").write_text(_note("u-1", "kestrel"))
    _ingest(root, settings, embedder)
    shutil.copy(root / "original.md", root / "copy.md")
    copied = _ingest(root, settings, embedder)
    # both indexed, each under its own path; the copy's claim is a counted warning
    assert copied.warnings == {"identity-duplicate": 1}
    assert _found(settings, "kestrel") == {"original.md", "copy.md"}
    (root / "copy.md").unlink()
    gone = _ingest(root, settings, embedder)
    assert gone.files_deleted == 1
    assert _found(settings, "kestrel") == {"original.md"}  # it was lost with the copy
    assert all(check.ok for check in api.verify(settings))
    again = _ingest(root, settings, embedder)
    assert (again.files_new, again.files_updated, again.files_deleted) == (0, 0, 0)


def test_the_next_claimant_takes_over_a_vanished_holder(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """A copy that sorts first is still the duplicate; when the holder goes, the copy is
    re-written under the identity (its records keyed by it, as a clean run keys them)."""
    root = tmp_path / "kb"
    root.mkdir()
    (root / "original.md").write_text(_note("u-1", "kestrel"))
    _ingest(root, settings, embedder)
    held = {i for i, m, _ in _records(settings) if m["path"] == "original.md"}
    (root / "a-copy.md").write_text(_note("u-1", "osprey"))
    age_tree(root)  # not racily clean: the copy is read again only to take the identity
    _ingest(root, settings, embedder)
    assert {m["ref_doc_id"] for _, m, _ in _records(settings)} == {"u-1", "a-copy.md"}
    (root / "original.md").unlink()
    calls = embedder.calls
    _ingest(root, settings, embedder)
    rows = _records(settings)
    assert {(m["path"], m["ref_doc_id"], m["document_id"]) for _, m, _ in rows} == {
        ("a-copy.md", "u-1", "u-1")
    }
    assert embedder.calls == calls  # its chunk was embedded once, when it arrived
    assert held.isdisjoint(i for i, _, _ in rows)
    assert all(check.ok for check in api.verify(settings))


def test_records_an_older_release_let_two_files_share_are_kept(
    tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """Rows that list the same records (written before this fix): deleting one file
    re-writes the other, never deletes its records."""
    root = tmp_path / "kb"
    root.mkdir()
    (root / "original.md").write_text(_note("u-1", "kestrel"))
    (root / "copy.md").write_text(_note("u-1", "kestrel"))
    _ingest(root, settings, embedder)
    with State.open(settings.data_dir) as state:  # the old behaviour, made by hand:
        rows = state.files(settings.collection, LABEL)  # the copy lists the original's IDs
        shared = replace(rows["copy.md"], records=rows["original.md"].records)
        state.commit_files(settings.collection, LABEL, [shared], {})
    (root / "copy.md").unlink()
    _ingest(root, settings, embedder)
    assert _found(settings, "kestrel") == {"original.md"}
    assert all(check.ok for check in api.verify(settings))


# -- the property ---------------------------------------------------------------------------

NAMES = ("a.md", "b.md", "c.md", "sub/d.md")
UUIDS = ("u-1", "u-2")
WORDS = ("kestrel", "osprey", "merlin", "harrier", "hobby", "buzzard", "kite", "falcon")


class IdentityMachine(RuleBasedStateMachine):
    """Files share two identities; each carries a marker word no other file has."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="identity-"))
        self.root = self.tmp / "kb"
        self.root.mkdir()
        self.settings = resolve_settings(
            {"data_dir": str(self.tmp / "data"), "provider": "hash"},
            {"CHROMASYNC_COLLECTIONS": "shared"},
        )
        self.embedder = HashEmbedder()
        self.files: dict[str, tuple[str, str]] = {}  # path -> (uuid, marker)
        self.clock = 1_600_000_000

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _write(self, rel: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_note(*self.files[rel]))
        self.clock += 7
        os.utime(path, ns=(self.clock * 10**9, self.clock * 10**9))

    def _free_word(self) -> str | None:
        used = {m for _, m in self.files.values()}
        return next((w for w in WORDS if w not in used), None)

    @initialize(uuid=st.sampled_from(UUIDS))
    def start(self, uuid: str) -> None:
        self.files["a.md"] = (uuid, "kestrel")
        self._write("a.md")
        self.ingest()

    @rule(name=st.sampled_from(NAMES), uuid=st.sampled_from(UUIDS))
    def add(self, name: str, uuid: str) -> None:
        word = self._free_word()
        if word is not None:
            self.files[name] = (uuid, word)
            self._write(name)
        self.ingest()

    @precondition(lambda self: self.files)
    @rule(index=st.integers(0, 9), name=st.sampled_from(NAMES))
    def copy(self, index: int, name: str) -> None:
        """A copy with its identity; its marker is its own, so each file can be found."""
        source = sorted(self.files)[index % len(self.files)]
        word = self._free_word()
        if word is not None and name != source:
            self.files[name] = (self.files[source][0], word)
            self._write(name)
        self.ingest()

    @precondition(lambda self: self.files)
    @rule(index=st.integers(0, 9), name=st.sampled_from(NAMES))
    def rename(self, index: int, name: str) -> None:
        source = sorted(self.files)[index % len(self.files)]
        if name != source:
            (self.root / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.root / source, self.root / name)
            self.files[name] = self.files.pop(source)
        self.ingest()

    @precondition(lambda self: len(self.files) > 1)  # an emptied source deletes nothing
    @rule(index=st.integers(0, 9))
    def delete(self, index: int) -> None:
        rel = sorted(self.files)[index % len(self.files)]
        (self.root / rel).unlink()
        del self.files[rel]
        self.ingest()

    @precondition(lambda self: self.files)
    @rule(index=st.integers(0, 9), uuid=st.sampled_from(UUIDS))
    def change_identity(self, index: int, uuid: str) -> None:
        rel = sorted(self.files)[index % len(self.files)]
        self.files[rel] = (uuid, self.files[rel][1])
        self._write(rel)
        self.ingest()

    def ingest(self) -> None:
        """After each step: the collection against the files on disk."""
        _ingest(self.root, self.settings, self.embedder)
        rows = _records(self.settings)
        by_path: dict[str, str] = {}
        for _, meta, text in rows:
            by_path[str(meta["path"])] = by_path.get(str(meta["path"]), "") + text
        # every file on disk, under its own path, with its own text; nothing stale
        assert set(by_path) == set(self.files)
        for rel, (uuid, word) in self.files.items():
            assert word in by_path[rel], rel
            assert {m["document_id"] for _, m, _ in rows if m["path"] == rel} == {uuid}
        # each identity claimed on disk keys the records of exactly one of its claimants
        keyed = {(m["ref_doc_id"], m["path"]) for _, m, _ in rows if m["ref_doc_id"] in UUIDS}
        assert sorted(k for k, _ in keyed) == sorted({u for u, _ in self.files.values()})
        assert all(self.files[str(path)][0] == uuid for uuid, path in keyed)
        for check in api.verify(self.settings):
            assert check.ok, check.as_json()
        word = min(w for _, w in self.files.values())
        assert next(rel for rel, (_, w) in self.files.items() if w == word) in _found(
            self.settings, word
        )
        again = _ingest(self.root, self.settings, self.embedder)
        assert (again.files_new, again.files_updated, again.files_deleted) == (0, 0, 0)


IdentityMachine.TestCase.settings = settings(
    max_examples=8,
    stateful_step_count=5,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
test_shared_identities_match_the_disk = IdentityMachine.TestCase
