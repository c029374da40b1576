"""Planning ahead, measured: a cold ingest with the planner in a second process, and in one.

    python benchmarks/plan_ahead.py                          # SciFact, hash stand-in, 3 rounds
    python benchmarks/plan_ahead.py --model local --limit 1200 --rounds 3

Each round runs a cold `chromasync ingest` of the same tree into a fresh data dir twice, once
with CHROMASYNC_PLAN_AHEAD=on and once with off, in fresh processes as the console script
runs, the order alternating per round (this machine is noisy: only ratios measured side by
side mean anything). Wall time, and CPU time of the run and its children (the worker's too),
are printed per round with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CONSOLE_SCRIPT = "import sys\nfrom chromasync.fastpath import main\nsys.exit(main())\n"


def materialize(out: Path, limit: int) -> Path:
    root = out / "scifact"
    tool = SHARED / "tools" / "materialize_scifact.py"
    only = ["--limit", str(limit)] if limit else []
    subprocess.run([sys.executable, str(tool), str(root), *only], check=True, capture_output=True)
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(1_600_000_000 * 10**9, 1_600_000_000 * 10**9))
    return root


def cold(root: Path, data: Path, model: str, mode: str) -> dict[str, float]:
    shutil.rmtree(data, ignore_errors=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "CHROMASYNC_DATA_DIR": str(data),
        "CHROMASYNC_EMBEDDING_PROVIDER": model,
        "CHROMASYNC_PLAN_AHEAD": mode,
    }
    command = [sys.executable, "-c", CONSOLE_SCRIPT, "ingest", str(root), "--json", "--quiet"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    [summary] = json.loads(done.stdout)  # one row per source
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "embed_s": summary["embed_ms"] / 1000,
        "chunks": summary["chunks_embedded"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["hash", "local"], default="hash")
    parser.add_argument("--limit", type=int, default=0, help="the first N abstracts (0: all)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chromasync-ahead-") as tmp:
        root = materialize(Path(tmp), args.limit)
        print(f"{sum(1 for _ in root.rglob('*.md'))} files, model {args.model}", flush=True)
        rows: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
        for n in range(args.rounds):
            order = ("on", "off") if n % 2 == 0 else ("off", "on")
            for mode in order:
                load = os.getloadavg()[0]
                row = cold(root, Path(tmp) / f"data-{mode}", args.model, mode)
                rows[mode].append(row)
                print(
                    f"round {n + 1} {mode:>3}: {row['wall_s']:7.2f} s wall,"
                    f" {row['cpu_s']:7.2f} s CPU, {row['embed_s']:6.2f} s embedding,"
                    f" {row['chunks']:.0f} chunks (load {load:.2f})",
                    flush=True,
                )
        on = statistics.median(r["wall_s"] for r in rows["on"])
        off = statistics.median(r["wall_s"] for r in rows["off"])
        own_on = statistics.median(r["wall_s"] - r["embed_s"] for r in rows["on"])
        own_off = statistics.median(r["wall_s"] - r["embed_s"] for r in rows["off"])
        cpu_on = statistics.median(r["cpu_s"] for r in rows["on"])
        cpu_off = statistics.median(r["cpu_s"] for r in rows["off"])
        print(f"median wall: on {on:.2f} s, off {off:.2f} s: off/on {off / on:.2f}x")
        print(f"median wall less embedding: on {own_on:.2f} s, off {own_off:.2f} s")
        print(f"median CPU: on {cpu_on:.2f} s, off {cpu_off:.2f} s")


if __name__ == "__main__":
    main()
