#!/usr/bin/env python3
"""Extractive answer quality on SciFact, and time to first token against a local server.

    python benchmarks/answer_bench.py [--work /tmp/chromasync-bench-answer] [--k 5]
                                      [--limit N]
    python benchmarks/answer_bench.py --data-dir DIR --mode hybrid   # what a user gets

1. Materialises SciFact as Markdown (../shared/tools/materialize_scifact.py) into
   WORK/scifact, once (never into ../shared).
2. Ingests it with the deterministic `hash` provider into WORK/data, once; retrieval is
   keyword-only (`api.search(..., mode="keyword")`, BM25), so the embedder plays no part.
3. For each of the 809 training claims: the top `k` hits, then `answer_question` without a
   model (the extractive answer). support@3: share of claims where at least one of the
   first 3 cited documents (citation order) is relevant; compared with hit@3 of the
   retrieval itself (a relevant document among the first 3 hits). Also the median answer
   length in characters (markers included) and the answer time per claim.
4. Time to first token: `ChatClient.stream` against the loopback test server
   (tests/chat_server.py), 20 requests; median and p95.

`--data-dir DIR --mode hybrid`: steps 3 and 4 only, on a data dir that already holds SciFact
indexed with the default model (e.g. `benchmarks/fusion.py dump`'s WORK/scifact-data) and
searched as `chromasync ask` searches by default (hybrid): the support a user gets.

Prints a table and writes WORK/answer_results.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

from tests.chat_server import ChatServer, Reply  # noqa: E402

from chromasync import api  # noqa: E402
from chromasync.answer.ask import answer_question  # noqa: E402
from chromasync.answer.chat import ChatClient  # noqa: E402
from chromasync.answer.prompt import Message  # noqa: E402


def materialise(work: Path) -> Path:
    corpus = work / "scifact"
    if not (corpus.is_dir() and sum(1 for _ in corpus.glob("*.md")) == 5183):
        tool = SHARED / "tools" / "materialize_scifact.py"
        subprocess.run([sys.executable, str(tool), str(corpus)], check=True)
    return corpus


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def answer_quality(
    settings: api.Settings, k: int, limit: int | None, mode: str = "keyword"
) -> dict[str, object]:
    claims = [
        json.loads(line) for line in (SHARED / "corpora" / "scifact" / "train_queries.jsonl").open()
    ][:limit]
    supported = retrieved = 0
    lengths: list[int] = []
    answer_ms: list[float] = []
    cited_counts: list[int] = []
    for claim in claims:
        relevant = set(claim["relevant"])
        hits = api.search(claim["query"], settings, k=k, mode=mode)
        if any(Path(h.path).stem in relevant for h in hits[:3]):
            retrieved += 1
        began = time.perf_counter()
        answer = answer_question(claim["query"], hits)
        answer_ms.append((time.perf_counter() - began) * 1000)
        cited = [Path(c.path).stem for c in answer.citations][:3]
        cited_counts.append(len(answer.citations))
        if any(stem in relevant for stem in cited):
            supported += 1
        lengths.append(len(answer.text))
    n = len(claims)
    return {
        "claims": n,
        "k": k,
        "mode": mode,
        "support@3": round(supported / n, 4),
        "retrieval_hit@3": round(retrieved / n, 4),
        "median_answer_chars": statistics.median(lengths),
        "mean_cited_sources": round(statistics.mean(cited_counts), 2),
        "answer_ms_p50": round(quantile(answer_ms, 0.5), 2),
        "answer_ms_p95": round(quantile(answer_ms, 0.95), 2),
    }


def first_token(requests: int = 20) -> dict[str, object]:
    times: list[float] = []
    with ChatServer() as server:
        server.default = Reply("Hugo is one binary [1]. " * 20)
        client = ChatClient(server.url, "test-chat")
        for _ in range(requests):
            result = client.stream([Message("user", "hi")])
            assert result.first_token_s is not None
            times.append(result.first_token_s * 1000)
    return {
        "requests": requests,
        "ttft_ms_p50": round(quantile(times, 0.5), 2),
        "ttft_ms_p95": round(quantile(times, 0.95), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/chromasync-bench-answer"))
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--data-dir", type=Path, default=None, help="SciFact, default model")
    parser.add_argument("--mode", choices=("keyword", "hybrid", "dense"), default="keyword")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.data_dir is not None:
        indexed = api.resolve_settings(
            {"data_dir": str(args.data_dir)}, {"CHROMASYNC_COLLECTIONS": "shared"}
        )
        quality = answer_quality(indexed, args.k, args.limit, args.mode)
        for key, value in quality.items():
            print(f"  {key:22} {value}")
        (args.work / f"answer_results_{args.mode}.json").write_text(json.dumps(quality, indent=2))
        return
    corpus = materialise(args.work)
    settings = api.resolve_settings(
        {"data_dir": str(args.work / "data"), "provider": "hash"},
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    began = time.perf_counter()
    [summary] = api.ingest([api.source_for(corpus, "scifact")], settings)
    ingest_s = round(time.perf_counter() - began, 1)
    results: dict[str, object] = {
        "ingest": {"wall_s": ingest_s, "chunks": summary.chunks_total},
        "extractive": answer_quality(settings, args.k, args.limit, args.mode),
        "time_to_first_token": first_token(),
    }
    for section, figures in results.items():
        print(f"{section}:")
        for key, value in figures.items():  # type: ignore[attr-defined]
            print(f"  {key:22} {value}")
    (args.work / "answer_results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
