#!/usr/bin/env python3
"""Fusion and relevance-scale choices measured on two corpora: SciFact and NFCorpus.

    nice python benchmarks/fusion.py dump [--work /tmp/chromasync-bench-fusion]
    python benchmarks/fusion.py explore [--work ...] [--markdown]

`dump` materialises each corpus (../shared/tools/materialize_scifact.py), ingests it once
with the real default model into WORK/<corpus>-data (later runs embed nothing), then, for
every judged query (SciFact's 809 training claims, NFCorpus's 324 dev questions with graded
judgements), gathers the dense and keyword lists exactly as a search does (200 chunks each;
keyword also with the title (heading) column weighted 0, 2 and 4) and writes them to
WORK/<corpus>-lists.json. Nothing is embedded twice.

`explore` reads the dumps and, in pure Python and with the code search runs
(`retrieve.fuse`, `retrieve.evaluate`), measures every candidate fusion: nDCG@10 (binary
and graded), recall@100 and per-query wins and losses, and the relevance scale's precision
above 0.8, 0.5 and 0.2. The tables in docs/retrieval.md come from `explore --markdown`.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "src"))

from chromasync.retrieve import evaluate as ev  # noqa: E402
from chromasync.retrieve.fuse import Fusion, Ranked, fuse  # noqa: E402

CORPORA = {
    "scifact": ("train_queries.jsonl", 5183),
    "nfcorpus": ("dev_queries.jsonl", 3395),
}
HEADING_WEIGHTS = (0.0, 2.0, 4.0)  # besides the default 1.0
DEPTH = 200


def materialise(work: Path, name: str) -> Path:
    corpus = work / name
    if not (corpus.is_dir() and sum(1 for _ in corpus.glob("*.md")) == CORPORA[name][1]):
        tool = SHARED / "tools" / "materialize_scifact.py"
        subprocess_args = [sys.executable, str(tool), str(corpus), "--corpus", name]
        import subprocess

        subprocess.run(subprocess_args, check=True)
    return corpus


def dump(work: Path, name: str) -> Path:
    from chromasync import api
    from chromasync.retrieve.results import SearchRequest

    corpus = materialise(work, name)
    settings = api.resolve_settings(
        {"data_dir": str(work / f"{name}-data"), "collections": "shared"}, {}
    )
    began = time.perf_counter()
    [summary] = api.ingest([api.source_for(corpus)], settings)
    print(f"{name}: ingest {json.dumps(summary.as_json())} {time.perf_counter() - began:.1f} s")
    queries = [
        json.loads(line)
        for line in (SHARED / "corpora" / name / CORPORA[name][0]).read_text().splitlines()
        if line.strip()
    ]
    embedder = api.make_embedder_for(settings)
    rows = []

    def listed(hits: object) -> list[list[object]]:
        return [[h.id, Path(h.path).stem, round(h.score, 6)] for h in hits]  # type: ignore[attr-defined]

    began = time.perf_counter()
    with api.open_retriever(settings, embedder) as retriever:
        index = retriever.local_index
        assert index is not None
        for number, query in enumerate(queries, 1):
            request = SearchRequest(query["query"], k=100, candidates=DEPTH)
            index.heading_weight = 1.0
            gathered = retriever.gather(request, ("hybrid",))
            row = {
                "id": query["id"],
                "query": query["query"],
                "relevant": query["relevant"],
                "grades": query.get("grades") or {},
                "dense": listed(gathered.dense),
                "keyword": listed(gathered.keyword),
            }
            for weight in HEADING_WEIGHTS:
                index.heading_weight = weight
                again = retriever.gather(request, ("keyword",))
                row[f"keyword_h{weight:g}"] = listed(again.keyword)
            rows.append(row)
            if number % 100 == 0:
                print(f"{name}: {number}/{len(queries)} {time.perf_counter() - began:.0f} s")
    out = work / f"{name}-lists.json"
    out.write_text(json.dumps(rows))
    print(f"{name}: {len(rows)} queries written to {out}")
    return out


# -- explore: pure Python over the dumps ---------------------------------------------------

Row = dict[str, Any]
Listed = list[tuple[str, str, float]]  # (chunk id, document, score), best first
Candidate = Callable[[Row], list[tuple[str, float]]]  # a row -> (document, score), best first


def listed(row: Row, name: str) -> Listed:
    return [(str(r), str(d), float(s)) for r, d, s in row[name]]


def by_doc(items: Listed) -> Listed:
    """The list reduced to each document's best chunk (document-level evidence)."""
    seen: set[str] = set()
    out: Listed = []
    for _, doc, score in items:
        if doc not in seen:
            seen.add(doc)
            out.append((doc, doc, score))
    return out


