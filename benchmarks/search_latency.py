#!/usr/bin/env python3
"""Search latency as users feel it: fresh processes, the warm daemon, and in process.

    nice python benchmarks/search_latency.py --data-dir DIR [--queries 809] [--full 20]

DIR is a data dir holding SciFact indexed with the default model (e.g. the one
`benchmarks/retrieval.py` builds in /tmp/chromasync-bench-retrieval/scifact-data); the
queries are SciFact's 809 training claims. Measured side by side in one run, each row a
new process per query unless it says otherwise (the venv's `chromasync` console script,
what users run; `--entry module`: `python -m chromasync`, which adds runpy's imports):

* `python -c pass`: the floor of any fresh process on this machine;
* `search Q --mode keyword --json` through the warm daemon (the stdlib client; the SQLite
  keyword snapshot it replaced measured 1.0x this row's time or more: docs/benchmarks.md);
* `search Q --json` (hybrid) through the warm daemon;
* the first hybrid query after the daemon was stopped (it starts one: model and store load);
* `search Q --json --no-daemon` (hybrid in its own process: the code before the daemon);
* hybrid in one warm process, as the daemon, REST and MCP search (`api.retrieve` in
  `api.WarmSessions`: the store and the state stay open between queries);
* the same, opening the store and the state for each query (`api.retrieve` alone: the code
  before warm sessions).

`--feedback` measures only the cost of hybrid search's opt-in second round
(pseudo-relevance feedback, `results.FEEDBACK_FUSION`, `retrieve/rounds.py`) against the
default hybrid (`results.DEFAULT_FUSION`), in one warm process, alternating query by query.

Prints p50/p95/p99 in milliseconds and each p50 as a multiple of `python -c pass`; writes
the figures as JSON (--out). Never run two benchmarks at once on a small machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "src"))

from chromasync import api  # noqa: E402
from chromasync.retrieve.evaluate import percentile  # noqa: E402


def claims(limit: int | None) -> list[str]:
    """SciFact's training claims, in file order."""
    path = SHARED / "corpora" / "scifact" / "train_queries.jsonl"
    out = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                out.append(str(json.loads(line)["query"]))
    return out[:limit] if limit else out


def figures(samples_s: Sequence[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples_s)
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 0.50), 1),
        "p95_ms": round(percentile(ms, 0.95), 1),
        "p99_ms": round(percentile(ms, 0.99), 1),
    }


