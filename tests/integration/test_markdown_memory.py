"""Peak memory of reading, chunking and planning one Markdown (or code) file follows a bound.

The worst shapes under the 8 MiB limit: one long line (7 MB in the hostile pass, 1.19 GB
at its peak), very many headings (1,000,000 in 3.9 MB: 848 MB), headings each with a line
of text (a section, so a chunk, each), blockquotes nested one level deeper on each line
(3,000 levels in 4.4 MB: 1.37 GB), lists nested the same way, three-line fenced blocks,
links (a file's records hold its link targets: `MAX_FILE_LINKS`), CJK text, and 8 MiB
without a space (the tokenizer's one call for it grew 600 MB, and 2 GB between commas),
and table rows of 128 word pieces, a chunk each (65,000 records were 84 MB when each was an
object of its own: `plan.packed`).
Each file is read, chunked and planned in a fresh process that reports how much its peak
memory (`VmHWM`) grew; twice the file must not take twice the memory, and 2 MiB may
take at most 6 bytes a byte and 16 MB (that is 64 MB at 8 MiB). The slow test measures
each shape at 8 MiB: under 64 MB.
Before, the chunker held a string a line, a `Block` a block and a `Span` a line or sentence
(250,000 headings in 2 MiB: 154 MB; 8 MiB: 529 MB), and the tokenizer encoded 32 KiB
segments (2 MiB of nested quotes: 106 MB); tree-sitter parsed 2 MiB of Python statements
into 113 MB (`chunk.code.MAX_PARSE_CHARS`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path

import pytest

from ..conftest import REPO

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="reads the peak from /proc (Linux)"
)

#: The peak is the process's own `VmHWM`: `ru_maxrss` keeps the peak of the process it was
#: forked from (pytest's, often larger than the whole measure), so it saw nothing below it.
MEASURE = """
import json, sys
from chromasync.chunk import Budget, chunk_document
from chromasync.corpus.read import read_file
from chromasync.embed.tokens import default_token_meter
from chromasync.plan.triage import RecordContext, plan_file
from chromasync.records import FileStat
path = sys.argv[1]
meter = default_token_meter()
meter.count_many(["warm the tokenizer", "and its threads"])
def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
before = peak()
stat = FileStat(path.rsplit("/", 1)[-1], path, 0, 0)
doc = read_file(stat).document
chunks = chunk_document(doc, Budget(254, meter))
plan_file(stat, doc, chunks, None, RecordContext("s", "notes", "m"))
grown = peak() - before
print(json.dumps({"grown_kib": grown, "chunks": len(chunks)}))
"""

#: Each shape: the lines of an endless file (cut at the size wanted).
SHAPES: dict[str, Callable[[], Iterator[str]]] = {
    "long-line": lambda: (f"w{i} " for i in count()),
    "headings": lambda: (f"# {i}\n" for i in count()),
    "headings-with-text": lambda: (f"# {i}\nx\n" for i in count()),
    "nested-quotes": lambda: (">" * i + " x\n" for i in count(1)),
    "nested-lists": lambda: ("  " * i + "- x\n" for i in count()),
    "fenced-blocks": lambda: ("```\nx\n```\n" for _ in count()),
    "python-statements": lambda: (f"x{i} = {i}\n" for i in count()),  # a .py file
    "links": lambda: (f"[a](n/{i}.md)" + (" " if i % 8 else "\n") for i in count()),
    "cjk-lines": lambda: ("漢字仮名交じり文" * 50 + "\n" for _ in count()),  # 3 bytes a char
    "one-word": lambda: ("x" * 1024 for _ in count()),  # no space: one call was 600 MB
    "spaceless-commas": lambda: (f"{i}," for i in count()),  # one call was 2 GB
    "table-rows": lambda: ("|" + "a|" * 64 + "\n" for _ in count()),  # a chunk a row
    "numbered-rows": lambda: (f"|{i}|" + "a|" * 63 + "\n" for i in count()),  # each its own
}


def _write(path: Path, lines: Iterator[str], size: int) -> float:
    written = 0
    with path.open("w", encoding="utf-8") as out:
        for line in lines:
            size_of = len(line.encode())
            if written + size_of > size:
                break
            out.write(line)
            written += size_of
        out.write("\n")
    return path.stat().st_size / (1 << 20)


def _grown_mib(path: Path) -> float:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    assert found["chunks"] > 100  # many chunks (one spaceless word: 207 long ones a MiB)
    return int(found["grown_kib"]) / 1024


def _path(tmp_path: Path, shape: str, mib: int) -> Path:
    return tmp_path / f"{shape}-{mib}.{'py' if shape.startswith('python') else 'md'}"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_peak_memory_of_a_shape_is_bounded(tmp_path: Path, shape: str) -> None:
    grown = []
    for mib in (1, 2):
        path = _path(tmp_path, shape, mib)
        size = _write(path, SHAPES[shape](), mib << 20)
        grown.append((_grown_mib(path), size))
    (small, _), (big, mib) = grown
    assert big < small * 1.5 + 4, grown  # twice the file: not twice the memory
    assert big < 6 * mib + 16, grown  # the file, its chunks and records; at 8 MiB, 64 MB


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_peak_memory_at_the_size_limit(tmp_path: Path, shape: str) -> None:
    """Just under the 8 MiB `max_file_bytes`, each shape grows the process by at most 64 MB."""
    path = _path(tmp_path, shape, 8)
    _write(path, SHAPES[shape](), (8 << 20) - 64)
    assert _grown_mib(path) < 64
