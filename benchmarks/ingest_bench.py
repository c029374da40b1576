"""Change detection, measured: cold ingest, no-change re-run, and the bare walks beside them.

    python benchmarks/ingest_bench.py                    # SciFact (5,183 files), hash embedder
    python benchmarks/ingest_bench.py --model local      # the real default model (minutes)
    python benchmarks/ingest_bench.py --corpus hugo

Each figure is the median wall time of N runs of a fresh process (`python -m chromasync
ingest ... --json`, or the bare walker), measured side by side in one run, so the ratios
hold on a noisy machine. The bare walkers are plain Python: one walks the tree and stats
every file, the other also reads and sha256-hashes every file.
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


def delta_scenarios(
    root: Path, data: Path, ingest: list[str], env: dict[str, str]
) -> dict[str, tuple[float, int, str]]:
    """Edits that should cost what changed: one section, a renamed folder, lost state."""
    out: dict[str, tuple[float, int, str]] = {}
    first = sorted(root.rglob("*.md"))[0]
    first.write_text(first.read_text() + "\n\n## Addendum\n\nOne more section of text.\n")
    seconds, stdout = timed(ingest, env)
    out["one-section edit"] = (seconds, json.loads(stdout)["chunks_embedded"], "")
    moved = root / "moved"
    moved.mkdir()
    for path in sorted(root.glob("*.md"))[:500]:
        path.rename(moved / path.name)
    seconds, stdout = timed(ingest, env)
    report = json.loads(stdout)
    out["rename 500 files"] = (seconds, report["chunks_embedded"], f", {report['files_new']} new")
    for name in ("state.sqlite3", "state.sqlite3-wal", "state.sqlite3-shm"):
        (data / name).unlink(missing_ok=True)
    seconds, stdout = timed(ingest, env)
    report = json.loads(stdout)
    out["state deleted"] = (
        seconds,
        report["chunks_embedded"],
        f", {report['files_unchanged']} unchanged",
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=["scifact", "hugo"], default="scifact")
    parser.add_argument("--model", choices=["hash", "local"], default="hash")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = materialize(args.corpus, Path(tmp))
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO / "src"),
            "CHROMASYNC_DATA_DIR": str(Path(tmp) / "data"),
            "CHROMASYNC_EMBEDDING_PROVIDER": args.model,
        }
        ingest = [sys.executable, "-m", "chromasync", "ingest", str(root), "--json", "--quiet"]
        cold_s, out = timed(ingest, env)
        cold = json.loads(out)
        reruns, walks, hashes = [], [], []
        for _ in range(args.repeat):
            reruns.append(timed(ingest, env)[0])
            walks.append(timed([sys.executable, "-c", WALK_STAT, str(root)], env)[0])
            hashes.append(timed([sys.executable, "-c", WALK_HASH, str(root)], env)[0])
        again = json.loads(timed(ingest, env)[1])
        py = timed([sys.executable, "-c", "pass"], env)[0]
        deltas = delta_scenarios(root, Path(tmp) / "data", ingest, env)

    rerun, walk, hashed = (statistics.median(x) for x in (reruns, walks, hashes))
    figures = {
        "corpus": args.corpus,
        "model": args.model,
        "files": cold["files_seen"],
        "chunks": cold["chunks_total"],
        "cold_s": round(cold_s, 2),
        "cold_chunks_per_s": round(cold["chunks_embedded"] / cold_s, 1),
        "rerun_s": round(rerun, 3),
        "rerun_embedded": again["chunks_embedded"],
        "walk_stat_s": round(walk, 3),
        "walk_hash_s": round(hashed, 3),
        "python_startup_s": round(py, 3),
        "rerun_over_walk_hash": round(rerun / hashed, 2),
        "rerun_over_walk_stat": round(rerun / walk, 2),
        "deltas": {name: {"s": round(t, 2), "embedded": e} for name, (t, e, _) in deltas.items()},
    }
    print(
        f"{args.corpus}: {figures['files']} files, {figures['chunks']} chunks, model {args.model}"
    )
    print(f"  cold ingest          {cold_s:8.2f} s  ({figures['cold_chunks_per_s']} chunks/s)")
    print(f"  no-change re-run     {rerun:8.3f} s  (embedded {again['chunks_embedded']})")
    print(f"  bare walk + stat     {walk:8.3f} s")
    print(f"  bare walk + sha256   {hashed:8.3f} s")
    print(f"  python -c pass       {py:8.3f} s")
    print(f"  re-run / walk+hash   {figures['rerun_over_walk_hash']:8.2f}x  (goal <= 2)")
    print(f"  re-run / walk+stat   {figures['rerun_over_walk_stat']:8.2f}x  (goal <= 1.5)")
    for name, (seconds, embedded, extra) in deltas.items():
        print(f"  {name:<20} {seconds:8.2f} s  (embedded {embedded}{extra})")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
