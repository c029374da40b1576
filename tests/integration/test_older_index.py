"""An index an older chromasync wrote is upgraded by rewriting metadata, never re-embedding.

Its records lack the keys records carry now (the ownership marker, `source` as the file's
path, `document_id`/`ref_doc_id`, `chromasync_context`) and hold the bookkeeping keys
under their older names (`chunk_hash`, not `chromasync_chunk_hash`). The next ingest, or
`chromasync share`, gives every record today's keys, with no file changed: no embedding
call, no vector written, and afterwards each record equals what a fresh ingest of the same
files writes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.metakeys import (
    BOOKKEEPING_KEYS,
    CONTEXT_KEY,
    FILE_HASH_KEY,
    LEGACY_NAMES,
    OWNER_KEY,
)
from chromasync.plan.upgrade import RECORDS_VERSION
from chromasync.retrieve.mirror import KeywordMirror
from chromasync.state.manifest import State
from chromasync.store.peers import UPGRADED_PREFIX

from ..conftest import REPO, age_tree, invoke_cli

#: The keys the release before wrote none of (the marker and `source` as a path came with
#: the ownership marker; the document keys and the context a little later).
NEW_KEYS = (OWNER_KEY, "document_id", "ref_doc_id", CONTEXT_KEY)
GUIDE = """# Guide

Some words about the guide as a whole.

## Install

How to install it, in a few words.

### Linux

{linux}

## Use

{use}
"""


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Markdown with a heading path (trimmed where a chunk starts with its headings, long
    sections split), pages whose first chunk embeds their front-matter description (one
    cut to fit), and real code whose large classes are chunked member by member."""
    root = tmp_path / "corpus"
    root.mkdir()
    linux = "\n\n".join(f"Step {i}: run the installer with option {i} and wait." for i in range(60))
    use = "\n\n".join(f"Use case {i}: the tool does thing {i} for you." for i in range(40))
    (root / "guide.md").write_text(GUIDE.format(linux=linux, use=use))
    (root / "plain.txt").write_text("A plain note without any heading.\n")
    long = " ".join(f"clause {i} of a description that runs on" for i in range(40))
    (root / "bare.md").write_text("---\ndescription: A page of no heading.\n---\n\nJust text.\n")
    for name, description in (("short", "How to brew."), ("long", long)):  # the long one cut
        body = "\n\n".join(f"Paragraph {i} about brewing, step by step." for i in range(30))
        (root / f"{name}.md").write_text(
            f"---\ntitle: Brewing {name}\ndescription: {description}\n---\n\n"
            f"# Brewing\n\n## Kettle\n\n{body}\n"
        )
    for name in ("store/chroma.py", "chunk/layout.py", "sync/planning.py"):
        shutil.copy(REPO / "src" / "chromasync" / name, root / name.replace("/", "_"))
    age_tree(root)
    return root


def _raw(settings: Settings) -> Any:
    return api.open_store(settings)._client.get_collection(settings.collection)


def _snapshot(settings: Settings) -> dict[str, tuple[dict[str, Any], str, list[float]]]:
    got = _raw(settings).get(include=["metadatas", "documents", "embeddings"])
    return {
        rid: (dict(meta), doc, [float(x) for x in vector])
        for rid, meta, doc, vector in zip(
            got["ids"], got["metadatas"], got["documents"], got["embeddings"], strict=True
        )
    }


def _differences(after: dict[str, Any], fresh: dict[str, Any]) -> dict[str, Any]:
    """id -> {key: (after, fresh)} for each metadata key that differs (a readable failure)."""
    out: dict[str, Any] = {}
    for rid, (meta, _, _) in fresh.items():
        got = after.get(rid, ({}, None, None))[0]
        keys = {k for k in set(meta) | set(got) if meta.get(k) != got.get(k)}
        if keys:
            out[rid] = {k: (got.get(k), meta.get(k)) for k in sorted(keys)}
    return out


def _forget_upgrade(settings: Settings) -> None:
    with State.open(settings.data_dir) as state, state.db:
        state.db.execute("DELETE FROM meta WHERE key LIKE 'records_version:%'")


def _older_names(raw: Any) -> None:
    """Put each record's bookkeeping keys back under the names records version 2 and
    before wrote (`chunk_hash`...), values unchanged."""
    got = raw.get(include=["metadatas"])
    renamed = [
        {**{old: meta[new] for old, new in BOOKKEEPING_KEYS.items()}, **dict.fromkeys(LEGACY_NAMES)}
        for meta in got["metadatas"]
    ]
    for at in range(0, len(renamed), 1000):  # within Chroma's batch limit
        raw.update(ids=got["ids"][at : at + 1000], metadatas=renamed[at : at + 1000])
    metas = raw.get(include=["metadatas"])["metadatas"]
    assert all(set(BOOKKEEPING_KEYS) <= set(m) and not set(LEGACY_NAMES) & set(m) for m in metas)


