#!/usr/bin/env python3
"""Planted mis-citations: how many does the support check catch, how many correct ones flag?

    python benchmarks/citation_support.py --labelled [benchmarks/data/hugo_citations.json]
    python benchmarks/citation_support.py [--work /tmp/chromasync-bench-answer] [--k 5]
                                          [--limit N] [--drop 0.3] [--seed 7]

`--labelled`: a set written by hand over real hugo-docs chunks (benchmarks/data/
hugo_citations.json): sentences citing one source each, labelled supported (the source's
facts reworded), wrong-source (another given source's facts) or invented (a fact no source
states). Prints the share of wrong citations caught and of supported ones flagged, and each
case the check got wrong. Nothing is ingested; `check_support` reads the chunks as given.

Without it:

1. SciFact as Markdown in WORK/scifact, ingested with the `hash` provider into WORK/data
   (shared with benchmarks/answer_bench.py); retrieval is keyword-only (BM25), top `k`.
2. Each claim's extractive answer is rewritten as a model's answer would be: its markers
   number the `k` sources in retrieval order. Two versions: the sentences as the sources
   hold them (verbatim), and a paraphrase stand-in that drops a share `--drop` of each
   sentence's words at random (no language model runs here).
3. Planted: one marker's source (chosen at random) is swapped for another retrieved source
   it does not cite. Caught: the check drops the planted number. False flags: correct
   citations (every citation of the unplanted answer) the check drops.
Prints a table and writes WORK/citation_support.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from answer_bench import materialise  # noqa: E402  (puts the repository on sys.path)
from tests.citations import LABELLED, labelled_rates  # noqa: E402

from chromasync import api  # noqa: E402
from chromasync.answer.ask import answer_question  # noqa: E402
from chromasync.answer.support import check_support  # noqa: E402
from chromasync.answer.verify import MARKER  # noqa: E402


def as_model_text(answer: api.Answer, ids: list[str]) -> str:
    """The answer's prose with its markers renumbered to the sources' retrieval order."""
    by_n = {c.n: ids.index(c.id) + 1 for c in answer.citations if c.id in ids}

    def renumber(match: object) -> str:
        numbers = [by_n.get(int(x), 0) for x in match.group(1).split(",")]  # type: ignore[attr-defined]
        return " [" + ", ".join(str(n) for n in numbers if n) + "]"

    prose = " ".join(p.text for p in answer.parts if p.kind == "prose") or answer.text
    return MARKER.sub(renumber, prose)


def paraphrase(text: str, share: float, rng: random.Random) -> str:
    """Drop `share` of the words between markers (markers and sentence ends kept)."""
    out: list[str] = []
    last = 0
    for match in MARKER.finditer(text):
        words = text[last : match.start()].split()
        kept = [w for w in words if w.endswith((".", "!", "?")) or rng.random() >= share]
        out.append(" ".join(kept) + match.group(0))
        last = match.end()
    out.append(text[last:])
    return " ".join(out)


def plant(text: str, k: int, rng: random.Random) -> tuple[str, int, int] | None:
    """`text` with one marker's source swapped: (text, marker index, planted number)."""
    markers = list(MARKER.finditer(text))
    if not markers:
        return None
    i = rng.randrange(len(markers))
    cited = [int(x) for x in markers[i].group(1).split(",")]
    others = [n for n in range(1, k + 1) if n not in cited]
    if not others:
        return None
    planted = rng.choice(others)
    m = markers[i]
    return text[: m.start()] + f" [{planted}]" + text[m.end() :], i, planted


def marker_numbers(text: str) -> list[list[int]]:
    return [[int(x) for x in m.group(1).split(",")] for m in MARKER.finditer(text)]


def measure(claims: list[dict], settings: api.Settings, k: int, drop: float, seed: int) -> dict:
    rng = random.Random(seed)
    rows = {"verbatim": [0, 0, 0, 0], "paraphrase": [0, 0, 0, 0]}  # planted, caught, ok, false
    for claim in claims:
        hits = api.search(claim["query"], settings, k=k, mode="keyword")
        if len(hits) < 2:
            continue
        answer = answer_question(claim["query"], hits)
        ids = [h.id for h in hits]
        verbatim = as_model_text(answer, ids)
        for name, text in (("verbatim", verbatim), ("paraphrase", paraphrase(verbatim, drop, rng))):
            row = rows[name]
            checked = check_support(text, hits)
            row[2] += sum(len(n) for n in marker_numbers(text))
            row[3] += len(checked.unsupported)
            planted = plant(text, len(hits), rng)
            if planted is None:
                continue
            swapped, _, number = planted
            row[0] += 1
            found = check_support(swapped, hits)
            row[1] += any(u.n == number for u in found.unsupported)
    return {
        name: {
            "planted": p,
            "caught": round(c / p, 3) if p else None,
            "correct_citations": ok,
            "false_flags": round(f / ok, 3) if ok else None,
        }
        for name, (p, c, ok, f) in rows.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/chromasync-bench-answer"))
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--drop", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--labelled", type=Path, nargs="?", const=LABELLED, default=None)
    args = parser.parse_args()
    if args.labelled is not None:
        rates = labelled_rates(args.labelled)
        for label, row in rates["cases"].items():
            print(f"{label:13} {row['n']:>3} sentences, {row['flagged']:>3} flagged")
        print(f"wrong citations caught: {rates['caught']}")
        print(f"supported citations flagged: {rates['false_flags']}")
        for line in rates["missed"]:
            print("  wrong call,", line)
        return
    args.work.mkdir(parents=True, exist_ok=True)
    corpus = materialise(args.work)
    settings = api.resolve_settings(
        {"data_dir": str(args.work / "data"), "provider": "hash"},
        {"CHROMASYNC_COLLECTIONS": "shared"},
    )
    api.ingest([api.source_for(corpus, "scifact")], settings)
    queries = SHARED / "corpora" / "scifact" / "train_queries.jsonl"
    claims = [json.loads(line) for line in queries.open()][: args.limit]
    results = measure(claims, settings, args.k, args.drop, args.seed)
    print(f"{'answers':12} {'planted':>8} {'caught':>8} {'correct':>8} {'false flags':>12}")
    for name, row in results.items():
        print(
            f"{name:12} {row['planted']:>8} {row['caught']!s:>8} "
            f"{row['correct_citations']:>8} {row['false_flags']!s:>12}"
        )
    (args.work / "citation_support.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
