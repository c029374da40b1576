"""Peak memory of reading, chunking and planning one long Markdown line follows a bound.

One line of words (4 MB here; 7 MB in the hostile pass, under the 8 MiB limit) was measured
by the tokenizer whole: one call, its offsets a Python list of tuples, 170-250 times the
file at its peak (1.19 GB for 7 MB). `HFTokenMeter.starts` cuts it at spaces and encodes
four 32 KB segments at a time into an array of 8-byte offsets. Each size is read, chunked
and planned in a fresh process that reports how much its peak memory (`ru_maxrss`) grew.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..conftest import REPO

MEASURE = """
import json, resource, sys
from chromasync.chunk import Budget, chunk_document
from chromasync.corpus.read import read_file
from chromasync.embed.tokens import default_token_meter
from chromasync.plan.triage import RecordContext, plan_file
from chromasync.records import FileStat
path = sys.argv[1]
meter = default_token_meter()
meter.count_many(["warm the tokenizer", "and its threads"])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
stat = FileStat("long.md", path, 0, 0)
doc = read_file(stat).document
chunks = chunk_document(doc, Budget(254, meter))
plan_file(stat, doc, chunks, None, RecordContext("s", "notes", "m"))
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"grown_kib": grown, "chunks": len(chunks)}))
"""


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
    assert found["chunks"] > 1000
    return int(found["grown_kib"]) / 1024


def test_one_long_line_peak_memory_is_bounded(tmp_path: Path) -> None:
    grown = []
    for words in (250_000, 500_000):
        path = tmp_path / f"long-{words}.md"
        path.write_text(" ".join(f"w{i}" for i in range(words)) + "\n")
        grown.append((_grown_mib(path), path.stat().st_size / (1 << 20)))
    (small, _), (big, mib) = grown
    assert big < small * 1.5 + 8, grown  # twice the line: not twice the memory (was 2x)
    assert big < 16 * mib + 16, grown  # 46 MB for 3.7 MiB (was 914 MB)
