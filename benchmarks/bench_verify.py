"""Check a collection against the files on disk: orphans, stale versions, duplicates, gaps.

Each tool's records are read straight from its Chroma collection as (relative path, stored
text) pairs; the disk is the judge. Whitespace is collapsed before comparing, since splitters
may trim or re-join whitespace around the excerpts they store.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from bench_corpus import front_matter_end, markdown_files

_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def check(records: Iterable[tuple[str, str]], root: Path) -> dict[str, int]:
    """Counts of bad records; all zero means the collection matches the tree.

    - orphans: records of files that are no longer on disk;
    - stale: records whose text is not (any longer) in their file;
    - duplicates: extra copies of one (file, text) pair;
    - missing: files on disk with text outside their front matter but no record at all.
    """
    disk: dict[str, str] = {}
    for rel in markdown_files(root):
        disk[rel] = (root / rel).read_text(encoding="utf-8", errors="replace")
    normalised = {rel: _norm(text) for rel, text in disk.items()}
    pairs = Counter((rel, _norm(text)) for rel, text in records)
    orphans = stale = duplicates = 0
    for (rel, text), count in pairs.items():
        duplicates += count - 1
        if rel not in disk:
            orphans += count
        elif text not in normalised[rel]:
            stale += count
    indexed = {rel for rel, _ in pairs}
    missing = sum(
        1
        for rel, text in disk.items()
        if rel not in indexed and text[front_matter_end(text) :].strip()
    )
    return {
        "records": sum(pairs.values()),
        "orphans": orphans,
        "stale": stale,
        "duplicates": duplicates,
        "missing": missing,
    }
