#!/usr/bin/env python3
"""Fusion and relevance-scale choices measured on two corpora: SciFact and NFCorpus.

    nice python benchmarks/fusion.py dump [--work /tmp/chromasync-bench-fusion]
    nice python benchmarks/fusion.py prf [--work ...]
    python benchmarks/fusion.py explore [--work ...] [--corpus scifact]
    python benchmarks/fusion.py scale [--work ...]
    nice python benchmarks/fusion.py feedback [--work ...]

`dump` materialises each corpus (../shared/tools/materialize_scifact.py), ingests it once
with the real default model into WORK/<corpus>-data (later runs embed nothing), then, for
every judged query (SciFact's 809 training claims, NFCorpus's 324 dev questions with graded
judgements), gathers the dense and keyword lists exactly as a search does (200 chunks each;
keyword also with the title (heading) column weighted 0, 2 and 4) and writes them to
WORK/<corpus>-lists.json. Nothing is embedded twice.

`prf` adds dense pseudo-relevance feedback lists to the dumps (each query embedded once
more, the corpus never: Chroma is queried with the moved vector).

`explore` reads the dumps and, in pure Python and with the code search runs
(`retrieve.fuse`, `retrieve.evaluate`), measures every candidate fusion: nDCG@10 (binary
and graded), recall@100, and the chosen fusion's per-query wins and losses against each
alternative with a paired randomisation test. `scale` fits the relevance scale of each mode
(`retrieve.relevance`) and prints its precision above 0.8, 0.5 and 0.2 on each corpus. The
tables in docs/retrieval.md come from `explore` and `scale`.

`feedback` measures hybrid search with pseudo-relevance feedback (`FEEDBACK_FUSION`: a second
round asks Chroma and the keyword index again, `retrieve/rounds.py`, so it cannot run from
the dumps): `eval` on each data dir, it and the default hybrid (`DEFAULT_FUSION`, its first
round) ranked from one gather, with per-query wins and losses and the paired test against
the default and each single mode. Each query is embedded once; the corpus never again.
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
from chromasync.retrieve.results import DEFAULT_FUSION  # noqa: E402

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


#: Rocchio feedback on the query vector: (documents fed back, their weight).
PRF = ((3, 0.5), (3, 1.0), (5, 1.0))


def dump_prf(work: Path, name: str) -> Path:
    """Dense pseudo-relevance feedback (Rocchio): the query vector plus `beta` times the mean
    of the vectors of the lead chunks of the `m` best documents of the fused ranking (document
    z-score), normalised, sent to Chroma again (200 chunks). Stored beside the dump."""
    from chromasync import api

    settings = api.resolve_settings(
        {"data_dir": str(work / f"{name}-data"), "collections": "shared"}, {}
    )
    path = work / f"{name}-lists.json"
    rows = json.loads(path.read_text())
    embedder = api.make_embedder_for(settings)
    base = fused(Fusion("zscore", unit="document"), per_doc=True, leads=True)  # as measured
    began = time.perf_counter()
    with api.open_retriever(settings, embedder) as retriever:
        [collection_name] = retriever.store.list_collections()
        collection = retriever.collection(collection_name)
        for number, row in enumerate(rows, 1):
            query = [float(x) for x in embedder.embed_query(row["query"])]
            leads = [rid for rid, _ in base(row)[: max(m for m, _ in PRF)]]
            vectors = collection.embeddings(leads)
            for m, beta in PRF:
                fed = [vectors[r] for r in leads[:m] if r in vectors]
                mean = [sum(col) / len(fed) for col in zip(*fed, strict=True)] if fed else []
                moved = [q + beta * v for q, v in zip(query, mean, strict=True)] or query
                norm = math.sqrt(sum(x * x for x in moved)) or 1.0
                hits = collection.query([x / norm for x in moved], DEPTH, fields=True)
                row[f"dense_prf_m{m}_b{beta:g}"] = [
                    [h.id, Path(h.path).stem, round(h.score, 6)] for h in hits
                ]
            if number % 100 == 0:
                print(f"{name}: prf {number}/{len(rows)} {time.perf_counter() - began:.0f} s")
    path.write_text(json.dumps(rows))
    return path


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


def fused(
    fusion: Fusion,
    *,
    per_doc: bool,
    keyword: str = "keyword",
    dense: str = "dense",
    leads: bool = False,
) -> Candidate:
    """Fuse a row's lists; `per_doc` with `unit="document"`: the chunk lists as search fuses
    them (`fuse` with the document of each chunk); `per_doc` with `unit="chunk"`: the lists
    reduced to documents first. `leads`: (lead chunk id, score) instead of documents."""

    def run(row: Row) -> list[tuple[str, float]]:
        d_list, k_list = listed(row, dense), listed(row, keyword)
        if per_doc and fusion.unit == "chunk":
            d_list, k_list = by_doc(d_list), by_doc(k_list)
        doc_of = {rid: doc for rid, doc, _ in (*d_list, *k_list)}
        lists = [
            Ranked("dense", tuple((r, s) for r, _, s in d_list)),
            Ranked("keyword", tuple((r, s) for r, _, s in k_list)),
        ]
        ranking = fuse(lists, fusion, doc_of.__getitem__)
        if leads:
            seen: set[str] = set()
            out = []
            for key, score in ranking:
                if doc_of[key] not in seen:
                    seen.add(doc_of[key])
                    out.append((key, score))
            return out
        return first_per_doc(ranking, doc_of)

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


def truncated(candidate: Candidate, depth: int) -> Candidate:
    """The candidate over each list's first `depth` chunks (a shallower normalisation)."""

    def run(row: Row) -> list[tuple[str, float]]:
        short = {
            k: v[:depth] if isinstance(v, list) and k.startswith(("dense", "keyword")) else v
            for k, v in row.items()
        }
        return candidate(short)

    return run


