"""Content-root discovery: thresholds, build output, narrowing, overlap with declared roots."""

from __future__ import annotations

from pathlib import Path

import pytest

from chromasync import api
from chromasync.corpus.roots import find_content_roots


def pages(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"p{i}.md").write_text(f"# {i}\n")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    pages(root / "handbook", 10)  # exactly the threshold
    pages(root / "few", 9)  # one short
    pages(root / "deep" / "a" / "b" / "c", 12)  # below 3 levels of `deep`: narrowed to c
    pages(root / "packages" / "one" / "docs", 10)  # two roots under one parent: split
    pages(root / "packages" / "two" / "docs", 11)
    for build in ("node_modules/x", "dist", "build", "public", ".cache", "target", "out"):
        pages(root / "web" / build, 20)
    pages(root / "tools" / "env" / "share", 15)
    (root / "tools" / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    return root


def test_find_content_roots(tree: Path) -> None:
    found = {c.rel_path: c.markdown_files for c in find_content_roots(tree)}
    assert found == {
        "handbook": 10,
        "deep/a/b/c": 12,
        "packages/one/docs": 10,
        "packages/two/docs": 11,
    }
    assert [c.rel_path for c in find_content_roots(tree, skip_substrings=["handbook"])] == [
        "deep/a/b/c",
        "packages/one/docs",
        "packages/two/docs",
    ]


def test_discover_skips_roots_that_overlap_declared_ones(tree: Path, tmp_path: Path) -> None:
    settings = api.resolve_settings({"data_dir": str(tmp_path / "d")}, {})
    target = tmp_path / "s.md"
    first = api.discover(settings, tree / "packages", target)
    assert len(first.added) == 2
    second = api.discover(settings, tree, target)
    assert {Path(p).name for p in second.added} == {"handbook", "c"}
    assert len(second.known) == 2
    text = target.read_text()
    assert "label: one/docs" in text and "label: two/docs" in text  # generic names qualified
    assert api.discover(settings, tree, target).added == ()
