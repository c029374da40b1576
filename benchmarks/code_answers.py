#!/usr/bin/env python3
"""Extractive answers that hold the code example: 40 questions on hugo-docs' reference pages.

    python benchmarks/code_answers.py [--work /tmp/chromasync-bench-code] [--k 5]
                                      [--provider default|hash] [--mode hybrid|keyword|dense]
                                      [--feedback]
    python benchmarks/code_answers.py --hits-only         # answers from the hits alone
    python benchmarks/code_answers.py --write-questions   # rewrites the question file

The questions (`benchmarks/data/hugo_code_questions.jsonl`) are written from the pages'
front-matter descriptions ("Returns the first N elements of the given slice" -> "How do I
get the first N elements of the given slice?"), one per page, for 40 function and method
pages that hold a fenced code example, taken at an even stride over the sorted paths
(`--write-questions` writes that draft; three awkward rewrites were then edited by hand).

1. Copies hugo-docs' `functions/` and `methods/` (../shared, read-only) into WORK/docs and
   ingests them into WORK/data-PROVIDER, once.
2. For each question: the top `k` hits (`--mode`), then the extractive answer (no model),
   as `chromasync ask` gives it (`api.answer`: the best page's other chunks may be read for
   its example).
   - holds the example: one of the answer's code parts is a code block of the expected page
     (whitespace folded; a block cut at the budget counts when what is kept is its start);
   - cites the page: the expected page is among the answer's citations;
   - retrieval hit@k: the expected page is among the hits; page first: it is the first;
   - the median relevance (0-1 scale) of the first hit.
3. Prints a table and writes WORK/code_answers.json.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
HUGO = SHARED / "corpora" / "hugo-docs" / "content" / "en"
QUESTIONS = REPO / "benchmarks" / "data" / "hugo_code_questions.jsonl"
sys.path.insert(0, str(REPO / "src"))

from chromasync import api  # noqa: E402
from chromasync.answer.ask import answer_question  # noqa: E402
from chromasync.chunk.blocks import Block, segment  # noqa: E402
from chromasync.retrieve.results import FEEDBACK_FUSION  # noqa: E402

FOLDERS = ("functions", "methods")
VERBS = {"Returns": "get", "Reports": "check", "Use": "use", "Is": "check if it is"}


def _description(text: str) -> str:
    match = re.search(r"^description:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip().strip("'\"") if match else ""


def question_for(description: str) -> str:
    """'Returns the X.' -> 'How do I get the X?'; 'Converts X' -> 'How do I convert X?'."""
    first, _, rest = description.rstrip(".").partition(" ")
    verb = VERBS.get(first)
    if verb is None:
        verb = first.lower()
        if verb.endswith("es") and verb[:-2].endswith(("sh", "ch", "ss", "x")):
            verb = verb[:-2]
        elif verb.endswith("ies"):
            verb = verb[:-3] + "y"
        elif verb.endswith("s"):
            verb = verb[:-1]
    if first == "Reports" and rest.startswith("whether "):
        return f"How do I check {rest}?"
    return f"How do I {verb} {rest}?"


def code_blocks(text: str) -> list[Block]:
    return [s for s in segment(text) if isinstance(s, Block) and s.kind == "code"]


def write_questions() -> None:
    pages: list[tuple[str, str]] = []
    for folder in FOLDERS:
        for path in sorted((HUGO / folder).rglob("*.md")):
            if path.name == "_index.md":
                continue
            text = path.read_text(encoding="utf-8")
            description = _description(text)
            if description and code_blocks(text):
                pages.append((path.relative_to(HUGO).as_posix(), description))
    stride = len(pages) / 40
    chosen = [pages[int(i * stride)] for i in range(40)]
    QUESTIONS.parent.mkdir(parents=True, exist_ok=True)
    with QUESTIONS.open("w", encoding="utf-8") as out:
        for path, description in chosen:
            row = {"question": question_for(description), "path": path}
            out.write(json.dumps(row) + "\n")
    print(f"wrote {len(chosen)} questions to {QUESTIONS} (from {len(pages)} pages)")


def _fold(text: str) -> str:
    return " ".join(text.split())


def holds_example(answer: api.Answer, page_text: str) -> bool:
    wanted = [_fold(b.text) for b in code_blocks(page_text)]
    for part in answer.parts:
        if part.kind != "code":
            continue
        got = _fold(part.text.removesuffix("…"))
        if any(w == got or (part.text.endswith("…") and w.startswith(got)) for w in wanted):
            return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/chromasync-bench-code"))
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--provider", default="default")
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--feedback", action="store_true", help="hybrid with feedback")
    parser.add_argument("--write-questions", action="store_true")
    parser.add_argument(
        "--hits-only", action="store_true", help="answer from the hits alone (no page read)"
    )
    args = parser.parse_args()
    if args.write_questions:
        write_questions()
        return
    docs = args.work / "docs"
    if not docs.is_dir():
        for folder in FOLDERS:
            shutil.copytree(HUGO / folder, docs / folder)
    overrides = {"data_dir": str(args.work / f"data-{args.provider}")}
    if args.provider != "default":
        overrides["provider"] = args.provider
    settings = api.resolve_settings(overrides, {"CHROMASYNC_COLLECTIONS": "shared"})
    began = time.perf_counter()
    api.ingest([api.source_for(docs, "hugo")], settings)
    ingest_s = time.perf_counter() - began
    rows = [json.loads(line) for line in QUESTIONS.open(encoding="utf-8")]
    held = cited = retrieved = first = with_code = 0
    tops: list[float] = []
    misses: list[str] = []
    for row in rows:
        expected = row["path"]
        fusion = FEEDBACK_FUSION if args.feedback else None
        request = api.SearchRequest(row["question"], mode=args.mode, k=args.k, fusion=fusion)
        result = api.retrieve(request, settings)
        hits = result.hits
        if args.hits_only:
            answer = answer_question(row["question"], hits)
        else:  # as `chromasync ask` answers
            answer = api.answer(row["question"], result, settings)
        page_text = (HUGO / expected).read_text(encoding="utf-8")
        retrieved += any(h.path == expected for h in hits)
        first += bool(hits) and hits[0].path == expected
        tops += [hits[0].relevance or 0.0] if hits else []
        cited += any(c.path == expected for c in answer.citations)
        with_code += any(p.kind == "code" for p in answer.parts)
        if holds_example(answer, page_text):
            held += 1
        else:
            misses.append(f"{expected}: {row['question']}")
    n = len(rows)
    results = {
        "questions": n,
        "provider": args.provider,
        "mode": args.mode + ("+feedback" if args.feedback else ""),
        "k": args.k,
        "answer_from": "hits" if args.hits_only else "hits and the best page",
        "holds_example": round(held / n, 3),
        "answer_has_code": round(with_code / n, 3),
        "cites_page": round(cited / n, 3),
        "retrieval_hit@k": round(retrieved / n, 3),
        "page_first": round(first / n, 3),
        "top_relevance_p50": round(sorted(tops)[len(tops) // 2], 2) if tops else 0.0,
        "ingest_s": round(ingest_s, 1),
    }
    for key, value in results.items():
        print(f"  {key:18} {value}")
    print("misses:")
    for miss in misses:
        print(f"  {miss}")
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "code_answers.json").write_text(json.dumps(results | {"misses": misses}, indent=2))


if __name__ == "__main__":
    main()
