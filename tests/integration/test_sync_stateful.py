"""A stateful property test of incremental sync against a real embedded Chroma.

Hypothesis drives a tree of Markdown files through random steps (add, edit one section,
delete, rename, move between folders, touch, rewrite keeping size and mtime) and syncs it
now and then with `api.ingest` and the `hash` provider. After every sync:

* the collection equals what a clean run over the current tree builds in a fresh data dir
  (same IDs, documents and metadata, `chromasync_version` and `chromasync_record_hash`
  aside, which carry history); nothing orphaned or duplicated at any (path, chunk_index);
* verify finds the manifest, the keyword index, the collection and the disk in agreement;
* only chunk texts never stored before were embedded (a rename, a move, a touch or a
  restored file re-embeds nothing);
* a second sync changes and embeds nothing.

The default profile stays under a minute; `-m slow` runs a bigger one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.errors import NotFound
from chromasync.metakeys import CHUNK_HASH_KEY
from chromasync.records import IngestSummary

from ..conftest import HISTORY_KEYS

LABEL = "notes"
FOLDERS = ("", "guides", "guides/deep", "journal")
NAMES = ("alpha.md", "beta.md", "gamma.md", "delta.md")
#: A small budget, so that a file of a few sections is several chunks and an edit of one
#: section changes only some of them.
FLAGS = {"provider": "hash", "chunk_max_tokens": 40}
#: Sentences drawn from a short list, so identical sections (within and across files)
#: happen often: records of equal text must still get distinct IDs.
SENTENCES = (
    "The grinder needs calibrating after every move.",
    "Feed the starter flour and water each morning.",
    "Coastal roads were icy, so the ride went slowly.",
    "Kites photograph the loop from above on windy days.",
    "Brush the burrs weekly and the espresso stays sweet.",
)
body = st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=4).map(" ".join)
sections = st.lists(body, min_size=1, max_size=5)
tags = st.none() | st.lists(st.sampled_from(["coffee", "bikes", "bread"]), min_size=1, max_size=2)


def render(title: str, parts: list[str], tag_list: list[str] | None) -> str:
    head = f"---\ntitle: {title}\ntags: [{', '.join(tag_list)}]\n---\n" if tag_list else ""
    return (
        head
        + f"# {title}\n\n"
        + "".join(f"## Part {n}\n\n{text}\n\n" for n, text in enumerate(parts))
    )


def settings_for(data_dir: Path) -> Settings:
    return resolve_settings(
        {"data_dir": str(data_dir), **FLAGS}, {"CHROMASYNC_COLLECTIONS": "shared"}
    )


def raw_rows(settings: Settings) -> dict[str, tuple[object, ...]]:
    """Every record with all of its metadata (history included) and its document; a run
    over an empty tree creates no collection."""
    try:
        collection = api.open_store(settings).collection(settings.collection, create=False)
    except NotFound:
        return {}
    return {
        r.id: (tuple(sorted((k, str(v)) for k, v in r.metadata.items())), r.document)
        for r in collection.iter_records(documents=True)
    }


def comparable(settings: Settings) -> dict[str, tuple[object, ...]]:
    """The collection without the metadata that carries history (see conftest.snapshot)."""
    return {
        id_: (tuple((k, v) for k, v in meta if k not in HISTORY_KEYS), document)  # type: ignore[attr-defined]
        for id_, (meta, document) in raw_rows(settings).items()
    }


def positions(rows: Mapping[str, tuple[object, ...]]) -> list[tuple[str, str]]:
    found = []
    for meta, _ in rows.values():
        fields = dict(meta)  # type: ignore[call-overload]
        found.append((fields["path"], fields["chunk_index"]))
    return found


class SyncMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="sync-stateful-"))
        self.root = self.tmp / "tree"
        self.root.mkdir()
        self.settings = settings_for(self.tmp / "data")
        self.embedder = HashEmbedder()
        # The model of the tree: path -> (title, sections, tags).
        self.files: dict[str, tuple[str, list[str], list[str] | None]] = {}
        self.clock = 1_600_000_000  # explicit, old, distinct mtimes: never racily clean
        self.stored_texts: set[str] = set()  # chunk hashes ever stored
        self.syncs = 0

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- the tree ------------------------------------------------------------------------

    def _tick(self) -> int:
        self.clock += 7
        return self.clock * 1_000_000_000

    def _write(self, rel: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(*self.files[rel]), encoding="utf-8")
        stamp = self._tick()
        os.utime(path, ns=(stamp, stamp))

    def _pick(self, index: int) -> str:
        return sorted(self.files)[index % len(self.files)]

    @initialize(
        tree=st.lists(
            st.tuples(st.sampled_from(FOLDERS), st.sampled_from(NAMES), sections, tags),
            max_size=4,
        )
    )
    def start_synced(self, tree: list[tuple[str, str, list[str], list[str] | None]]) -> None:
        """Start from a synced tree, so that every step can change something indexed."""
        for folder, name, parts, tag in tree:
            self.add(folder, name, parts, tag)
        self.sync()

    @rule(folder=st.sampled_from(FOLDERS), name=st.sampled_from(NAMES), parts=sections, tag=tags)
    def add(self, folder: str, name: str, parts: list[str], tag: list[str] | None) -> None:
        rel = f"{folder}/{name}" if folder else name
        self.files[rel] = (name.removesuffix(".md").title(), parts, tag)
        self._write(rel)  # an existing path is overwritten: a whole-file edit

    @precondition(lambda self: self.files)
    @rule(index=st.integers(0, 50), section=st.integers(0, 10), text=body)
    def edit_one_section(self, index: int, section: int, text: str) -> None:
        rel = self._pick(index)
        title, parts, tag = self.files[rel]
        parts = list(parts)
        parts[section % len(parts)] = text
        self.files[rel] = (title, parts, tag)
        self._write(rel)

    @precondition(lambda self: self.files)
    @rule(index=st.integers(0, 50), section=st.integers(0, 10))
    def rewrite_keeping_size_and_mtime(self, index: int, section: int) -> None:
        """Flip the case of one section's first letter and set the mtime back: size and
        mtime are as recorded, only ctime (and the content) tells; the sync must see it."""
        rel = self._pick(index)
        path = self.root / rel
        before = path.stat()
        title, parts, tag = self.files[rel]
        parts = list(parts)
        n = section % len(parts)
        parts[n] = parts[n][0].swapcase() + parts[n][1:]
        self.files[rel] = (title, parts, tag)
        path.write_text(render(title, parts, tag), encoding="utf-8")
        assert path.stat().st_size == before.st_size
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

    # One file always stays: a source whose every file is gone looks like a vanished mount,
    # and its sync is refused by design (tests/integration/test_nothing_lost.py).
    @precondition(lambda self: len(self.files) > 1)
    @rule(index=st.integers(0, 50))
    def delete(self, index: int) -> None:
        rel = self._pick(index)
        (self.root / rel).unlink()
        del self.files[rel]

    @precondition(lambda self: self.files)
    @rule(index=st.integers(0, 50), name=st.sampled_from(NAMES))
    def rename(self, index: int, name: str) -> None:
        rel = self._pick(index)
        folder = rel.rpartition("/")[0]
        self._move(rel, f"{folder}/{name}" if folder else name)

    @precondition(lambda self: self.files)
    @rule(index=st.integers(0, 50), folder=st.sampled_from(FOLDERS))
    def move(self, index: int, folder: str) -> None:
        rel = self._pick(index)
        name = rel.rpartition("/")[2]
        self._move(rel, f"{folder}/{name}" if folder else name)

    def _move(self, rel: str, target: str) -> None:
        if target == rel:
            return
        (self.root / target).parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.root / rel, self.root / target)  # over an existing file: it is gone
        self.files[target] = self.files.pop(rel)

    @precondition(lambda self: self.files)
    @rule(index=st.integers(0, 50))
    def touch(self, index: int) -> None:
        stamp = self._tick()
        os.utime(self.root / self._pick(index), ns=(stamp, stamp))

    # -- sync and its invariants ---------------------------------------------------------

    def _ingest(self) -> IngestSummary:
        [summary] = api.ingest(
            [api.source_for(self.root, LABEL)], self.settings, embedder=self.embedder
        )
        return summary

    @rule()
    def sync(self) -> None:
        before = self.embedder.texts_embedded
        summary = self._ingest()
        embedded = self.embedder.texts_embedded - before
        assert summary.files_seen == len(self.files)
        assert summary.chunks_embedded == embedded

        rows = raw_rows(self.settings)
        hashes = {dict(meta)[CHUNK_HASH_KEY] for meta, _ in rows.values()}  # type: ignore[call-overload]
        assert embedded <= len(hashes - self.stored_texts), "re-embedded a text already stored"
        self.stored_texts |= hashes

        # The collection equals a clean run of the current tree, nothing orphaned.
        self.syncs += 1
        clean = self.tmp / f"clean-{self.syncs}"  # never reused: Chroma caches clients by path
        clean_settings = settings_for(clean)
        api.ingest([api.source_for(self.root, LABEL)], clean_settings, embedder=HashEmbedder())
        assert comparable(self.settings) == comparable(clean_settings)
        shutil.rmtree(clean)
        # Nothing duplicated: one record per (path, chunk_index).
        places = positions(rows)
        assert len(places) == len(set(places))
        assert {p for p, _ in places} == {rel for rel, (_, parts, _) in self.files.items() if parts}
        # The manifest, keyword index, collection and disk agree.
        for check in api.verify(self.settings):
            assert check.ok, check.as_json()

        # A second sync changes and embeds nothing.
        again = self._ingest()
        assert (again.chunks_embedded, again.files_new, again.files_updated) == (0, 0, 0)
        assert again.files_deleted == again.chunks_deleted == 0
        assert again.files_unchanged == len(self.files)
        assert raw_rows(self.settings) == rows

    @invariant()
    def tree_matches_model(self) -> None:
        on_disk = {p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file()}
        assert on_disk == set(self.files)


# The default suite replays the same 15 programs on every run (CI must not turn red on a
# program no one has seen); the slow profile below explores new ones each time.
SyncMachine.TestCase.settings = settings(
    max_examples=15,
    stateful_step_count=10,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_sync_matches_a_clean_run = SyncMachine.TestCase


class BigSyncMachine(SyncMachine):
    pass


BigSyncMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_sync_matches_a_clean_run_long = pytest.mark.slow(BigSyncMachine.TestCase)
