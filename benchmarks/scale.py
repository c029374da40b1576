"""Growth to 100,000 files: chromasync's own time and memory as the tree grows.

    nice python benchmarks/scale.py                     # 10,000 and 30,000 files
    nice python benchmarks/scale.py --sizes 100000      # 100,000 (about as long again x3)
    nice python benchmarks/scale.py --sizes 2000 --server

A synthetic tree of N Markdown files is built in a temp dir (never in ../shared) from the
SciFact abstracts: each file holds one abstract under its title (about 2.5 chunks of 256
word pieces) and a line naming the file, so every file's content is unique; 100 files a
folder.
Each step runs `python -m chromasync` in a fresh child process with the `hash` stand-in
embedder (so every figure is chromasync's own time: walk, read, chunk, plan, Chroma,
manifest), and reads the child's peak RSS from wait4, and the peak of its process tree's
summed RSS (the child and the planning process it starts, sampled every 50 ms). Steps, per
size: cold ingest; the no-change re-run (median of 3) beside a bare walk+stat of the same
tree (median of 3); 1% of files edited (churn); `verify`. With `--server`, the cold ingest
also goes to a local `chroma run` server. Prints a table and JSON; writes --out/scale.json
(and scale.png when matplotlib is installed: the bench extra). `--render A.json B.json` only
draws scale.png from the rows of earlier runs (sizes run apart).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SCIFACT = REPO.parent / "shared" / "corpora" / "scifact" / "corpus.jsonl.gz"
PER_DIR = 100

sys.path.insert(0, str(HERE))
from ingest_bench import WALK_STAT  # noqa: E402  (the same bare walker, side by side)


def abstracts() -> list[tuple[str, str]]:
    with gzip.open(SCIFACT, "rt", encoding="utf-8") as src:
        return [(d["title"], d["text"]) for d in map(json.loads, src)]


def build_tree(root: Path, files: int, docs: list[tuple[str, str]]) -> None:
    rng = random.Random(files)
    old = time.time() - 86_400  # settled files: no racy-mtime re-reads
    for n in range(files):
        folder = root / f"d{n // PER_DIR:05}"
        if n % PER_DIR == 0:
            folder.mkdir(parents=True)
        title, abstract = rng.choice(docs)
        path = folder / f"f{n:06}.md"
        path.write_text(f"# {title}\n\nFile {n}.\n\n{abstract}\n", encoding="utf-8")
        os.utime(path, (old, old))


def churn(root: Path, share: float, seed: int = 3) -> int:
    paths = sorted(root.rglob("*.md"))
    chosen = random.Random(seed).sample(paths, max(1, int(len(paths) * share)))
    for path in chosen:
        path.write_text(path.read_text(encoding="utf-8") + "\nEdited for the churn run.\n")
    return len(chosen)


def run_child(args: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    began = time.perf_counter()
    pid = os.posix_spawn(
        sys.executable,
        [sys.executable, *args],
        env,
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 1, _capture, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
            (
                os.POSIX_SPAWN_OPEN,
                2,
                _capture + ".err",
                os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                0o644,
            ),
        ],
    )
    sampler = TreeRss(pid)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - began
    global _last_tree_mb
    _last_tree_mb = sampler.stop()
    code = os.waitstatus_to_exitcode(status)
    out = Path(_capture).read_text()
    if code != 0 and "verify" not in args:
        raise SystemExit(
            f"{args[:3]} failed ({code}): {Path(_capture + '.err').read_text()[-800:]}"
        )
    global _last_cpu
    _last_cpu = usage.ru_utime + usage.ru_stime  # load-independent, unlike wall time
    return wall, usage.ru_maxrss // 1024, out


_capture = ""
_last_cpu = 0.0
_last_tree_mb = 0


class TreeRss:
    """The peak of the summed RSS of a process and its children (Linux /proc), sampled."""

    def __init__(self, pid: int) -> None:
        import threading

        self.pid, self.peak = pid, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.05):
            total = 0
            for pid in (self.pid, *self._children()):
                total += _rss_kb(pid)
            self.peak = max(self.peak, total)

    def _children(self) -> list[int]:
        try:
            text = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return self.peak // 1024


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def chromasync(
    command: str, root: Path | None, data: Path, extra: list[str], env: dict[str, str]
) -> tuple[float, int, dict[str, Any]]:
    args = [
        "-m",
        "chromasync",
        command,
        *([str(root)] if root else []),
        "--data-dir",
        str(data),
        "--json",
        *extra,
    ]
    wall, rss, out = run_child(args, env)
    try:
        parsed = json.loads(out) if out.strip() else {}
    except json.JSONDecodeError:
        parsed = {"raw": out[-300:]}
    return wall, rss, parsed if isinstance(parsed, dict) else {"rows": parsed}


def median_of(n: int, fn: Any) -> float:
    return statistics.median(fn() for _ in range(n))


def one_size(
    files: int, docs: list[tuple[str, str]], tmp: Path, env: dict[str, str], server: str | None
) -> dict[str, Any]:
    root = tmp / f"tree-{files}"
    began = time.perf_counter()
    build_tree(root, files, docs)
    row: dict[str, Any] = {"files": files, "build_s": round(time.perf_counter() - began, 1)}
    data = tmp / f"data-{files}"
    wall, rss, summary = chromasync("ingest", root, data, [], env)
    embed_s = summary.get("embed_ms", 0) / 1000
    row |= {
        "cold_s": round(wall, 1),
        "cold_own_s": round(wall - embed_s, 1),
        "cold_ms_per_file": round(1000 * (wall - embed_s) / files, 2),
        "cold_cpu_s": round(_last_cpu, 1),
        "cold_cpu_ms_per_file": round(1000 * _last_cpu / files, 2),
        "chunks_embedded": summary.get("chunks_embedded"),
        "cold_peak_mb": rss,
        "cold_tree_peak_mb": _last_tree_mb,
    }
    noop = median_of(3, lambda: chromasync("ingest", root, data, [], env)[0])
    walk = median_of(3, lambda: run_child(["-c", WALK_STAT, str(root)], env)[0])
    row |= {
        "noop_s": round(noop, 2),
        "walk_stat_s": round(walk, 2),
        "noop_over_walk": round(noop / walk, 2),
    }
    edited = churn(root, 0.01)
    wall, rss, summary = chromasync("ingest", root, data, [], env)
    row |= {
        "churn_files": edited,
        "churn_s": round(wall, 1),
        "churn_peak_mb": rss,
        "churn_tree_peak_mb": _last_tree_mb,
        "churn_over_cold": round(wall / row["cold_s"], 3),
    }
    wall, rss, report = chromasync("verify", None, data, [], env)
    row |= {
        "verify_s": round(wall, 1),
        "verify_peak_mb": rss,
        "verify_clean": not any(
            report.get(k) for k in ("orphans", "missing", "mismatched", "duplicates")
        ),
    }
    if server:
        wall, rss, _ = chromasync(
            "ingest", root, tmp / f"data-server-{files}", ["--chroma-url", server], env
        )
        row |= {"server_cold_s": round(wall, 1), "server_cold_peak_mb": rss}
    shutil.rmtree(data, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    return row


def plot(rows: list[dict[str, Any]], out: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed (pip install -e '.[bench]'): no plot"
    x = [r["files"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    axes[0].plot(x, [r["cold_ms_per_file"] for r in rows], "o-", label="wall (carries load)")
    if all("cold_cpu_ms_per_file" in r for r in rows):
        axes[0].plot(x, [r["cold_cpu_ms_per_file"] for r in rows], "o-", label="CPU")
    axes[0].set_title("cold own time per file (ms)")
    axes[0].set_ylim(bottom=0)
    axes[0].legend()
    axes[1].plot(x, [r["cold_peak_mb"] for r in rows], "o-", label="cold")
    if all("cold_tree_peak_mb" in r for r in rows):
        trees = [r["cold_tree_peak_mb"] for r in rows]
        axes[1].plot(x, trees, "o--", label="cold, with the planning process")
    axes[1].plot(x, [r["verify_peak_mb"] for r in rows], "o-", label="verify")
    axes[1].set_title("peak RSS (MB)")
    axes[1].legend()
    axes[2].plot(x, [r["noop_over_walk"] for r in rows], "o-")
    axes[2].set_title("no-change re-run / walk+stat")
    axes[2].axhline(1.5, color="grey", linestyle=":")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("files")
    fig.tight_layout()
    fig.savefig(out / "scale.png", dpi=110)
    return str(out / "scale.png")


def main() -> None:
    global _capture
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,30000", help="comma-separated file counts")
    parser.add_argument("--server", action="store_true", help="also a cold ingest into chroma run")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument(
        "--render",
        type=Path,
        nargs="+",
        help="only draw --out/scale.png from these scale.json files' rows (runs of other sizes)",
    )
    args = parser.parse_args()
    if args.render:
        rows = [row for path in args.render for row in json.loads(path.read_text())["rows"]]
        args.out.mkdir(parents=True, exist_ok=True)
        print(plot(sorted(rows, key=lambda r: int(r["files"])), args.out))
        return
    tmp = Path(tempfile.mkdtemp(prefix="chromasync-scale-"))
    _capture = str(tmp / "child.out")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_COLLECTIONS": "shared",
        "CHROMASYNC_CACHE_DIR": str(tmp / "cache"),
    }
    docs = abstracts()
    rows: list[dict[str, Any]] = []
    report: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "load_avg_start": os.getloadavg()[0],
        "rows": rows,
    }
    try:
        server_ctx = None
        url = None
        if args.server:
            sys.path.insert(0, str(HERE))
            from model_throughput import chroma_server

            server_ctx = chroma_server(tmp / "server-db")
            url = server_ctx.__enter__()
        for size in (int(s) for s in args.sizes.split(",")):
            rows.append(one_size(size, docs, tmp, env, url))
            print(json.dumps(rows[-1]), flush=True)
        if server_ctx is not None:
            server_ctx.__exit__(None, None, None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report["load_avg_end"] = os.getloadavg()[0]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.json").write_text(json.dumps(report, indent=2))
    report["plot"] = plot(rows, args.out)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
