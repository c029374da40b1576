#!/usr/bin/env python3
"""Retrieval over NATS against REST, side by side: one `chromasync nats`, both surfaces.

    nice python benchmarks/nats_bench.py [--corpus DIR] [--requests 1000] [--concurrency 50]

Indexes a copy of the corpus (hugo-docs' `content/` by default) with the `hash` provider
(so the embedding model's time is left out: what is measured is the surface), starts a real
`nats-server` (JetStream on, loopback) and `chromasync nats` over the copy, then sends
`--requests` retrieval requests through each surface, `--concurrency` at a time:

* NATS: `corpus.retrieve.requested` request/reply with nats-py (`top_k` 8, hybrid);
* REST: `GET /search?q=...&k=8` (hybrid) with httpx on the same process's owner socket (the
  REST app `serve` runs, on the Unix socket every owner serves).

Both go to the same process, index and search seam, in alternating rounds of 100 (the
surface that goes first alternates too), so a change in the machine's load falls on both.
A request is an error when the reply is an error reply (NATS), a status other than 200
(REST), or a timeout (10 s, the design's). Prints n, errors, p50/p95/p99 ms and requests
per second for each, and the ratio; writes them as JSON with --out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402
import nats  # noqa: E402
from tests.servers import NatsServer  # noqa: E402

from chromasync.retrieve.evaluate import percentile  # noqa: E402

ROUND = 100
TIMEOUT_S = 10.0


def titles(root: Path, limit: int) -> list[str]:
    """One query per file: its first heading or title (the corpus's own words)."""
    out = []
    for path in sorted(root.rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace")
        found = re.search(r"^title:\s*['\"]?(.+?)['\"]?\s*$|^#+\s+(.+)$", text, flags=re.M)
        if found:
            out.append((found.group(1) or found.group(2)).strip()[:200])
        if len(out) >= limit:
            break
    return out or ["search"]


class Owner:
    """`chromasync nats DIR` as a subprocess, its stderr followed."""

    def __init__(self, corpus: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "chromasync", "nats", str(corpus)],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.ready = threading.Event()
        self.lines: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip())
            if "connected to" in line:
                self.ready.set()

    def stop(self) -> None:
        self.proc.send_signal(2)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


async def nats_round(url: str, queries: list[str], at_once: int) -> tuple[list[float], int]:
    nc = await nats.connect(url)
    slots = asyncio.Semaphore(at_once)
    errors = 0

    async def one(query: str) -> float:
        nonlocal errors
        body = json.dumps({"client_id": "bench", "query": query, "top_k": 8}).encode()
        async with slots:
            began = time.perf_counter()
            try:
                reply = await nc.request("corpus.retrieve.requested", body, timeout=TIMEOUT_S)
                if "error" in json.loads(reply.data):
                    errors += 1
            except Exception:
                errors += 1
            return time.perf_counter() - began

    try:
        took = list(await asyncio.gather(*(one(q) for q in queries)))
    finally:
        await nc.close()
    return took, errors


async def rest_round(socket: str, queries: list[str], at_once: int) -> tuple[list[float], int]:
    transport = httpx.AsyncHTTPTransport(uds=socket)
    limits = httpx.Limits(max_connections=at_once, max_keepalive_connections=at_once)
    slots = asyncio.Semaphore(at_once)
    errors = 0
    async with httpx.AsyncClient(
        transport=transport, base_url="http://localhost", timeout=TIMEOUT_S, limits=limits
    ) as client:

        async def one(query: str) -> float:
            nonlocal errors
            async with slots:
                began = time.perf_counter()
                try:
                    response = await client.get("/search", params={"q": query, "k": 8})
                    if response.status_code != 200:
                        errors += 1
                except Exception:
                    errors += 1
                return time.perf_counter() - began

        took = list(await asyncio.gather(*(one(q) for q in queries)))
    return took, errors


def figures(samples: list[float], errors: int, wall: float) -> dict[str, Any]:
    ms = sorted(s * 1000 for s in samples)
    return {
        "n": len(ms),
        "errors": errors,
        "p50_ms": round(percentile(ms, 0.50), 1),
        "p95_ms": round(percentile(ms, 0.95), 1),
        "p99_ms": round(percentile(ms, 0.99), 1),
        "per_s": round(len(ms) / wall, 1) if wall else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=SHARED / "corpora" / "hugo-docs" / "content")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="chromasync-nats-bench-"))
    corpus = work / "corpus"
    shutil.copytree(args.corpus, corpus)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "CHROMASYNC_DATA_DIR": str(work / "data"),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_API_TOKEN": "",
        "CHROMASYNC_NO_DAEMON": "1",
    }
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "chromasync", "ingest", str(corpus)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    print(f"indexed {args.corpus} in {time.perf_counter() - began:.1f} s", flush=True)
    server = NatsServer(work / "nats").start()
    owner = Owner(corpus, {**env, "CHROMASYNC_NATS_URL": server.url})
    try:
        if not owner.ready.wait(120):
            raise SystemExit("chromasync nats did not connect: " + "\n".join(owner.lines))
        socket = str(work / "data" / "owner.sock")
        queries = titles(corpus, args.requests)
        queries = [queries[i % len(queries)] for i in range(args.requests)]
        asyncio.run(nats_round(server.url, queries[:50], args.concurrency))  # warm both
        asyncio.run(rest_round(socket, queries[:50], args.concurrency))
        took: dict[str, list[float]] = {"nats": [], "rest": []}
        errors = {"nats": 0, "rest": 0}
        wall = {"nats": 0.0, "rest": 0.0}
        for number, start in enumerate(range(0, len(queries), ROUND)):
            batch = queries[start : start + ROUND]
            order = ("nats", "rest") if number % 2 == 0 else ("rest", "nats")
            for surface in order:
                t0 = time.perf_counter()
                if surface == "nats":
                    samples, failed = asyncio.run(nats_round(server.url, batch, args.concurrency))
                else:
                    samples, failed = asyncio.run(rest_round(socket, batch, args.concurrency))
                wall[surface] += time.perf_counter() - t0
                took[surface] += samples
                errors[surface] += failed
        result = {s: figures(took[s], errors[s], wall[s]) for s in ("nats", "rest")}
        result["nats_over_rest_p50"] = round(
            result["nats"]["p50_ms"] / max(result["rest"]["p50_ms"], 1e-9), 2
        )
        print(f"{args.requests} requests per surface, {args.concurrency} at a time:")
        print("| surface | n | errors | p50 ms | p95 ms | p99 ms | requests/s |")
        print("|---|---|---|---|---|---|---|")
        for surface in ("nats", "rest"):
            f = result[surface]
            print(
                f"| {surface} | {f['n']} | {f['errors']} | {f['p50_ms']} | {f['p95_ms']} | "
                f"{f['p99_ms']} | {f['per_s']} |"
            )
        print(f"NATS p50 / REST p50: {result['nats_over_rest_p50']}x")
        if args.out:
            args.out.write_text(json.dumps(result, indent=2) + "\n")
    finally:
        owner.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
