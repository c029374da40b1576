#!/usr/bin/env python3
"""Retrieval quality and latency on SciFact (5,183 abstracts, 809 training claims).

    python benchmarks/retrieval.py [--work /tmp/chromasync-bench-retrieval] [--sweep] [--feedback]
        [--embed-option variant=fp32 ...]

1. Materialises SciFact as Markdown files (../shared/tools/materialize_scifact.py) into
   WORK/scifact, once.
2. Ingests it with the real default model into WORK/scifact-data, once (6-10 minutes of CPU;
   later runs find nothing changed and embed nothing). Run it under `nice`. Each
   `--embed-option KEY=VALUE` is passed to the embedder (as the CLI's option) and gets its
   own data dir (WORK/scifact-data-variant-fp32), so variants can be compared.
3. Writes the training claims as an eval file (WORK/train_eval.jsonl: query + relevant ids,
   matched by file stem) and measures nDCG@10, recall@10 and MRR@10 for dense, keyword and
   hybrid (`api.evaluate`, the code behind `chromasync eval`: what `search --per-doc` returns;
   fusion variants are chosen in benchmarks/fusion.py). With `--sweep`, the heading weight.
4. Measures query latency, p50 and p95, per mode: in a warm process (`api.retrieve` with
   the model loaded) and through the CLI (`python -m chromasync search ... --json`, a new
   process per query).

Results are printed as tables and written to WORK/results.json (with options:
WORK/results-variant-fp32.json).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "src"))

from chromasync import api  # noqa: E402
from chromasync.retrieve.evaluate import percentile  # noqa: E402


def materialise(work: Path) -> Path:
    corpus = work / "scifact"
    if not (corpus.is_dir() and sum(1 for _ in corpus.glob("*.md")) == 5183):
        tool = SHARED / "tools" / "materialize_scifact.py"
        subprocess.run([sys.executable, str(tool), str(corpus)], check=True)
    return corpus


def ingest(corpus: Path, settings: api.Settings) -> dict[str, object]:
    began, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    [summary] = api.ingest([api.source_for(corpus)], settings)
    figures = summary.as_json()
    figures["wall_s"] = round(time.perf_counter() - began, 1)
    after = resource.getrusage(resource.RUSAGE_SELF)
    figures["cpu_s"] = round(after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime, 1)
    return figures


def write_eval_file(work: Path) -> Path:
    out = work / "train_eval.jsonl"
    source = SHARED / "corpora" / "scifact" / "train_queries.jsonl"
    with source.open() as src, out.open("w") as dst:
        for line in src:
            row = json.loads(line)
            dst.write(
                json.dumps({"id": row["id"], "query": row["query"], "relevant": row["relevant"]})
            )
            dst.write("\n")
    return out


def heading_sweep(settings: api.Settings, queries: list, embedder: object) -> dict[str, float]:
    """Keyword nDCG@10 for several weights of the heading column in BM25."""
    from chromasync.retrieve.tasks import run_evaluation

    out = {}
    for weight in (0.0, 0.5, 1.0, 2.0):
        with api.open_retriever(settings, embedder) as retriever:  # type: ignore[arg-type]
            assert retriever.local_index is not None
            retriever.local_index.heading_weight = weight
            report = run_evaluation(retriever, queries, modes=("keyword",))
        out[f"heading x{weight}"] = report.modes["keyword"]["ndcg"]
    return out


def warm_latency(
    settings: api.Settings, queries: list[str], embedder: object
) -> dict[str, dict[str, float]]:
    out = {}
    for mode in api.MODES:
        times = []
        for query in queries:
            began = time.perf_counter()
            api.retrieve(api.SearchRequest(query, mode=mode, k=10), settings, embedder=embedder)  # type: ignore[arg-type]
            times.append((time.perf_counter() - began) * 1000)
        out[mode] = {"p50_ms": percentile(times, 0.5), "p95_ms": percentile(times, 0.95)}
    return out


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--work", type=Path, default=Path("/tmp/chromasync-bench-retrieval"))
    parser.add_argument("--sweep", action="store_true", help="also sweep the heading weight")
    parser.add_argument("--feedback", action="store_true", help="also measure hybrid+feedback")
    parser.add_argument("--limit", type=int, default=None, help="only the first N queries")
    parser.add_argument("--latency-queries", type=int, default=100)
    parser.add_argument("--cli-queries", type=int, default=15)
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
    data_dir = args.work / "-".join(
        ["scifact-data", *(f"{k}-{v}" for k, v in sorted(options.items()))]
    )

    corpus = materialise(args.work)
    # One shared collection (`chromasync`), whatever the default layout.
    settings = api.resolve_settings(
        {"data_dir": str(data_dir), "collections": "shared", "provider_options": options or None},
        {},
    )
    results: dict[str, object] = {"embed_options": options, "ingest": ingest(corpus, settings)}
    print("ingest:", json.dumps(results["ingest"]))

    eval_file = write_eval_file(args.work)
    queries = api.load_queries(eval_file)[: args.limit]
    embedder = api.make_embedder_for(settings)
    began = time.perf_counter()
    report = api.evaluate(queries, settings, embedder=embedder, feedback=args.feedback)
    results["eval_s"] = round(time.perf_counter() - began, 1)
    results["quality"] = report.as_json()
    print(f"\n{report.queries} SciFact training queries ({results['eval_s']} s)")
    print(f"{'mode':<22} {'nDCG@10':>8} {'R@10':>7} {'MRR@10':>7}")
    for mode, m in report.modes.items():
        figures = (m["ndcg"], m["recall"], m["mrr"])
        print(f"{mode:<22} {figures[0]:>8.4f} " + " ".join(f"{x:>7.4f}" for x in figures[1:]))

    if args.sweep:
        results["heading_sweep"] = heading_sweep(settings, queries, embedder)
        print("\nkeyword nDCG@10 by heading weight:", json.dumps(results["heading_sweep"]))

    texts = [q.query for q in queries]
    results["latency_warm_ms"] = warm_latency(settings, texts[: args.latency_queries], embedder)
    results["latency_cli_ms"] = cli_latency(settings, texts[: args.cli_queries])
    print(f"\n{'latency (ms)':<12} {'warm p50':>9} {'warm p95':>9} {'CLI p50':>9} {'CLI p95':>9}")
    for mode in api.MODES:
        w = results["latency_warm_ms"][mode]  # type: ignore[index]
        c = results["latency_cli_ms"][mode]  # type: ignore[index]
        cells = (w["p50_ms"], w["p95_ms"], c["p50_ms"], c["p95_ms"])
        print(f"{mode:<12} " + " ".join(f"{x:>9.1f}" for x in cells))
    out = data_dir.with_name(data_dir.name.replace("scifact-data", "results") + ".json")
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
