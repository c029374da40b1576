"""What a run that changes nothing reports, and when a source is settled.

Design notes: docs/internals.md, `sync/settled.py`.
"""

from __future__ import annotations

import time

from ..plan.triage import Triage, triage
from ..records import Discovery, IngestSummary, SettledSource, SourceSpec
from ..state.manifest import State
from ..versions import CHUNKING_VERSION
from .waves import Tally


def noop_summary(
    state: State,
    collection: str,
    spec: SourceSpec,
    discovery: Discovery,
    sorted_: Triage,
    started: int,
    dry_run: bool = False,
) -> IngestSummary:
    """What a run reports when triage finds nothing to read and nothing gone."""
    run = Tally()
    run.skipped.update(s.reason for s in discovery.skipped)
    run.skipped.update(sorted_.remembered_skips.values())
    base = dict(
        collection=collection,
        source=spec.label,
        files_seen=len(discovery.files) + len(discovery.skipped),
        files_unchanged=len(sorted_.unchanged),
        chunks_total=state.record_total(collection, spec.label),
        dry_run=dry_run,
    )
    return run.summary(base, started)


def settled(
    state: State,
    collection: str,
    model_id: str,
    spec: SourceSpec,
    discovery: Discovery,
    summary: IngestSummary | None = None,
) -> SettledSource | None:
    """The settled source of a run over `discovery` (a walk with its listing), or None
    when a re-run would not be a no-op. `summary`: the no-op this run was, if it was one
    (else the state is checked, and the no-op's summary made)."""
    if discovery.listing is None:
        return None
    if summary is None:
        row = state.source(collection, spec.label)
        if (
            row is None
            or row.status != "clean"
            or row.embedding_model != model_id
            or row.chunking_version != CHUNKING_VERSION
        ):
            return None
        again = triage(discovery, state.files(collection, spec.label, with_records=False))
        if again.to_read or again.gone:
            return None
        summary = noop_summary(state, collection, spec, discovery, again, time.perf_counter_ns())
    return SettledSource(
        collection=collection,
        source=spec.label,
        root=str(spec.root),
        starts=spec.starts,
        pruned_dirs=discovery.pruned_dirs,
        use_gitignore=spec.use_gitignore,
        listing=discovery.listing,
        summary=summary.as_json(),
    )
