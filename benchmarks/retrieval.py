#!/usr/bin/env python3
"""Retrieval quality and latency of every search mode on SciFact and NFCorpus.

    nice python benchmarks/retrieval.py [--corpus scifact --corpus nfcorpus]
        [--work /tmp/chromasync-bench-retrieval] [--rerank FOLDER] [--limit N]
        [--latency-queries 100] [--cli-queries 0] [--embed-option variant=fp32 ...]

For each corpus (both by default):

1. Materialises it as Markdown files (../shared/tools/materialize_scifact.py) into
   WORK/CORPUS, once.
2. Ingests it with the real default model into WORK/CORPUS-data, once (later runs find
   nothing changed and embed nothing). Each `--embed-option KEY=VALUE` is passed to the
   embedder and gets its own data dir (WORK/scifact-data-variant-fp32).
3. Splits the corpus's judged queries (SciFact's 809 training claims, NFCorpus's 324 dev
   questions with graded judgements) into `choose` (two thirds) and `held-out` (one third)
   by a hash of each query's id (`held_out`), written as WORK/CORPUS-choose.jsonl and
   WORK/CORPUS-held-out.jsonl: `chromasync eval FILE --feedback` on the data dir gives the
   same rows. A default is chosen on `choose` and checked on `held-out`.
4. Runs `api.evaluate` (the code behind `chromasync eval`: each question a
   `search --per-doc --k 10`) for dense, keyword, hybrid, hybrid with feedback and, with
   `--rerank`, hybrid reranked; per split: nDCG@10 (graded on NFCorpus), recall@10, MRR@10,
   and each row's per-question wins and losses against plain hybrid with a paired
   randomisation test (2,000 sign flips).
5. Measures warm query latency (p50, p95) per search in one process (`api.WarmSessions`,
   as the daemon, REST and MCP search; the query embedded each time), the searches
   alternating query by query; with `--cli-queries N`, also a new `python -m chromasync
   search` process per query.

Prints tables and writes WORK/results-CORPUS.json (with options:
WORK/results-CORPUS-variant-fp32.json). Run it under `nice`, alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "src"))

from fusion import sign_flip_p  # noqa: E402  (benchmarks/fusion.py: the paired test)

from chromasync import api  # noqa: E402
from chromasync.retrieve.evaluate import percentile  # noqa: E402

#: corpus -> (its judged queries file, its number of documents)
CORPORA = {"scifact": ("train_queries.jsonl", 5183), "nfcorpus": ("dev_queries.jsonl", 3395)}
#: The searches timed, as `SearchArgs` options (what eval's rows run).
SEARCHES: dict[str, dict[str, Any]] = {
    "dense": {"mode": "dense"},
    "keyword": {"mode": "keyword"},
    "hybrid": {"mode": "hybrid"},
    "hybrid+feedback": {"mode": "hybrid", "feedback": True},
}


def held_out(corpus: str, query_id: str) -> bool:
    """Whether a query is in the held-out third: fixed by its id, not by its figures."""
    return hashlib.sha256(f"{corpus}:{query_id}".encode()).digest()[0] % 3 == 0


def materialise(work: Path, corpus: str) -> Path:
    out = work / corpus
    if not (out.is_dir() and sum(1 for _ in out.glob("*.md")) == CORPORA[corpus][1]):
        tool = SHARED / "tools" / "materialize_scifact.py"
        subprocess.run([sys.executable, str(tool), str(out), "--corpus", corpus], check=True)
    return out


def ingest(corpus: Path, settings: api.Settings) -> dict[str, object]:
    began, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    [summary] = api.ingest([api.source_for(corpus)], settings)
    figures = summary.as_json()
    figures["wall_s"] = round(time.perf_counter() - began, 1)
    after = resource.getrusage(resource.RUSAGE_SELF)
    figures["cpu_s"] = round(after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime, 1)
    return figures


def split_files(work: Path, corpus: str) -> dict[str, Path]:
    """The corpus's judged queries as two eval files, `choose` and `held-out`."""
    lines = (SHARED / "corpora" / corpus / CORPORA[corpus][0]).read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    out = {}
    for name, wanted in (("choose", False), ("held-out", True)):
        out[name] = work / f"{corpus}-{name}.jsonl"
        kept = [r for r in rows if held_out(corpus, str(r["id"])) == wanted]
        out[name].write_text("".join(json.dumps(r) + "\n" for r in kept))
    return out


def quality(report: Any, split: Sequence[bool]) -> dict[str, dict[str, float]]:
    """Per search, over the queries where `split` is true: the means, and against hybrid
    the gap in the headline nDCG, wins, losses and the paired test's p."""
    head = report.headline
    hybrid = [r[head] for r, keep in zip(report.per_query["hybrid"], split, strict=True) if keep]
    out = {}
    for name, rows in report.per_query.items():
        kept = [r for r, keep in zip(rows, split, strict=True) if keep]
        means = {m: sum(r[m] for r in kept) / len(kept) for m in ("ndcg", head, "recall", "mrr")}
        mine = [r[head] for r in kept]
        wins = sum(x - y > 1e-9 for x, y in zip(mine, hybrid, strict=True))
        losses = sum(y - x > 1e-9 for x, y in zip(mine, hybrid, strict=True))
        means |= {"vs_hybrid": means[head] - sum(hybrid) / len(hybrid), "wins": wins}
        means |= {"losses": losses, "p": sign_flip_p(mine, hybrid) if name != "hybrid" else 1.0}
        out[name] = means
    return out


