"""The foundation issue's checks on a copy of hugo-docs (993 real Markdown docs)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.resolve import resolve_settings
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.sync.ingest import IngestOptions

from ..conftest import oracle, set_mtime, snapshot


@pytest.fixture(scope="module")
def hugo_run(hugo_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Settings]:
    root = tmp_path_factory.mktemp("hugo-run") / "hugo"
    shutil.copytree(hugo_copy, root, symlinks=True)
    settings = resolve_settings(
        {"data_dir": str(tmp_path_factory.mktemp("hugo-data")), "provider": "hash"},
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    return root, settings


def test_hugo_lifecycle(hugo_run: tuple[Path, Settings], tmp_path: Path) -> None:
    root, settings = hugo_run
    markdown = sorted(root.rglob("*.md"))
    embedder = HashEmbedder()

    [first] = api.ingest([api.source_for(root, "hugo")], settings, embedder=embedder)
    assert first.files_new == len(markdown) >= 993
    assert first.files_skipped.get("binary") == 58  # the images, by name, unread
    assert first.chunks_total == len(snapshot(settings))

    calls = embedder.texts_embedded
    [second] = api.ingest([api.source_for(root, "hugo")], settings, embedder=embedder)
    assert (second.files_unchanged, second.chunks_embedded) == (len(markdown), 0)
    assert embedder.texts_embedded == calls

    for path in markdown:
        set_mtime(path, 1_700_000_000)
    [touched] = api.ingest([api.source_for(root, "hugo")], settings, embedder=embedder)
    assert (touched.files_unchanged, touched.chunks_embedded) == (len(markdown), 0)

    for path in markdown[:10]:
        path.write_text(path.read_text() + "\n\nAn added closing paragraph about caching.\n")
        set_mtime(path, 1_700_000_100)
    for path in markdown[10:15]:
        path.unlink()
    for n in range(5):
        new = root / "content" / f"new-{n}.md"
        new.write_text(f"---\ntitle: New {n}\n---\n# New page {n}\n\nFresh text number {n}.\n")
        set_mtime(new, 1_700_000_100)
    [delta] = api.ingest([api.source_for(root, "hugo")], settings, embedder=embedder)
    assert (delta.files_new, delta.files_updated, delta.files_deleted) == (5, 10, 5)
    assert delta.chunks_embedded <= 10 + 5 * 2  # only the changed sections
    assert snapshot(settings) == oracle(root, tmp_path / "oracle", "hugo")

    before = snapshot(settings)
    [dry] = api.ingest(
        [api.source_for(root, "hugo")], settings, IngestOptions(dry_run=True), embedder=embedder
    )
    assert dry.dry_run and dry.chunks_embedded == 0
    assert snapshot(settings) == before
