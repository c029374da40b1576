"""Change detection, measured: cold ingest, no-change re-run, and the bare walks beside them.

    python benchmarks/ingest_bench.py                    # SciFact (5,183 files) and hugo-docs
    python benchmarks/ingest_bench.py --corpus hugo      # one of them
    python benchmarks/ingest_bench.py --model local      # the real default model (minutes)

Each figure is the median wall time of N runs of a fresh process, measured side by side
(interleaved) in one run, so the ratios hold on a noisy machine. chromasync runs as its
console script does (`from chromasync.fastpath import main`), byte-compiled as an installed
package is; the bare walkers are plain Python: one walks the tree and stats every file, the
other also reads and sha256-hashes every file. "full path" is the same re-run with the fast
path turned off (CHROMASYNC_NO_FASTPATH=1): the manifest compare in SQLite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"

WALK_STAT = """
import os, sys
n = 0
stack = [sys.argv[1]]
while stack:
    for e in os.scandir(stack.pop()):
        if e.is_dir(follow_symlinks=False):
            stack.append(e.path)
        else:
            e.stat(follow_symlinks=False); n += 1
print(n)
"""
WALK_HASH = """
import hashlib, os, sys
n = 0
stack = [sys.argv[1]]
while stack:
    for e in os.scandir(stack.pop()):
        if e.is_dir(follow_symlinks=False):
            stack.append(e.path)
        else:
            e.stat(follow_symlinks=False)
            with open(e.path, "rb") as f:
                hashlib.sha256(f.read()).hexdigest()
            n += 1
print(n)
"""


def materialize(corpus: str, out: Path) -> Path:
    root = out / corpus
    if corpus == "scifact":
        subprocess.run(
            [sys.executable, str(SHARED / "tools" / "materialize_scifact.py"), str(root)],
            check=True,
            capture_output=True,
        )
    else:
        shutil.copytree(SHARED / "corpora" / "hugo-docs", root)
    for path in root.rglob("*"):  # old mtimes: nothing is "racily clean"
        if path.is_file():
            os.utime(path, ns=(1_600_000_000 * 10**9, 1_600_000_000 * 10**9))
    return root


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout


def summary(stdout: str) -> dict[str, Any]:
    """The one source's summary of `ingest --json` (a list of one row per source)."""
    rows = json.loads(stdout)
    return dict(rows[0] if isinstance(rows, list) else rows)


CONSOLE_SCRIPT = "import sys\nfrom chromasync.fastpath import main\nsys.exit(main())\n"


def delta_scenarios(
    root: Path, data: Path, ingest: list[str], env: dict[str, str]
) -> dict[str, tuple[float, int, str]]:
    """Edits that should cost what changed: one section, a renamed folder, lost state."""
    out: dict[str, tuple[float, int, str]] = {}
    first = sorted(root.rglob("*.md"))[0]
    first.write_text(first.read_text() + "\n\n## Addendum\n\nOne more section of text.\n")
    seconds, stdout = timed(ingest, env)
    out["one-section edit"] = (seconds, summary(stdout)["chunks_embedded"], "")
    folders = [p for p in root.rglob("*") if p.is_dir()]
    if folders:  # rename the folder holding the most pages
        folder = max(folders, key=lambda d: (sum(1 for _ in d.rglob("*.md")), str(d)))
        folder.rename(folder.with_name(folder.name + "-renamed"))
        name = "rename a folder"
    else:  # a flat corpus: move 500 files into a new folder
        moved = root / "moved"
        moved.mkdir()
        for path in sorted(root.glob("*.md"))[:500]:
            path.rename(moved / path.name)
        name = "move 500 files"
    seconds, stdout = timed(ingest, env)
    report = summary(stdout)
    out[name] = (seconds, report["chunks_embedded"], f", {report['files_new']} new")
    for name in ("state.sqlite3", "state.sqlite3-wal", "state.sqlite3-shm"):
        (data / name).unlink(missing_ok=True)
    seconds, stdout = timed(ingest, env)
    report = summary(stdout)
    out["state deleted"] = (
        seconds,
        report["chunks_embedded"],
        f", {report['files_unchanged']} unchanged",
    )
    return out