def _keyword_rows(settings: Settings) -> dict[str, dict[str, Any]]:
    with State.open(settings.data_dir, readonly=True) as state:
        rows = state.db.execute("SELECT id, metadata FROM chunks").fetchall()
    return {rid: json.loads(meta) for rid, meta in rows}


def _older_keyword_names(settings: Settings) -> None:
    """The keyword index's rows as records version 2 left them: the older names."""
    with State.open(settings.data_dir) as state, state.db:
        for rid, meta in _keyword_rows(settings).items():
            older = {LEGACY_NAMES.get(k, k): v for k, v in meta.items()}
            state.db.execute(
                "UPDATE chunks SET metadata = ? WHERE id = ?", (json.dumps(older), rid)
            )


def _forget_collection_note(raw: Any) -> None:
    older = {k: v for k, v in raw.metadata.items() if not k.startswith(UPGRADED_PREFIX)}
    raw.modify(metadata={k: v for k, v in older.items() if not k.startswith("hnsw:")})


def _make_older(settings: Settings, label: str) -> None:
    """Turn the collection into what the release before the marker wrote: no new keys,
    `source` the label, the bookkeeping keys under their older names, and no note, in
    the store or the state, that its records were upgraded."""
    _forget_upgrade(settings)
    raw = _raw(settings)
    ids = raw.get(include=[])["ids"]
    stripped: dict[str, Any] = {key: None for key in NEW_KEYS}
    stripped["source"] = label
    for at in range(0, len(ids), 1000):  # within Chroma's batch limit
        raw.update(ids=ids[at : at + 1000], metadatas=[dict(stripped)] * len(ids[at : at + 1000]))
    _older_names(raw)
    _forget_collection_note(raw)
    metas = raw.get(include=["metadatas"])["metadatas"]
    assert all(not set(NEW_KEYS) & set(m) and m["source"] == label for m in metas)


def test_next_ingest_upgrades_every_record_by_metadata_only(
    corpus: Path, settings: Settings
) -> None:
    first = HashEmbedder()
    api.ingest([api.source_for(corpus)], settings, embedder=first)
    fresh = _snapshot(settings)
    contexts = [meta[CONTEXT_KEY] for meta, _, _ in fresh.values() if CONTEXT_KEY in meta]
    # the corpus has both kinds of context: heading paths and qualified code symbols
    assert any(" > " in c for c in contexts) and any("." in c for c in contexts), contexts
    assert any("How to brew." in c for c in contexts) and any("runs on …" in c for c in contexts)
    assert "A page of no heading.\n\n" in contexts
    assert len(contexts) >= 20
    _make_older(settings, "corpus")

    again = HashEmbedder()
    [summary] = api.ingest([api.source_for(corpus)], settings, embedder=again)
    assert again.calls == 0 and again.texts_embedded == 0
    assert summary.chunks_embedded == 0
    after = _snapshot(settings)
    assert not _differences(after, fresh)
    assert after == fresh  # every key back, documents and vectors untouched
    assert _raw(settings).metadata[UPGRADED_PREFIX + "corpus"] == RECORDS_VERSION


def test_records_version_2_gets_the_bookkeeping_names_by_metadata_only(
    corpus: Path, settings: Settings
) -> None:
    """An index of records version 2 (every key peers read, the bookkeeping under its
    older names, the state and the collection noting version 2): the next ingest renames
    the keys, values unchanged, embedding nothing; records then equal a fresh ingest's,
    and a search filter on an older name still finds them."""
    api.ingest([api.source_for(corpus)], settings, embedder=HashEmbedder())
    fresh = _snapshot(settings)
    assert all(set(LEGACY_NAMES) <= set(meta) for meta, _, _ in fresh.values())
    keyword = _keyword_rows(settings)
    raw = _raw(settings)
    _older_names(raw)
    _older_keyword_names(settings)
    raw.modify(
        metadata={
            **{k: v for k, v in raw.metadata.items() if not k.startswith("hnsw:")},
            UPGRADED_PREFIX + "corpus": 2,
        }
    )
    with State.open(settings.data_dir) as state:
        state.set_records_version(settings.collection, "corpus", 2)
    again = HashEmbedder()
    [summary] = api.ingest([api.source_for(corpus)], settings, embedder=again)
    assert again.calls == 0 and again.texts_embedded == 0
    assert summary.chunks_embedded == 0 and summary.files_updated == 0
    after = _snapshot(settings)
    assert not _differences(after, fresh)
    assert after == fresh
    assert _keyword_rows(settings) == keyword  # the keyword index's copy is renamed too
    with State.open(settings.data_dir, readonly=True) as state:
        assert state.records_version(settings.collection, "corpus") == RECORDS_VERSION
    # `--where` on an older name means today's key
    some = next(meta for meta, _, _ in fresh.values() if meta["path"] == "guide.md")
    for key in ("file_hash", FILE_HASH_KEY):
        for mode in ("keyword", "dense"):
            where = {key: some[FILE_HASH_KEY]}
            hits = api.search("the", settings, 50, where, mode=mode, embedder=HashEmbedder())
            assert hits and {h.path for h in hits} == {"guide.md"}, (key, mode)


