"""The share of document extraction in a cold ingest of ../shared/corpora/pdf-samples.

    python benchmarks/extract_share.py [--rounds 3]

Each round copies the 54 PDFs to a temporary folder, ingests them into a fresh data dir
(embedded Chroma) with the deterministic `hash` provider, and times the calls of the
document reader (`read_document`, wrapped where `corpus.read` calls it) inside that ingest.
Prints the ingest's wall time, the extraction time, its share, and pages per second of
extraction; the best round (lowest ingest time) is reported. With the real model
(`local`), embedding dominates instead: this is the share on the cheapest provider.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "src"))

from chromasync import api  # noqa: E402
from chromasync.config.resolve import resolve_settings  # noqa: E402
from chromasync.corpus import read as read_module  # noqa: E402
from chromasync.embed.hashing import HashEmbedder  # noqa: E402

PDFS = SHARED / "corpora" / "pdf-samples"


def one_round() -> dict[str, float]:
    spent = [0.0]
    pages = [0]
    original = read_module.read_document

    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            result = original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - began
        pages[0] += len(getattr(result, "pages", ()))
        return result

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "pdf-samples"
        shutil.copytree(PDFS, corpus, ignore=shutil.ignore_patterns("*.json", "*.md"))
        for path in corpus.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        settings = resolve_settings(
            {"data_dir": str(Path(tmp) / "data"), "provider": "hash"},
            {"CHROMASYNC_COLLECTIONS": "shared"},
        )
        read_module.read_document = timed  # type: ignore[assignment]
        try:
            began = time.perf_counter()
            [summary] = api.ingest([api.source_for(corpus)], settings, embedder=HashEmbedder())
            total = time.perf_counter() - began
        finally:
            read_module.read_document = original
    return {
        "ingest_s": total,
        "extract_s": spent[0],
        "share": spent[0] / total,
        "pages": pages[0],
        "chunks": summary.chunks_total,
        "embed_s": summary.embed_ms / 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not PDFS.is_dir():
        raise SystemExit(f"{PDFS} is not present")
    best = min((one_round() for _ in range(args.rounds)), key=lambda r: r["ingest_s"])
    print(
        f"cold ingest of pdf-samples (hash provider): {best['ingest_s']:.2f} s, "
        f"{best['chunks']:.0f} chunks, embedding {best['embed_s']:.2f} s\n"
        f"extraction: {best['extract_s']:.2f} s = {best['share']:.0%} of the ingest, "
        f"{best['pages'] / best['extract_s']:.0f} pages/s ({best['pages']:.0f} pages)"
    )


if __name__ == "__main__":
    main()
