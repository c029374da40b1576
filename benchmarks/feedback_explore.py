#!/usr/bin/env python3
"""Pseudo-relevance feedback and document aggregation, explored offline on the fusion dumps.

    nice python benchmarks/feedback_explore.py [--work /tmp/chromasync-bench-fusion]

Reads what `benchmarks/fusion.py dump` and `prf` wrote (each query's dense and keyword
lists, and dense feedback lists: Rocchio on the lead chunks of the 3 or 5 best documents of
the document-level z-score fusion, weight 0.5 or 1) and each corpus's keyword index
(WORK/<corpus>-data/state.sqlite3, opened read-only), and measures, nDCG@10 on SciFact and
NFCorpus (graded and binary):

* document aggregation: a list's evidence for a document is its best chunk's score plus
  `lam` times its second best's (sum of the top two), instead of the best alone;
* keyword feedback (RM3-style, `retrieve.feedback`'s functions as search runs them): the
  query's words twice or three times (`kw_rm3_r2`, `kw_rm3_r3`) and 5 expansion words
  from the 3 best documents of the first round (`DEFAULT_FUSION`), in place of the
  keyword list, with plain dense or with dense feedback;
* three lists: dense, dense feedback and keyword.

What ships is measured end to end by `fusion.py feedback` (the dense feedback there is
seeded by the shipped first round, not by z-score).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

import fusion as fb  # noqa: E402

from chromasync.retrieve import evaluate as ev  # noqa: E402
from chromasync.retrieve.bm25 import KeywordIndex  # noqa: E402
from chromasync.retrieve.feedback import (  # noqa: E402
    Feedback,
    expansion_terms,
    feedback_weights,
    weighted_terms,
)
from chromasync.retrieve.fuse import Fusion, Ranked, fuse  # noqa: E402
from chromasync.retrieve.results import DEFAULT_FUSION  # noqa: E402

Row = dict[str, Any]


def keyword_feedback(work: Path, name: str, rows: list[Row], key: str, settings: Feedback) -> None:
    """Add each row's keyword list asked again with RM3-style expansion (as search does)."""
    db = sqlite3.connect(f"file:{work / f'{name}-data' / 'state.sqlite3'}?mode=ro", uri=True)
    index = KeywordIndex(db)
    [collection] = [r[0] for r in db.execute("SELECT DISTINCT collection FROM chunks")]
    text_of = dict(db.execute("SELECT id, text FROM chunks"))
    first = fb.fused(DEFAULT_FUSION, per_doc=True, leads=True)
    total = index.size()
    for row in rows:
        leads = first(row)[: settings.documents]
        docs = {rid: doc for rid, doc, _ in (*fb.listed(row, "dense"), *fb.listed(row, "keyword"))}
        lead_docs = [docs[rid] for rid, _ in leads]
        weights = feedback_weights([s for _, s in leads])
        documents = [
            (w, [text_of[r] for r, d in docs.items() if d == doc and r in text_of])
            for w, doc in zip(weights, lead_docs, strict=True)
        ]
        expansion = expansion_terms(
            row["query"], documents, settings.terms, index.document_counts, total
        )
        terms = weighted_terms(row["query"], expansion, settings.query_repeat)
        hits = index.search(collection, row["query"], fb.DEPTH, terms=terms) if terms else []
        row[key] = [[h.id, Path(h.path).stem, round(h.score, 6)] for h in hits]


def multi(weights: Mapping[str, float]) -> fb.Candidate:
    fusion = Fusion("convex", weights=weights, unit="document")

    def run(row: Row) -> list[tuple[str, float]]:
        lists = {n: fb.listed(row, n) for n in weights}
        doc_of = {r: d for items in lists.values() for r, d, _ in items}
        ranked = [Ranked(n, tuple((r, s) for r, _, s in items)) for n, items in lists.items()]
        return fb.first_per_doc(fuse(ranked, fusion, doc_of.__getitem__), doc_of)

    return run


def top_two(a: float, lam_dense: float, lam_keyword: float) -> fb.Candidate:
    """Min-max over documents of best + lam * second best chunk score, dense weight a."""

    def evidence(items: fb.Listed, lam: float) -> dict[str, float]:
        per: dict[str, list[float]] = {}
        for _, doc, score in items:
            per.setdefault(doc, []).append(score)
        raw = {d: v[0] + (lam * v[1] if len(v) > 1 else 0.0) for d, v in per.items()}
        if not raw:
            return {}
        low, high = min(raw.values()), max(raw.values())
        return {d: (x - low) / (high - low) if high > low else 1.0 for d, x in raw.items()}

    def run(row: Row) -> list[tuple[str, float]]:
        dense = evidence(fb.listed(row, "dense"), lam_dense)
        keyword = evidence(fb.listed(row, "keyword"), lam_keyword)
        total = {
            d: a * dense.get(d, 0.0) + (1 - a) * keyword.get(d, 0.0) for d in {**dense, **keyword}
        }
        return sorted(total.items(), key=lambda kv: -kv[1])

    return run


def candidates(keys: list[str]) -> dict[str, Callable[[Row], list[tuple[str, float]]]]:
    out: dict[str, fb.Candidate] = {
        "doc minmax a=0.45 (first round)": fb.fused(DEFAULT_FUSION, per_doc=True)
    }
    for lam in (0.1, 0.25, 0.5):
        out[f"top-2 sum lam={lam}, both lists"] = top_two(0.45, lam, lam)
        out[f"top-2 sum lam={lam}, keyword only"] = top_two(0.45, 0.0, lam)
    for rm3 in (k for k in keys if k.startswith("kw_rm3")):
        for a in (0.4, 0.45):
            out[f"dense + keyword {rm3}, a={a}"] = multi({"dense": a, rm3: 1 - a})
            out[f"dense + keyword + {rm3}, a={a}"] = multi(
                {"dense": a, "keyword": (1 - a) / 2, rm3: (1 - a) / 2}
            )
        for prf in (k for k in keys if k.startswith("dense_prf")):
            for a in (0.35, 0.4, 0.45, 0.5):
                out[f"{prf} + {rm3}, a={a}"] = multi({prf: a, rm3: 1 - a})
    for prf in (k for k in keys if k.startswith("dense_prf")):
        out[f"dense + {prf} + keyword 0.3/0.3/0.4"] = multi(
            {"dense": 0.3, prf: 0.3, "keyword": 0.4}
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--work", type=Path, default=Path("/tmp/chromasync-bench-fusion"))
    args = parser.parse_args()
    table: dict[str, list[float]] = {}
    for name in fb.CORPORA:
        rows = json.loads((args.work / f"{name}-lists.json").read_text())
        for repeat in (2, 3):  # the query's words twice (shipped) or three times
            settings = Feedback(query_repeat=repeat)
            keyword_feedback(args.work, name, rows, f"kw_rm3_r{repeat}", settings)
        for label, candidate in candidates(list(rows[0])).items():
            scored = [fb.metrics(row, [d for d, _ in candidate(row)]) for row in rows]
            means = ev.mean_metrics(scored)
            table.setdefault(label, []).extend([means["ndcg"], means["ndcg_graded"]])
        print(f"{name}: done", file=sys.stderr)
    print("| fusion | SciFact | NFCorpus graded | NFCorpus binary |")
    print("|---|---|---|---|")
    for label, v in table.items():
        print(f"| {label} | {v[0]:.4f} | {v[3]:.4f} | {v[2]:.4f} |")


if __name__ == "__main__":
    main()