def test_the_keyword_mirror_follows_the_rename(
    corpus: Path, settings: Settings, tmp_path: Path
) -> None:
    """The mirror (keyword search over a collection the state does not cover) fetches
    the renamed records again although their record hash did not change."""
    api.ingest([api.source_for(corpus)], settings, embedder=HashEmbedder())
    _older_names(_raw(settings))
    _forget_upgrade(settings)
    _forget_collection_note(_raw(settings))
    collection = api.open_store(settings).collection(settings.collection, create=False)
    mirror = KeywordMirror.open(tmp_path / "mirror")
    try:
        total = mirror.sync(collection, 1).total
        api.ingest([api.source_for(corpus)], settings, embedder=HashEmbedder())
        assert mirror.sync(collection, 2).updated == total
        rows = mirror.db.execute("SELECT metadata FROM chunks").fetchall()
        assert all(set(LEGACY_NAMES) <= set(json.loads(meta)) for (meta,) in rows)
        assert mirror.sync(collection, 3).updated == 0
    finally:
        mirror.close()


def test_an_index_upgraded_by_the_release_before_gets_its_contexts(
    corpus: Path, settings: Settings
) -> None:
    """The release before marked its index once (`chromasync_marked.`) but gave no record
    its context: the new note makes the next run look again, once."""
    api.ingest([api.source_for(corpus)], settings, embedder=HashEmbedder())
    fresh = _snapshot(settings)
    raw = _raw(settings)
    raw.update(ids=list(fresh), metadatas=[{CONTEXT_KEY: None} for _ in fresh])
    older = {k: v for k, v in raw.metadata.items() if not k.startswith(UPGRADED_PREFIX)}
    older["chromasync_marked.corpus"] = 1
    _forget_upgrade(settings)
    raw.modify(metadata={k: v for k, v in older.items() if not k.startswith("hnsw:")})
    again = HashEmbedder()
    api.ingest([api.source_for(corpus)], settings, embedder=again)
    assert again.calls == 0
    assert _snapshot(settings) == fresh


def test_share_upgrades_an_older_index_without_embedding(
    corpus: Path, settings: Settings, cli_env: dict[str, str]
) -> None:
    """`chromasync share` (the command that configures collections for peers) upgrades the
    records too, before any ingest; it embeds nothing (it has no embedder to call)."""
    api.ingest([api.source_for(corpus)], settings, embedder=HashEmbedder())
    fresh = _snapshot(settings)
    _make_older(settings, "corpus")
    done = invoke_cli(["share", "--no-model", "--json"], env=cli_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f'"upgraded": {len(fresh)}' in done.stdout
    assert _snapshot(settings) == fresh
    again = invoke_cli(["share", "--no-model", "--json"], env=cli_env)  # once only
    assert '"upgraded": 0' in again.stdout


def test_a_context_the_metadata_cannot_give_is_left_out_and_counted(
    corpus: Path, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing is guessed: a record whose stored text no candidate prefix reproduces (its
    chunk_hash) gets the other keys and no context, and the run says how many."""
    api.ingest([api.source_for(corpus)], settings, embedder=HashEmbedder())
    fresh = _snapshot(settings)
    rid = next(r for r, (meta, _, _) in fresh.items() if " > " in meta.get(CONTEXT_KEY, ""))
    _make_older(settings, "corpus")
    _raw(settings).update(ids=[rid], metadatas=[{"heading": "Somewhere else"}])
    again = HashEmbedder()
    with caplog.at_level("WARNING", logger="chromasync.store.peers"):
        api.ingest([api.source_for(corpus)], settings, embedder=again)
    assert again.calls == 0
    after = _snapshot(settings)
    assert CONTEXT_KEY not in after[rid][0] and after[rid][0][OWNER_KEY] == "corpus"
    assert "1 record(s)" in caplog.text
    others = {r: v for r, v in after.items() if r != rid}
    assert others == {r: v for r, v in fresh.items() if r != rid}