def bench_corpus(corpus: str, model: str, repeat: int, tmp: Path) -> dict[str, object]:
    root = materialize(corpus, tmp)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "CHROMASYNC_DATA_DIR": str(tmp / "data"),
        "CHROMASYNC_EMBEDDING_PROVIDER": model,
    }
    ingest = [sys.executable, "-c", CONSOLE_SCRIPT, "ingest", str(root), "--json", "--quiet"]
    cold_s, out = timed(ingest, env)
    cold = summary(out)
    full_env = {**env, "CHROMASYNC_NO_FASTPATH": "1"}
    reruns, fulls, walks, hashes = [], [], [], []
    timed(ingest, env)  # a first re-run: already fast (the cold run recorded its no-op)
    for _ in range(repeat):
        reruns.append(timed(ingest, env)[0])
        walks.append(timed([sys.executable, "-c", WALK_STAT, str(root)], env)[0])
        hashes.append(timed([sys.executable, "-c", WALK_HASH, str(root)], env)[0])
        fulls.append(timed(ingest, full_env)[0])
        timed(ingest, env)  # the full path took the lock: this records the snapshot again
    again = summary(timed(ingest, env)[1])
    py = statistics.median(timed([sys.executable, "-c", "pass"], env)[0] for _ in range(repeat))
    deltas = delta_scenarios(root, tmp / "data", ingest, env)
    rerun, full, walk, hashed = (statistics.median(x) for x in (reruns, fulls, walks, hashes))
    return {
        "corpus": corpus,
        "model": model,
        "files": cold["files_seen"],
        "chunks": cold["chunks_total"],
        "cold_s": round(cold_s, 2),
        "cold_chunks_per_s": round(cold["chunks_embedded"] / cold_s, 1),
        "rerun_s": round(rerun, 4),
        "rerun_full_path_s": round(full, 4),
        "rerun_embedded": again["chunks_embedded"],
        "walk_stat_s": round(walk, 4),
        "walk_hash_s": round(hashed, 4),
        "python_startup_s": round(py, 4),
        "rerun_over_walk_hash": round(rerun / hashed, 2),
        "rerun_over_walk_stat": round(rerun / walk, 2),
        "full_path_over_walk_stat": round(full / walk, 2),
        "deltas": {name: {"s": round(t, 2), "embedded": e} for name, (t, e, _) in deltas.items()},
        "_notes": {name: extra for name, (_, _, extra) in deltas.items()},
    }


def report(figures: dict[str, object]) -> None:
    f = figures
    print(f"{f['corpus']}: {f['files']} files, {f['chunks']} chunks, model {f['model']}")
    print(f"  cold ingest          {f['cold_s']:8.2f} s  ({f['cold_chunks_per_s']} chunks/s)")
    print(f"  no-change re-run     {f['rerun_s']:8.3f} s  (embedded {f['rerun_embedded']})")
    print(f"  ... full path        {f['rerun_full_path_s']:8.3f} s  (fast path off)")
    print(f"  bare walk + stat     {f['walk_stat_s']:8.3f} s")
    print(f"  bare walk + sha256   {f['walk_hash_s']:8.3f} s")
    print(f"  python -c pass       {f['python_startup_s']:8.3f} s")
    print(f"  re-run / walk+hash   {f['rerun_over_walk_hash']:8.2f}x  (goal <= 2)")
    print(f"  re-run / walk+stat   {f['rerun_over_walk_stat']:8.2f}x  (goal <= 1.5)")
    print(f"  full path / walk+stat{f['full_path_over_walk_stat']:8.2f}x")
    notes = f["_notes"]
    for name, delta in f["deltas"].items():  # type: ignore[attr-defined]
        extra = notes[name]  # type: ignore[index]
        print(f"  {name:<20} {delta['s']:8.2f} s  (embedded {delta['embedded']}{extra})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=["scifact", "hugo", "both"], default="both")
    parser.add_argument("--model", choices=["hash", "local"], default="hash")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    # An installed package is byte-compiled (pip does it); an editable checkout may not be.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "src" / "chromasync")], check=True
    )
    corpora = ["scifact", "hugo"] if args.corpus == "both" else [args.corpus]
    results = []
    for corpus in corpora:
        with tempfile.TemporaryDirectory() as tmp:
            figures = bench_corpus(corpus, args.model, args.repeat, Path(tmp))
        report(figures)
        figures.pop("_notes")
        results.append(figures)
    if args.json:
        args.json.write_text(json.dumps(results if len(results) > 1 else results[0], indent=2))


if __name__ == "__main__":
    main()