def warm_latency(settings: api.Settings, queries: list[str]) -> dict[str, dict[str, float]]:
    """p50 and p95 ms of each search in `SEARCHES`, in one warm process, alternating."""
    embedder = api.make_embedder_for(settings)
    sessions = api.WarmSessions(settings, lambda: embedder)
    times: dict[str, list[float]] = {name: [] for name in SEARCHES}
    names = list(SEARCHES)
    for i, query in enumerate([queries[0], *queries]):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            request = api.search_request(api.SearchArgs.of(query, **SEARCHES[name]), settings)
            began = time.perf_counter()
            api.retrieve(request, settings, sessions=sessions)
            if i:  # the first query warms everything up
                times[name].append((time.perf_counter() - began) * 1000)
    sessions.close()
    return {
        n: {"p50_ms": percentile(t, 0.5), "p95_ms": percentile(t, 0.95)} for n, t in times.items()
    }


def cli_latency(settings: api.Settings, queries: list[str]) -> dict[str, dict[str, float]]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "CHROMASYNC_DATA_DIR": str(settings.data_dir),
        "CHROMASYNC_COLLECTIONS": "shared",
    }
    out = {}
    for mode in api.MODES:
        times = []
        for query in queries:
            began = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "chromasync", "search", query, "--mode", mode, "--json"],
                env=env,
                check=True,
                capture_output=True,
            )
            times.append((time.perf_counter() - began) * 1000)
        out[mode] = {"p50_ms": percentile(times, 0.5), "p95_ms": percentile(times, 0.95)}
    return out


def print_quality(corpus: str, split: str, n: int, rows: Mapping[str, Mapping[str, float]]) -> None:
    print(f"\n{corpus}, {split} ({n} queries)")
    print(f"{'search':<18} {'nDCG@10':>8} {'graded':>7} {'R@10':>6} {'MRR@10':>7}  vs hybrid")
    for name, m in rows.items():
        versus = (
            f"{m['vs_hybrid']:+.4f} ({m['wins']:.0f} wins, {m['losses']:.0f} losses, "
            f"p={m['p']:.3f})"
            if name != "hybrid"
            else ""
        )
        cells = (m["ndcg"], m.get("ndcg_graded", m["ndcg"]), m["recall"], m["mrr"])
        print(
            f"{name:<18} {cells[0]:>8.4f} {cells[1]:>7.4f} {cells[2]:>6.3f} {cells[3]:>7.4f}"
            f"  {versus}"
        )


def run_corpus(args: argparse.Namespace, corpus: str, options: dict[str, str]) -> None:
    data_dir = args.work / "-".join(
        [f"{corpus}-data", *(f"{k}-{v}" for k, v in sorted(options.items()))]
    )
    # One shared collection (`chromasync`), whatever the default layout.
    given = {
        "data_dir": str(data_dir),
        "collections": "shared",
        "provider_options": options or None,
    }
    if args.rerank:
        given["rerank_model"] = str(args.rerank)
    settings = api.resolve_settings(given, {})
    results: dict[str, Any] = {
        "embed_options": options,
        "ingest": ingest(materialise(args.work, corpus), settings),
    }
    print(f"{corpus} ingest:", json.dumps(results["ingest"]))

    files = split_files(args.work, corpus)
    queries = [q for f in files.values() for q in api.load_queries(f)[: args.limit]]
    split = [held_out(corpus, q.id) for q in queries]
    began = time.perf_counter()
    report = api.evaluate(
        queries, settings, embedder=api.make_embedder_for(settings), feedback=True
    )
    results["eval_s"] = round(time.perf_counter() - began, 1)
    results["quality"] = {}
    for name, keep in (
        ("choose", [not s for s in split]),
        ("held-out", split),
        ("all", [True] * len(split)),
    ):
        rows = quality(report, keep)
        results["quality"][name] = rows
        print_quality(corpus, name, sum(keep), rows)
    results["per_query"] = report.as_json()["per_query"]

    texts = [q.query for q in queries][: args.latency_queries]
    results["latency_warm_ms"] = warm_latency(settings, texts)
    print(f"\n{'warm latency (ms)':<18} {'p50':>7} {'p95':>7}  ({len(texts)} queries)")
    for name, w in results["latency_warm_ms"].items():
        print(f"{name:<18} {w['p50_ms']:>7.1f} {w['p95_ms']:>7.1f}")
    if args.cli_queries:
        results["latency_cli_ms"] = cli_latency(settings, texts[: args.cli_queries])
        print("CLI (new process) p50/p95 ms:", json.dumps(results["latency_cli_ms"]))
    out = args.work / (data_dir.name.replace(f"{corpus}-data", f"results-{corpus}") + ".json")
    out.write_text(json.dumps(results, indent=2))
    print(f"written to {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--work", type=Path, default=Path("/tmp/chromasync-bench-retrieval"))
    parser.add_argument("--corpus", action="append", choices=sorted(CORPORA))
    parser.add_argument("--rerank", type=Path, help="a local cross-encoder folder")
    parser.add_argument(
        "--limit", type=int, default=None, help="only the first N queries of each split"
    )
    parser.add_argument("--latency-queries", type=int, default=100)
    parser.add_argument("--cli-queries", type=int, default=0)
    parser.add_argument(
        "--embed-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an embedder option (e.g. variant=fp32); each set gets its own data dir",
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    options = dict(pair.split("=", 1) for pair in args.embed_option)
    for corpus in args.corpus or ["scifact", "nfcorpus"]:
        run_corpus(args, corpus, options)


if __name__ == "__main__":
    main()