def timed(argv: Sequence[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:6])}... failed: {done.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=None, help="only the first N claims")
    parser.add_argument("--full", type=int, default=20, help="queries for --no-daemon")
    parser.add_argument("--boots", type=int, default=3, help="daemon starts to time")
    parser.add_argument("--floor", type=int, default=30, help="`python -c pass` runs")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--feedback", action="store_true", help="only the feedback's cost")
    parser.add_argument("--entry", choices=["script", "module"], default="script")
    args = parser.parse_args()
    if args.feedback:
        feedback_cost(args)
        return

    queries = claims(args.queries)
    # An installed package is byte-compiled (pip does it); a checkout with
    # PYTHONDONTWRITEBYTECODE set would compile the client's modules in every process.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "src" / "chromasync")], check=True
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "CHROMASYNC_DATA_DIR": str(args.data_dir)}
    script = Path(sys.executable).with_name("chromasync")
    use_script = args.entry == "script" and script.exists()
    cli = [str(script)] if use_script else [sys.executable, "-m", "chromasync"]
    rows: dict[str, dict[str, float]] = {}
    load = {"start": os.getloadavg()[0]}

    def stop_daemon() -> None:
        subprocess.run([*cli, "daemon", "stop"], env=env, capture_output=True, timeout=120)

    stop_daemon()
    rows["python -c pass"] = figures(
        [timed([sys.executable, "-c", "pass"], env) for _ in range(args.floor)]
    )

    boots = []
    for i in range(args.boots):
        stop_daemon()
        boots.append(timed([*cli, "search", queries[i], "--json"], env))
    rows["hybrid, first query after boot (starts the daemon)"] = figures(boots)
    # the two daemon rows alternate query by query, so both see the same machine
    hybrid: list[float] = []
    keyword: list[float] = []
    for q in queries:
        hybrid.append(timed([*cli, "search", q, "--json"], env))
        keyword.append(timed([*cli, "search", q, "--mode", "keyword", "--json"], env))
    rows["hybrid, fresh process, warm daemon"] = figures(hybrid)
    rows["keyword, fresh process, warm daemon"] = figures(keyword)
    stop_daemon()

    rows["hybrid, fresh process, --no-daemon (before)"] = figures(
        [timed([*cli, "search", q, "--json", "--no-daemon"], env) for q in queries[: args.full]]
    )

    settings = api.resolve_settings({"data_dir": str(args.data_dir)}, os.environ)
    embedder = api.make_embedder_for(settings)
    sessions = api.WarmSessions(settings, lambda: embedder)
    first = api.search_request(api.SearchArgs.of(queries[0]), settings)
    api.retrieve(first, settings, sessions=sessions)
    # the two in-process rows alternate query by query, so both see the same machine
    warm: list[float] = []
    cold: list[float] = []
    for i, q in enumerate(queries):
        request = api.search_request(api.SearchArgs.of(q), settings)
        for kept in (True, False) if i % 2 else (False, True):
            began = time.perf_counter()
            if kept:
                api.retrieve(request, settings, sessions=sessions)
            else:
                api.retrieve(request, settings, embedder=embedder)
            (warm if kept else cold).append(time.perf_counter() - began)
    sessions.close()
    rows["hybrid, in process, warm sessions"] = figures(warm)
    rows["hybrid, in process, store opened per query (before)"] = figures(cold)
    load["end"] = os.getloadavg()[0]

    floor = rows["python -c pass"]["p50_ms"]
    print(f"\n{len(queries)} SciFact claims; load average {load['start']:.2f} -> {load['end']:.2f}")
    print(f"entry: {' '.join(cli)}")
    print(f"| {'what':<52} | {'n':>4} | {'p50 ms':>7} | {'p95 ms':>7} | {'p99 ms':>7} | x pass |")
    print(f"|{'-' * 54}|{'-' * 6}|{'-' * 9}|{'-' * 9}|{'-' * 9}|{'-' * 8}|")
    for name, row in rows.items():
        print(
            f"| {name:<52} | {row['n']:>4} | {row['p50_ms']:>7.1f} | {row['p95_ms']:>7.1f} "
            f"| {row['p99_ms']:>7.1f} | {row['p50_ms'] / floor:>6.1f} |"
        )
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "load": load}, indent=2))


def feedback_cost(args: argparse.Namespace) -> None:
    """Hybrid with the second round against the default hybrid, in one warm process."""
    from dataclasses import replace

    from chromasync.embed.querycache import QueryCache
    from chromasync.retrieve.results import FEEDBACK_FUSION

    queries = claims(args.queries)
    load = {"start": os.getloadavg()[0]}
    settings = api.resolve_settings({"data_dir": str(args.data_dir)}, os.environ)
    embedder = QueryCache(api.make_embedder_for(settings), len(queries) + 1)
    sessions = api.WarmSessions(settings, lambda: embedder)
    api.retrieve(
        api.search_request(api.SearchArgs.of(queries[0]), settings), settings, sessions=sessions
    )
    times: dict[bool, list[float]] = {True: [], False: []}
    for i, q in enumerate(queries):
        request = api.search_request(api.SearchArgs.of(q), settings)
        embedder.embed_query(q)  # cached (as the daemon's): both rows time the search alone
        for fed in (True, False) if i % 2 else (False, True):
            asked = replace(request, fusion=FEEDBACK_FUSION) if fed else request
            began = time.perf_counter()
            api.retrieve(asked, settings, sessions=sessions)
            times[fed].append(time.perf_counter() - began)
    sessions.close()
    load["end"] = os.getloadavg()[0]
    rows = {
        "hybrid, warm, with feedback (FEEDBACK_FUSION)": figures(times[True]),
        "hybrid, warm, default (DEFAULT_FUSION)": figures(times[False]),
    }
    before = rows["hybrid, warm, default (DEFAULT_FUSION)"]["p50_ms"]
    print(f"\n{len(queries)} SciFact claims; load average {load['start']:.2f} -> {load['end']:.2f}")
    for name, row in rows.items():
        print(
            f"| {name:<42} | {row['n']:>4} | {row['p50_ms']:>7.1f} | {row['p95_ms']:>7.1f} "
            f"| {row['p99_ms']:>7.1f} | {row['p50_ms'] / before:>5.2f}x |"
        )
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "load": load}, indent=2))


if __name__ == "__main__":
    main()
