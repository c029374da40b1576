"""Verify's shell: read what the manifest, the keyword index, the collection and the disk
hold for each known source, under the data dir's lock, and compare them (`verify.compare_source`,
pure). `verify` runs it (the API re-exports it), and with `repair` ingests the sources that
differ.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.settings import Settings
from ..config.sources import check_labels, configured_entries, spec_for, with_skips
from ..corpus.walk import discover_source
from ..embed import Embedder
from ..errors import NotFound, SourceError
from ..metakeys import OWNER_KEY
from ..records import SourceSpec
from ..state.lock import StoreLock
from ..state.manifest import State, stored_root
from ..store.connect import open_store_for
from ..store.peers import owned_records, owner_of
from .jobs import ingest
from .verify import SourceCheck, compare_source

if TYPE_CHECKING:
    from ..store.chroma import Store, StoredRecord


def _check_unknown(
    settings: Settings,
    state: State,
    store: Store,
    labels: Sequence[str],
    checks: list[SourceCheck],
    specs: dict[tuple[str, str], SourceSpec],
) -> None:
    """Records of this data dir's collections whose source the state does not know (a lost
    or replaced state): each such source is a check whose records are all orphans. A
    configured source gets a spec, so `--repair` adopts its records (rebuilt from the
    collection, nothing re-embedded); the others are reported and kept, since another
    ingester sharing the collection may own them (`chromasync sources remove LABEL`)."""
    rows = state.sources()
    configured = {e.label: e for e in configured_entries(settings)}
    names = {r.collection for r in rows}
    names |= {settings.collection_for(e.kind, e.collection) for e in configured.values()}
    names |= {n for n in store.list_collections() if settings.owns_collection(n)}
    for name in sorted(names):
        ours = sorted(r.source for r in rows if r.collection == name)
        where = {OWNER_KEY: {"$nin": ours}} if ours else None
        foreign: list[str] = []
        try:
            found = store.collection(name, create=False).iter_records(where=where)
            by_source: dict[str, list[Any]] = {}
            for record in found:
                owner = owner_of(record)
                if owner is None:
                    foreign.append(record.id)
                elif owner not in ours:
                    by_source.setdefault(owner, []).append(record)
        except NotFound:
            continue
        if foreign and not labels:  # another tool's records: reported, kept, not a problem
            checks.append(
                SourceCheck(name, "", 0, 0, foreign=len(foreign), foreign_sample=tuple(foreign[:5]))
            )
        for source, stored in sorted(by_source.items()):
            if labels and source not in labels:
                continue
            entry = configured.get(source)
            on_disk = None
            if (
                entry is not None
                and entry.path is not None
                and settings.collection_for(entry.kind, entry.collection) == name
            ):
                spec = with_skips(spec_for(entry, settings), settings)
                specs[(name, source)] = spec
                try:
                    on_disk = {
                        f.rel_path: f for f in discover_source(spec, settings.max_file_bytes).files
                    }
                except SourceError:
                    on_disk = None
            checks.append(compare_source(name, source, {}, stored, set(), on_disk))


def _records_of(
    store: Store, collection: str, source: str, root: str = ""
) -> Iterator[StoredRecord]:
    """The source's stored records, page by page; none when the collection is absent."""
    try:
        yield from owned_records(store.collection(collection, create=False), source, root=root)
    except NotFound:
        return


def check_sources(
    settings: Settings, labels: Sequence[str], wait: bool
) -> tuple[list[SourceCheck], dict[tuple[str, str], SourceSpec]]:
    configured = {e.label: e for e in configured_entries(settings)}
    checks: list[SourceCheck] = []
    specs: dict[tuple[str, str], SourceSpec] = {}
    with (
        StoreLock(settings.data_dir, wait=wait),
        State.open(settings.data_dir, readonly=True) as state,
    ):
        store = open_store_for(settings)
        for row in state.sources():
            if labels and row.source not in labels:
                continue
            entry = configured.get(row.source)
            row_absolute = Path(row.root).is_absolute()
            spec = (
                spec_for(entry, settings, root=Path(row.root) if row_absolute else None)
                if entry is not None
                else SourceSpec(label=row.source, root=stored_root(row), kind=row.kind)
            )
            # a repair ingests into the collection the source was ingested into
            spec = replace(with_skips(spec, settings), collection=row.collection)
            stored = _records_of(store, row.collection, row.source, str(spec.root))
            try:
                found = discover_source(spec, settings.max_file_bytes)
                on_disk = {f.rel_path: f for f in found.files}
            except SourceError:
                on_disk = None
            manifest = state.files(row.collection, row.source)
            keyword = state.keyword_ids(row.collection, row.source)
            checks.append(
                compare_source(row.collection, row.source, manifest, stored, keyword, on_disk)
            )
            specs[(row.collection, row.source)] = spec
        _check_unknown(settings, state, store, labels, checks, specs)
        if labels:  # a label no check is about: a typo, not a clean bill of health
            checked = {c.source for c in checks}
            missing = [label for label in labels if label not in checked]
            if missing:
                check_labels(missing, [r.source for r in state.sources()] + list(configured))
    return checks, specs


def verify(
    settings: Settings,
    labels: Sequence[str] = (),
    repair: bool = False,
    *,
    embedder: Embedder | None = None,
    environ: Mapping[str, str] | None = None,
    wait: bool = False,
) -> list[SourceCheck]:
    """Compare manifest, keyword index, collection and disk for each known source.

    With `repair`, each source with a difference is healed from the collection and
    ingested again (nothing cached is re-embedded); the returned checks are re-run after.
    """
    checks, specs = check_sources(settings, labels, wait)
    broken = [
        specs[(c.collection, c.source)]
        for c in checks
        if not c.ok and (c.collection, c.source) in specs
    ]
    if not (repair and broken):
        return checks
    with StoreLock(settings.data_dir, wait=wait), State.open(settings.data_dir) as state:
        for check in checks:
            if not check.ok:
                state.mark_dirty(check.collection, check.source)
    ingest(broken, settings, embedder=embedder, environ=environ, wait=wait)
    after, _ = check_sources(settings, labels, wait)
    before = {(c.collection, c.source): c for c in checks}
    return [
        replace(c, repaired=not before[(c.collection, c.source)].ok)
        if (c.collection, c.source) in before
        else c
        for c in after
    ]