def floored(candidate: Candidate) -> Candidate:
    """Min-max with each list's minimum taken as 0 (cosine and BM25 are >= 0 here): the
    score over the list's best, the theoretical min-max of Bruch, Gai and Ingber (2023)."""

    def run(row: Row) -> list[tuple[str, float]]:
        zeroed = {
            k: [*v, ["\0floor", "\0floor", 0.0]] if k.startswith(("dense", "keyword")) else v
            for k, v in row.items()
        }
        return [(d, s) for d, s in candidate(zeroed) if d != "\0floor"]

    return run


def candidates(keys: Sequence[str] = ()) -> dict[str, Candidate]:
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
    out["doc minmax a=0.45 (chosen)"] = fused(DEFAULT_FUSION, per_doc=True)
    for depth in (50, 100):
        out[f"doc zscore a=0.5, top {depth}"] = truncated(
            fused(Fusion("zscore", unit="document"), per_doc=True), depth
        )
        out[f"doc minmax a=0.5, top {depth}"] = truncated(
            fused(Fusion("convex", unit="document"), per_doc=True), depth
        )
    for a in (0.4, 0.5, 0.6):
        weights = {"dense": a, "keyword": 1 - a}
        out[f"doc max-norm a={a:.1f}"] = floored(
            fused(Fusion("convex", weights=weights, unit="document"), per_doc=True)
        )
    for m, beta in PRF:
        prf = f"dense_prf_m{m}_b{beta:g}"
        if prf not in keys:
            continue
        out[f"dense PRF m={m} b={beta:g}"] = single(prf)
        for method in ("zscore", "convex", "rrf"):
            out[f"doc {method} + dense PRF m={m} b={beta:g}"] = fused(
                Fusion(method, unit="document"), per_doc=True, dense=prf
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


def chunk_ranking(row: Row, mode: str, fusion: Fusion) -> Listed:
    """Every candidate chunk of a row, ranked as search ranks them in `mode`."""
    d_list, k_list = listed(row, "dense"), listed(row, "keyword")
    if mode == "dense":
        return d_list
    if mode == "keyword":
        return k_list
    doc_of = {rid: doc for rid, doc, _ in (*d_list, *k_list)}
    lists = [
        Ranked("dense", tuple((r, s) for r, _, s in d_list)),
        Ranked("keyword", tuple((r, s) for r, _, s in k_list)),
    ]
    return [(key, doc_of[key], score) for key, score in fuse(lists, fusion, doc_of.__getitem__)]


ScaleData = dict[str, list[tuple[list[float], list[bool]]]]


def scale_rows(rows_by_corpus: Mapping[str, Sequence[Row]], mode: str, fusion: Fusion) -> ScaleData:
    """Per corpus, per query: each candidate's z on the relevance scale's standardisation
    (best first) and, for each, is its document judged relevant (a grade of 1 or more)."""
    from chromasync.retrieve.relevance import calibration_for, standardised

    pad = calibration_for(mode, fusion.method).pad_zero
    out: ScaleData = {}
    for name, rows in rows_by_corpus.items():
        for row in rows:
            ranked = chunk_ranking(row, mode, fusion)
            gains = judged(row)
            z = standardised([s for _, _, s in ranked], DEPTH, pad)
            out.setdefault(name, []).append((z, [gains.get(d, 0.0) > 0 for _, d, _ in ranked]))
    return out


def scale_report(
    data: Mapping[str, Sequence[tuple[list[float], list[bool]]]],
    value: Callable[[Sequence[float]], list[float]],
) -> dict[str, dict[str, float]]:
    """Per corpus: precision and share of the first 10 hits at or above 0.8, 0.5 and 0.2,
    the mean relevance of the first and fifth hits, and how often the weaker-matches line
    falls within the first 10 hits."""
    from chromasync.retrieve.relevance import weaker_index

    out = {}
    for name, queries in data.items():
        above = {t: [0, 0] for t in (0.8, 0.5, 0.2)}
        first, fifth, weaker = [], [], []
        total = 0
        for z, all_labels in queries:
            values = value(z[:10])
            labels = all_labels[:10]
            total += len(values)
            for t in above:
                for v, y in zip(values, labels, strict=True):
                    if v >= t:
                        above[t][0] += 1
                        above[t][1] += y
            if len(values) >= 5:
                first.append(values[0])
                fifth.append(values[4])
            weaker.append(weaker_index(values) is not None)
        figures: dict[str, float] = {}
        for t, (n, good) in above.items():
            figures[f"P>={t}"] = good / n if n else float("nan")
            figures[f"share>={t}"] = n / total if total else 0.0
        figures["rel@1"] = sum(first) / len(first) if first else 0.0
        figures["rel@5"] = sum(fifth) / len(fifth) if fifth else 0.0
        figures["weaker in top 10"] = sum(weaker) / len(weaker) if weaker else 0.0
        out[name] = figures
    return out


def fit_scale(data: ScaleData, names: Sequence[str]) -> list[float]:
    """The logistic (slope, intercept) fitted on the first 10 hits of the named corpora,
    each corpus weighing the same in all."""
    xs: list[list[float]] = []
    ys: list[bool] = []
    ws: list[float] = []
    for name in names:
        queries = data[name]
        n = sum(min(10, len(z)) for z, _ in queries)
        for z, labels in queries:
            xs += [[v] for v in z[:10]]
            ys += labels[:10]
            ws += [1.0 / n] * min(10, len(z))
    return fit_logistic(xs, ys, ws)


def fitted(beta: Sequence[float]) -> Callable[[Sequence[float]], list[float]]:
    from chromasync.retrieve.relevance import Calibration

    calibration = Calibration(beta[0], beta[1])
    return lambda z: [calibration.value(v) for v in z]


SCALE_MODES = {
    "hybrid": DEFAULT_FUSION,
    "hybrid/zscore": Fusion("zscore", unit="document"),
    "hybrid/rrf": Fusion("rrf", unit="document"),
    "dense": Fusion(),
    "keyword": Fusion(),
}


def explore_scale(work: Path, names: Sequence[str]) -> None:
    """Fit the scale of each mode; for hybrid, also fit on each corpus alone and compare
    with the former scale (a logistic of the fused z-sum minus 1)."""
    from chromasync.retrieve.relevance import calibration_for

    rows = {n: json.loads((work / f"{n}-lists.json").read_text()) for n in names}
    for label, fusion in SCALE_MODES.items():
        mode = label.split("/")[0]
        data = scale_rows(rows, mode, fusion)
        fits: dict[str, list[float]] = {"+".join(names): fit_scale(data, names)}
        if label == "hybrid":
            fits.update({n: fit_scale(data, [n]) for n in names})
        scales: dict[str, Callable[[Sequence[float]], list[float]]] = {}
        for on, beta in fits.items():
            scales[f"fit on {on} ({beta[0]:.3f}, {beta[1]:.3f})"] = fitted(beta)
        now = calibration_for(mode, fusion.method)
        scales[f"shipped ({now.slope}, {now.intercept})"] = fitted([now.slope, now.intercept])
        if label == "hybrid":
            former = Fusion("zscore")
            old = scale_rows(rows, "hybrid", former)
            raw = {
                n: [
                    ([s for _, _, s in chunk_ranking(r, "hybrid", former)], labels)
                    for r, (_, labels) in zip(rows[n], old[n], strict=True)
                ]
                for n in names
            }
            report = scale_report(raw, lambda ss: [logistic(x - 1.0) for x in ss])
            show(f"{label}: former scale, logistic(z-sum - 1)", report)
        for tag, value in scales.items():
            show(f"{label}: {tag}", scale_report(data, value))


def show(label: str, report: Mapping[str, Mapping[str, float]]) -> None:
    for name, figures in report.items():
        cells = ", ".join(f"{k} {v:.3f}" for k, v in figures.items() if not k.startswith("share"))
        shares = ", ".join(f"{k} {v:.2f}" for k, v in figures.items() if k.startswith("share"))
        print(f"| {label} | {name} | {cells} | {shares} |")


def explore(work: Path, names: Sequence[str]) -> None:
    table: dict[str, dict[str, dict[str, float]]] = {}
    per_query: dict[str, dict[str, list[dict[str, float]]]] = {}
    for name in names:
        rows = json.loads((work / f"{name}-lists.json").read_text())
        for label, candidate in candidates(list(rows[0])).items():
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
        for chosen in ("doc minmax a=0.45 (chosen)", "doc zscore a=0.5"):
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
                theirs = [r[metric] for r in base[other]]
                gap = (sum(mine) - sum(theirs)) / len(mine)
                p = sign_flip_p(mine, theirs)
                parts.append(
                    f"vs {other} {gap:+.4f} ({counts['wins']} wins, {counts['losses']} losses,"
                    f" p={p:.3f})"
                )
            print(f"| {name} | {chosen} ({metric}) | " + " | ".join(parts) + " |")


def feedback(work: Path, names: Sequence[str]) -> None:
    from chromasync import api

    for name in names:
        settings = api.resolve_settings(
            {"data_dir": str(work / f"{name}-data"), "collections": "shared"}, {}
        )
        queries = api.load_queries(SHARED / "corpora" / name / CORPORA[name][0])
        began = time.perf_counter()
        report = api.evaluate(
            queries,
            settings,
            modes=("hybrid", "dense", "keyword"),
            feedback=True,
        )
        took = time.perf_counter() - began
        print(f"{name}: {len(queries)} queries in {took:.0f} s")
        for mode, figures in report.modes.items():
            graded = f" graded {figures['ndcg_graded']:.4f}" if report.graded else ""
            print(
                f"| {mode} | nDCG@10 {figures['ndcg']:.4f}{graded} | R@10 {figures['recall']:.3f} |"
            )
        metrics = ("ndcg_graded", "ndcg") if report.graded else ("ndcg",)
        for metric in metrics:
            fed = report.per_query["hybrid+feedback"]
            mine = [r[metric] for r in fed]
            for other in ("hybrid", "dense", "keyword"):
                theirs = [r[metric] for r in report.per_query[other]]
                counts = ev.versus(fed, report.per_query[other], metric)
                gap = (sum(mine) - sum(theirs)) / len(mine)
                print(
                    f"| {name} {metric} | feedback vs {other} | {gap:+.4f}: {counts['wins']} wins,"
                    f" {counts['losses']} losses (p = {sign_flip_p(mine, theirs):.3f}) |"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("step", choices=("dump", "prf", "explore", "scale", "feedback"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/chromasync-bench-fusion"))
    parser.add_argument("--corpus", choices=tuple(CORPORA), action="append")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    names = args.corpus or list(CORPORA)
    if args.step == "dump":
        for name in names:
            dump(args.work, name)
    elif args.step == "prf":
        for name in names:
            dump_prf(args.work, name)
    elif args.step == "scale":
        explore_scale(args.work, names)
    elif args.step == "feedback":
        feedback(args.work, names)
    else:
        explore(args.work, names)


if __name__ == "__main__":
    main()