def first_per_doc(
    pairs: Sequence[tuple[str, float]], doc_of: Mapping[str, str]
) -> list[tuple[str, float]]:
    seen: set[str] = set()
    out = []
    for key, score in pairs:
        doc = doc_of[key]
        if doc not in seen:
            seen.add(doc)
            out.append((doc, score))
    return out


def single(name: str) -> Candidate:
    return lambda row: [(d, s) for _, d, s in by_doc(listed(row, name))]


def fused(fusion: Fusion, *, per_doc: bool, keyword: str = "keyword") -> Candidate:
    def run(row: Row) -> list[tuple[str, float]]:
        dense, kw = listed(row, "dense"), listed(row, keyword)
        if per_doc:
            dense, kw = by_doc(dense), by_doc(kw)
        doc_of = {rid: doc for rid, doc, _ in (*dense, *kw)}
        lists = [
            Ranked("dense", tuple((r, s) for r, _, s in dense)),
            Ranked("keyword", tuple((r, s) for r, _, s in kw)),
        ]
        return first_per_doc(fuse(lists, fusion), doc_of)

    return run


def judged(row: Row) -> dict[str, float]:
    gains = {str(d): 1.0 for d in row["relevant"]}
    gains.update({str(d): float(g) for d, g in row["grades"].items()})
    return gains


def metrics(row: Row, docs: Sequence[str]) -> dict[str, float]:
    gains = judged(row)
    top = list(docs[: ev.DEPTH])
    flags = [d in gains for d in top]
    graded = [gains.get(d, 0.0) for d in top]
    return ev.query_metrics(flags, len(gains), 10, graded, gains.values())


def sign_flip_p(a: Sequence[float], b: Sequence[float], rounds: int = 2000) -> float:
    """Two-sided paired randomisation test of mean(a) - mean(b) (a fixed seed)."""
    gaps = [x - y for x, y in zip(a, b, strict=True)]
    observed = abs(sum(gaps))
    rng = random.Random(0)
    hits = sum(
        abs(sum(g if rng.random() < 0.5 else -g for g in gaps)) >= observed - 1e-12
        for _ in range(rounds)
    )
    return (hits + 1) / (rounds + 1)


def candidates() -> dict[str, Candidate]:
    out: dict[str, Candidate] = {"keyword": single("keyword"), "dense": single("dense")}
    for per_doc, tag in ((False, "chunk"), (True, "doc")):
        for k in (10, 30, 60, 100):
            out[f"{tag} rrf k={k}"] = fused(Fusion("rrf", k=k), per_doc=per_doc)
        for a in (0.3, 0.4, 0.5, 0.6, 0.7):
            weights = {"dense": a, "keyword": 1 - a}
            out[f"{tag} minmax a={a:.1f}"] = fused(
                Fusion("convex", weights=weights), per_doc=per_doc
            )
            out[f"{tag} zscore a={a:.1f}"] = fused(
                Fusion("zscore", weights=weights), per_doc=per_doc
            )
    for weight in HEADING_WEIGHTS:
        name = f"keyword_h{weight:g}"
        out[f"keyword, title x{weight:g}"] = single(name)
        out[f"doc zscore a=0.5, title x{weight:g}"] = fused(
            Fusion("zscore"), per_doc=True, keyword=name
        )
        out[f"doc rrf k=60, title x{weight:g}"] = fused(
            Fusion("rrf", k=60), per_doc=True, keyword=name
        )
    return out


# -- the relevance scale ---------------------------------------------------------------------

Features = Callable[[Sequence[float], int], list[float]]  # (fused scores best first, i)


def logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-min(max(x, -50.0), 50.0)))


def fit_logistic(
    xs: Sequence[Sequence[float]], ys: Sequence[bool], ws: Sequence[float], steps: int = 25
) -> list[float]:
    """Weighted logistic regression by Newton's method (with an intercept, last)."""
    dim = len(xs[0]) + 1
    beta = [0.0] * dim
    for _ in range(steps):
        grad = [0.0] * dim
        hess = [[1e-6 * (i == j) for j in range(dim)] for i in range(dim)]
        for x, y, w in zip(xs, ys, ws, strict=True):
            row = [*x, 1.0]
            p = logistic(sum(b * v for b, v in zip(beta, row, strict=True)))
            for i in range(dim):
                grad[i] += w * (float(y) - p) * row[i]
                for j in range(dim):
                    hess[i][j] += w * p * (1 - p) * row[i] * row[j]
        beta = [b + d for b, d in zip(beta, solve(hess, grad), strict=True)]
    return beta


def solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (tiny systems)."""
    n = len(b)
    m = [[*row, rhs] for row, rhs in zip(a, b, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col and m[col][col]:
                f = m[r][col] / m[col][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=True)]
    return [m[i][n] / m[i][i] if m[i][i] else 0.0 for i in range(n)]


def scale_rows(
    rows_by_corpus: Mapping[str, Sequence[Row]], candidate: Candidate, depth: int = 10
) -> dict[str, list[tuple[list[float], list[bool]]]]:
    """Per corpus, per query: the fused scores of its top documents and their judgements."""
    out: dict[str, list[tuple[list[float], list[bool]]]] = {}
    for name, rows in rows_by_corpus.items():
        for row in rows:
            ranked = candidate(row)[:depth]
            gains = judged(row)
            out.setdefault(name, []).append(
                ([s for _, s in ranked], [d in gains for d, _ in ranked])
            )
    return out


def scale_report(
    data: Mapping[str, Sequence[tuple[list[float], list[bool]]]],
    value: Callable[[Sequence[float], int], float],
) -> dict[str, dict[str, float]]:
    """Per corpus: precision and share of top-10 hits at or above 0.8, 0.5, 0.2, and how
    the top five spread (the mean of relevance@1 - relevance@5)."""
    out = {}
    for name, queries in data.items():
        above = {t: [0, 0] for t in (0.8, 0.5, 0.2)}
        spread = []
        total = 0
        for scores, labels in queries:
            values = [value(scores, i) for i in range(len(scores))]
            total += len(values)
            for t in above:
                for v, y in zip(values, labels, strict=True):
                    if v >= t:
                        above[t][0] += 1
                        above[t][1] += y
            if len(values) >= 5:
                spread.append(values[0] - values[4])
        figures: dict[str, float] = {}
        for t, (n, good) in above.items():
            figures[f"P>={t}"] = good / n if n else float("nan")
            figures[f"share>={t}"] = n / total if total else 0.0
        figures["top5 spread"] = sum(spread) / len(spread) if spread else 0.0
        out[name] = figures
    return out


def explore(work: Path, names: Sequence[str], *, markdown: bool) -> None:
    table: dict[str, dict[str, dict[str, float]]] = {}
    per_query: dict[str, dict[str, list[dict[str, float]]]] = {}
    for name in names:
        rows = json.loads((work / f"{name}-lists.json").read_text())
        for label, candidate in candidates().items():
            scored = [metrics(row, [d for d, _ in candidate(row)]) for row in rows]
            per_query.setdefault(name, {})[label] = scored
            table.setdefault(label, {})[name] = ev.mean_metrics(scored)
    headline = {n: "ndcg_graded" if n == "nfcorpus" else "ndcg" for n in names}
    columns = [
        (n, m) for n in names for m in (("ndcg", "ndcg_graded") if n == "nfcorpus" else ("ndcg",))
    ]
    head = [
        "fusion",
        *(f"{n} {'graded ' if m == 'ndcg_graded' else ''}nDCG@10" for n, m in columns),
    ]
    head += [f"{n} R@100" for n in names]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for label, figures in table.items():
        cells = [f"{figures[n][m]:.4f}" for n, m in columns]
        cells += [f"{figures[n]['recall@100']:.3f}" for n in names]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()
    for name in names:
        metric = headline[name]
        base = per_query[name]
        for chosen in (
            "chunk zscore a=0.5",
            "doc zscore a=0.5",
            "doc rrf k=60",
            "doc minmax a=0.5",
        ):
            mine = [r[metric] for r in base[chosen]]
            parts = []
            for other in (
                "keyword",
                "dense",
                "chunk zscore a=0.5",
                "chunk rrf k=60",
                "chunk minmax a=0.5",
            ):
                if other == chosen:
                    continue
                counts = ev.versus(base[chosen], base[other], metric)
                p = sign_flip_p(mine, [r[metric] for r in base[other]])
                parts.append(f"vs {other} {counts['wins']}/{counts['losses']} p={p:.3f}")
            print(f"{name} {chosen} ({metric}): " + "; ".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("step", choices=("dump", "explore"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/chromasync-bench-fusion"))
    parser.add_argument("--corpus", choices=tuple(CORPORA), action="append")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    names = args.corpus or list(CORPORA)
    if args.step == "dump":
        for name in names:
            dump(args.work, name)
    else:
        explore(args.work, names, markdown=args.markdown)


if __name__ == "__main__":
    main()
