#!/usr/bin/env python3
"""Triage suggestions (`chromasync suggest`) on the Hugo documentation, real default model.

    nice python benchmarks/suggest_bench.py [--work /tmp/chromasync-bench-suggest]
        [--files 240] [--held-out 60] [--seed 7]

1. Samples FILES Markdown files of ../shared/corpora/hugo-docs/content/en (files in a
   folder only) and copies them into WORK/corpus (never writing into the shared corpus),
   keeping their path under content/en: a file's true group is its top folder (`path:1`).
2. Moves HELD_OUT of them, at random, into WORK/inbox (named by their path, so nothing in the
   index says where they came from) and ingests the rest with the default `local` model.
3. Runs `api.suggest(..., group_by="path:1")` for each held-out file (chunked and embedded in
   memory) and counts how often its true group is first and among the first three; beside
   it, the folder of the single nearest document (`similar`'s top document), and the chance
   rates: 1/groups (a uniform guess) and the share of the biggest group among the indexed
   files (always guessing it). Also the accuracy per confidence band.

Prints a table and writes WORK/results.json.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "src"))

from chromasync import api  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/chromasync-bench-suggest"))
    parser.add_argument("--corpus", type=Path, default=SHARED / "corpora" / "hugo-docs")
    parser.add_argument("--files", type=int, default=240)
    parser.add_argument("--held-out", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--provider", default="local")
    args = parser.parse_args()

    content = args.corpus / "content" / "en"
    files = sorted(p for p in content.rglob("*.md") if len(p.relative_to(content).parts) > 1)
    rng = random.Random(args.seed)
    sample = rng.sample(files, min(args.files, len(files)))
    held = set(rng.sample(range(len(sample)), min(args.held_out, len(sample) - 1)))

    if args.work.exists():
        shutil.rmtree(args.work)
    corpus, inbox = args.work / "corpus", args.work / "inbox"
    inbox.mkdir(parents=True)
    truth: dict[Path, str] = {}
    indexed_groups: Counter[str] = Counter()
    for index, path in enumerate(sample):
        rel = path.relative_to(content)
        if index in held:
            target = inbox / "__".join(rel.parts)
            truth[target] = rel.parts[0]
        else:
            target = corpus / rel
            indexed_groups[rel.parts[0]] += 1
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)

    settings = api.resolve_settings(
        {"data_dir": str(args.work / "data"), "provider": args.provider}, {}
    )
    embedder = api.make_embedder_for(settings)
    began = time.perf_counter()
    summary = api.ingest([api.source_for(corpus)], settings, embedder=embedder)[0]
    ingest_s = time.perf_counter() - began
    print(f"ingested {summary.chunks_embedded} chunks in {ingest_s:.0f} s")

    first = top3 = nearest = 0
    bands: dict[str, list[int]] = {}
    rows = []
    began = time.perf_counter()
    for file, group in sorted(truth.items()):
        result = api.suggest(file, settings, group_by="path:1", embedder=embedder)
        groups = [g.group for g in result.groups]
        hit1 = bool(groups) and groups[0] == group
        first += hit1
        top3 += group in groups[:3]
        docs = result.similar.documents
        nearest += bool(docs) and docs[0].path.split("/")[0] == group
        if result.groups:
            bands.setdefault(result.groups[0].band, []).append(int(hit1))
        rows.append({"file": file.name, "true": group, "suggested": groups})
    suggest_s = time.perf_counter() - began
    n = len(truth)
    results = {
        "provider": args.provider,
        "model": embedder.model_id,
        "indexed_files": sum(indexed_groups.values()),
        "held_out": n,
        "groups": len(indexed_groups),
        "first": first / n,
        "top3": top3 / n,
        "nearest_document_folder": nearest / n,
        "chance_uniform_first": 1 / len(indexed_groups),
        "chance_uniform_top3": min(3, len(indexed_groups)) / len(indexed_groups),
        "chance_majority_first": max(indexed_groups.values()) / sum(indexed_groups.values()),
        "bands": {b: {"n": len(v), "first": sum(v) / len(v)} for b, v in sorted(bands.items())},
        "ingest_s": round(ingest_s, 1),
        "suggest_s_per_file": round(suggest_s / n, 3),
        "rows": rows,
    }
    (args.work / "results.json").write_text(json.dumps(results, indent=2))
    print(json.dumps({k: v for k, v in results.items() if k != "rows"}, indent=2))


if __name__ == "__main__":
    main()
