"""The labelled citation set (benchmarks/data/hugo_citations.json), read and scored.

Written by hand over real hugo-docs chunks (2026-12-06, issue 41): each case is one sentence
citing one of its group's sources, labelled `supported` (that source's facts reworded),
`wrong-source` (what another given source says) or `invented` (a fact no given source
states). `labelled_rates` runs `answer.support.check_support` on each, as `ask` runs it on a
model's answer: the share of wrong citations caught and of supported ones flagged.
`tests/unit/test_answer_support.py` holds the check to its goals on it, and
`benchmarks/citation_support.py --labelled` prints the figures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chromasync.answer.support import check_support
from chromasync.records import Hit

LABELLED = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "hugo_citations.json"


def labelled_cases(path: Path = LABELLED) -> list[tuple[dict[str, Any], str, list[Hit]]]:
    """(case, answer text, sources) for each case of the labelled set: the answer is the
    case's sentence with its marker, the sources its group's chunks in order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for group in data["groups"]:
        hits = []
        for key in group["sources"]:
            src = data["sources"][key]
            hits.append(
                Hit(
                    key,
                    src["path"],
                    "hugo",
                    src["heading"],
                    src["start_line"],
                    src["end_line"],
                    0.0,
                    src["text"],
                )
            )
        for case in group["cases"]:
            text = case["sentence"][:-1] + f" [{case['cites']}]" + case["sentence"][-1]
            out.append(({**case, "question": group["question"]}, text, hits))
    return out


def labelled_rates(path: Path = LABELLED) -> dict[str, Any]:
    """Wrong citations caught and supported ones flagged by `check_support` on the set."""
    counts: dict[str, list[int]] = {}
    missed: list[str] = []
    for case, text, hits in labelled_cases(path):
        flagged = any(
            d.n == case["cites"] for d in check_support(text, hits, case["question"]).unsupported
        )
        row = counts.setdefault(case["label"], [0, 0])
        row[0] += 1
        row[1] += flagged
        if flagged != (case["label"] != "supported"):
            missed.append(f"{case['label']}: {text}")
    wrong = [counts.get(k, [0, 0]) for k in ("wrong-source", "invented")]
    total_wrong = sum(n for n, _ in wrong)
    supported = counts.get("supported", [0, 0])
    return {
        "cases": {k: {"n": n, "flagged": f} for k, (n, f) in counts.items()},
        "caught": round(sum(f for _, f in wrong) / total_wrong, 3) if total_wrong else None,
        "false_flags": round(supported[1] / supported[0], 3) if supported[0] else None,
        "missed": missed,
    }
