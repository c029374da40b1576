"""Ingest summaries as plain lines: the CLI's output off a terminal, and the fast path's.

Imported by the console script's fast path: standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..corpus.listing import printable


def render_plain(summaries: Sequence[Mapping[str, Any]], name: Callable[[str], str] = str) -> str:
    """Ingest summaries (`IngestSummary.as_json()`) as lines, a block per source and one for
    the total: the CLI's output when stdout is not a terminal (a narrow terminal's, with
    `name` styling each source name)."""
    rows = list(summaries)
    if len(rows) > 1:  # every int field is a count (dry_run is a bool)
        total: dict[str, Any] = {
            k: sum(s[k] for s in rows) for k, v in rows[0].items() if type(v) is int
        }
        skipped: Counter[str] = Counter()
        documents: Counter[str] = Counter()
        warnings: Counter[str] = Counter()
        for s in rows:
            warnings.update(s.get("warnings") or {})
            skipped.update(s["files_skipped"])
            documents.update(s.get("documents_read") or {})
        total.update(
            source="total",
            collection="",
            files_skipped=skipped,
            documents_read=documents,
            warnings=warnings,
        )
        rows.append(total)
    dry = " (dry run: nothing written)" if rows and rows[0].get("dry_run") else ""
    lines = []
    for s in rows:
        where = f" -> {s['collection']}" if s["collection"] else ""
        duration, embed = int(s["duration_ms"]), int(s["embed_ms"])
        lines += [
            f"{name(printable(str(s['source'])))}{where}{dry}",
            f"  files   {s['files_seen']} seen: {s['files_new']} new, {s['files_updated']} "
            f"updated, {s['files_unchanged']} unchanged, {s['files_deleted']} deleted, "
            f"{sum(s['files_skipped'].values())} skipped",
            f"  chunks  {s['chunks_total']} total: {s['chunks_embedded']} embedded, "
            f"{s['chunks_reused']} reused, {s['chunks_deleted']} deleted",
            f"  time    {duration / 1000:.2f} s: embedding {embed / 1000:.2f} s, "
            f"the rest {max(duration - embed, 0) / 1000:.2f} s",
        ]
        if s["files_skipped"]:
            reasons = sorted(s["files_skipped"].items())
            lines.append("  skipped " + ", ".join(f"{r} {n}" for r, n in reasons))
        if s.get("documents_read"):
            formats = ", ".join(f"{f} {n}" for f, n in sorted(s["documents_read"].items()))
            lines.append(f"  read    {formats}: {s.get('pages_read', 0)} pages")
        if s.get("warnings"):
            found = ", ".join(f"{w} {n}" for w, n in sorted(s["warnings"].items()))
            lines.append(f"  warned  {found}")
    return "\n".join(lines) + "\n"
