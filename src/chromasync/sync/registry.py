"""The sources registry and the index's health: what is configured, what is indexed.

Design notes: docs/internals.md, `sync/registry.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.settings import Settings
from ..config.sources import (
    add_declaration,
    check_new_source,
    configured_entries,
    declared_path,
    find_entry,
    remove_declaration,
    select_entries,
)
from ..errors import ConfigError, NotFound, SourceError, StoreError
from ..records import SourceSpec
from ..state.lock import StoreLock
from ..state.manifest import State, stored_root
from ..state.snapshots import recent_runs
from ..store.connect import open_store_for
from ..store.peers import foreign_records, owned_records

if TYPE_CHECKING:
    from ..config.file import SourceEntry
    from ..store.chroma import Store


log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SourceStatus:
    collection: str
    source: str
    root: str
    files: int
    chunks: int
    embedding_model: str
    status: str
    last_outcome: str | None
    last_finished_ns: int | None
    kind: str = ""
    last_summary: Mapping[str, Any] | None = None


def status(settings: Settings) -> list[SourceStatus]:
    """Per source: files and chunks in the manifest, last run, model (reads no store).

    A run answered by the fast path (`fastpath`) writes no state; its stamp counts as the
    source's last run when it is the newer one.
    """
    quick = recent_runs(str(settings.data_dir))
    with State.open(settings.data_dir, readonly=True) as state:
        rows = []
        for row in state.sources():
            files = state.files(row.collection, row.source)
            last = quick.get((row.collection, row.source))
            if last is not None and last[0] > (row.last_finished_ns or 0):
                row = replace(
                    row, last_finished_ns=last[0], last_outcome="ok", last_summary=last[1]
                )
            rows.append(
                SourceStatus(
                    collection=row.collection,
                    source=row.source,
                    root=row.root,
                    files=sum(1 for f in files.values() if f.records),
                    chunks=sum(len(f.records) for f in files.values()),
                    embedding_model=row.embedding_model,
                    status=row.status,
                    last_outcome=row.last_outcome,
                    last_finished_ns=row.last_finished_ns,
                    kind=row.kind,
                    last_summary=row.last_summary,
                )
            )
        return rows


@dataclass(frozen=True, slots=True)
class StateHealth:
    """Where things live and whether the local state can be trusted."""

    data_dir: str
    store: str
    state_file: str
    state: str  # "ok", "absent", or what is wrong
    interrupted: tuple[str, ...] = ()  # "collection/source" left `running` by a dead run
    config_file: str | None = None


def health(settings: Settings) -> StateHealth:
    """Check the state file without creating it: integrity and interrupted runs."""
    import sqlite3

    from ..state.manifest import STATE_FILE

    path = settings.data_dir / STATE_FILE
    config = str(settings.config_file.path) if settings.config_file else None

    def result(state: str, interrupted: tuple[str, ...] = ()) -> StateHealth:
        return StateHealth(
            data_dir=str(settings.data_dir),
            store=settings.store_location(),
            state_file=str(path),
            state=state,
            interrupted=interrupted,
            config_file=config,
        )

    if not path.exists():
        return result("absent (nothing ingested yet)")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            check = db.execute("PRAGMA quick_check").fetchone()[0]
            running = db.execute(
                "SELECT collection, source FROM sources WHERE status != 'clean'"
            ).fetchall()
        finally:
            db.close()
    except sqlite3.Error as exc:
        return result(f"unreadable ({exc}); the next ingest rebuilds it")
    interrupted = tuple(f"{c}/{s}" for c, s in running)
    text = "ok" if check == "ok" else f"damaged ({check}); the next ingest rebuilds it"
    if interrupted and text == "ok":
        text = "ok, with interrupted runs (the next ingest reconciles them)"
    return result(text, interrupted)


# -- the sources registry --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """A source as configured and as indexed (either side may be missing)."""

    label: str
    kind: str
    include: bool
    location: str  # folder, or repository@branch
    collection: str
    declared_at: str | None  # "file:line"; None when only the state knows it
    files: int = 0
    chunks: int = 0
    last_outcome: str | None = None
    last_finished_ns: int | None = None
    note: str | None = None


def list_sources(settings: Settings) -> list[SourceInfo]:
    """Configured sources with their index figures, then indexed ones no longer configured."""
    indexed = {(r.collection, r.source): r for r in status(settings)}
    out: list[SourceInfo] = []
    for entry in configured_entries(settings):
        name = settings.collection_for(entry.kind, entry.collection)
        row = indexed.pop((name, entry.label), None)
        location = f"{entry.repo}@{entry.branch or 'HEAD'}" if entry.repo else str(entry.path)
        out.append(
            SourceInfo(
                label=entry.label,
                kind=entry.kind,
                include=entry.include,
                location=location,
                collection=name,
                declared_at=f"{entry.declared_in}:{entry.line}",
                files=row.files if row else 0,
                chunks=row.chunks if row else 0,
                last_outcome=row.last_outcome if row else None,
                last_finished_ns=row.last_finished_ns if row else None,
                note=entry.note,
            )
        )
    for row in indexed.values():
        out.append(
            SourceInfo(
                label=row.source,
                kind=row.kind,
                include=False,
                location=row.root,
                collection=row.collection,
                declared_at=None,
                files=row.files,
                chunks=row.chunks,
                last_outcome=row.last_outcome,
                last_finished_ns=row.last_finished_ns,
            )
        )
    return out


def add_source(
    settings: Settings,
    path: str | Path,
    *,
    label: str | None = None,
    kind: str = "notes",
    include: bool = True,
    target: str | Path | None = None,
    note: str | None = None,
) -> SourceEntry:
    """Declare a folder as a source in `target` (default: the loaded config file).

    The folder is written relative to the file's folder when it lies inside it. Returns the
    new entry as the file now declares it; nothing is indexed until the next ingest.
    """
    if target is None:
        if settings.config_file is None:
            raise ConfigError(
                "no config file to add the source to: create chromasync.yaml here, or "
                "pass --config FILE"
            )
        target = settings.config_file.path
    target = Path(target)
    folder = Path(path).expanduser()
    chosen = label or folder.resolve().name
    existing = configured_entries(settings)
    if settings.config_file is None or target != settings.config_file.path:
        existing += list(_declared_in(target))
    check_new_source(existing, chosen, folder)
    item: dict[str, Any] = {"label": chosen, "path": declared_path(folder, target.parent)}
    item.update(kind=kind, include=include)
    if note:
        item["note"] = note
    add_declaration(target, item)
    return find_entry(_declared_in(target), chosen)


def _declared_in(target: Path) -> Sequence[SourceEntry]:
    from ..config.file import load_config_file, load_sources_file

    if not target.exists():
        return ()
    if target.suffix.lower() in (".md", ".markdown"):
        return load_sources_file(target).entries
    return load_config_file(target).sources


@dataclass(frozen=True, slots=True)
class RemovedSource:
    label: str
    collections: tuple[str, ...]
    records_deleted: int
    declaration_removed: bool
    #: Collections dropped because the removal left them empty (no record of anyone).
    collections_dropped: tuple[str, ...] = ()


def remove_source(
    settings: Settings, label: str, *, keep_declaration: bool = False, wait: bool = False
) -> RemovedSource:
    """Delete one source's records (from its collection) and its state; other sources are
    untouched. A collection the removal leaves empty (no other source in the state, no
    record of any writer left) is dropped too. Its declaration is removed from the config
    too unless `keep_declaration`."""
    entries = configured_entries(settings)
    entry = next((e for e in entries if e.label == label), None)
    with StoreLock(settings.data_dir, wait=wait), State.open(settings.data_dir) as state:
        rows = [r for r in state.sources() if r.source == label]
        names = {r.collection for r in rows}
        if entry is not None:
            names.add(settings.collection_for(entry.kind, entry.collection))
        deleted = 0
        dropped: list[str] = []
        try:
            store: Store | None = open_store_for(settings, existing=True)
        except NotFound:
            store = None
        if entry is None and not rows:
            # records only the collection knows (a lost state, see `verify`)
            if store is not None:
                names = {
                    n
                    for n in store.list_collections()
                    if settings.owns_collection(n)
                    and any(owned_records(store.collection(n, create=False), label))
                }
            if not names:
                find_entry(entries, label)  # raises NotFound with suggestions
        for name in sorted(names):
            ids = {r.id for f in state.files(name, label).values() for r in f.records}
            if store is not None and name in store.list_collections():
                collection = store.collection(name, create=False)
                ids |= {r.id for r in owned_records(collection, label)}
                if ids:
                    collection.delete(sorted(ids))
                deleted += len(ids)
                others = any(r.collection == name and r.source != label for r in state.sources())
                if not others and collection.count() == 0:  # nobody's records left in it
                    store.delete_collection(name)
                    dropped.append(name)
            state.drop_source(name, label)
    removed = False
    if entry is not None and not keep_declaration:
        removed = remove_declaration(entry)
    return RemovedSource(label, tuple(sorted(names)), deleted, removed, tuple(dropped))


def reset_collections(settings: Settings, names: Sequence[str], wait: bool = False) -> list[str]:
    """Drop `names` from the store and forget every source's state in them. Refused, naming
    them, when a collection holds records chromasync did not write (another tool's): a
    reset would drop them too."""
    dropped: list[str] = []
    with StoreLock(settings.data_dir, wait=wait), State.open(settings.data_dir) as state:
        try:
            store: Store | None = open_store_for(settings, existing=True)
        except NotFound:
            store = None
        existing = set(store.list_collections()) if store is not None else set()
        for name in dict.fromkeys(names):
            if store is not None and name in existing:
                foreign = foreign_records(store.collection(name, create=False))
                if foreign.count:
                    raise StoreError(
                        f"collection {name!r} holds {foreign.describe()}; --reset would "
                        "drop them with it. Ingest into another collection (--collection "
                        "NAME), or delete those records yourself first"
                    )
        for name in dict.fromkeys(names):
            if store is not None and name in existing:
                store.delete_collection(name)
                dropped.append(name)
            for row in state.sources():
                if row.collection == name:
                    state.drop_source(name, row.source)
    return dropped


#: Folder names that say little on their own: a discovered root so named is labelled
#: `<parent>/<name>` (`hugo/content`).
GENERIC_NAMES = frozenset(
    {"content", "contents", "docs", "doc", "documentation", "src", "data", "site", "pages"}
    | {"posts", "notes", "wiki", "md", "markdown", "en"}
)


def _overlaps(a: str, b: str) -> bool:
    """Whether one folder is the other or inside it (its files would be indexed twice)."""
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


@dataclass(frozen=True, slots=True)
class DiscoverResult:
    sources_file: str
    candidates: tuple[str, ...]  # every content root found (absolute paths)
    added: tuple[str, ...]  # appended now, with `include: false`
    known: tuple[str, ...]  # already declared (or overlapping a declared folder)


def discover(
    settings: Settings, root: str | Path, sources_file: str | Path | None = None
) -> DiscoverResult:
    """Find content roots under `root` and append the new ones to the sources file with
    `include: false` (default file: the config's `sources_file`, else
    ./content-sources.md). Idempotent: a second run appends nothing."""
    from ..corpus.roots import find_content_roots

    folder = Path(root).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"discover: {str(folder)!r} is not a folder")
    if sources_file is not None:
        target = Path(sources_file)
    elif settings.config_file is not None and settings.config_file.sources_file is not None:
        target = settings.config_file.sources_file
    else:
        target = Path("content-sources.md")
    declared = list(configured_entries(settings)) + list(_declared_in(target))
    known_paths = {str(e.path.resolve()) for e in declared if e.path is not None}
    if settings.config_file is None:  # run without the config: the one beside the file
        known_paths |= _roots_beside(target)
    labels = {e.label for e in declared}
    candidates = find_content_roots(folder.resolve(), settings.skip_paths)
    added: list[str] = []
    known: list[str] = []
    items: list[dict[str, Any]] = []
    for candidate in candidates:
        resolved = str(candidate.path.resolve())
        if any(_overlaps(resolved, k) for k in known_paths):
            known.append(resolved)
            continue
        item: dict[str, Any] = {"path": declared_path(candidate.path, target.resolve().parent)}
        label = candidate.path.name
        if label.lower() in GENERIC_NAMES and candidate.path.parent.name:
            label = f"{candidate.path.parent.name}/{label}"
            item["label"] = label
        if label in labels:
            label = candidate.rel_path or candidate.path.name
            n = 2
            while label in labels:
                label, n = f"{candidate.rel_path}-{n}", n + 1
            item["label"] = label
        labels.add(label)
        item.update(
            kind="docs",
            include=False,
            note=f"discovered: {candidate.markdown_files} Markdown files within 3 levels",
        )
        items.append(item)
        added.append(resolved)
    if items:
        from ..config.sourcesfile import add_to_markdown

        if target.suffix.lower() in (".md", ".markdown"):
            add_to_markdown(target, items)
        else:
            for item in items:
                add_declaration(target, item)
    return DiscoverResult(
        str(target), tuple(str(c.path) for c in candidates), tuple(added), tuple(known)
    )


def _roots_beside(target: Path) -> set[str]:
    """The folders the `chromasync.yaml` beside `target` declares (read leniently: its
    `sources_file` may be `target`, not written yet), so that `discover` run without the
    config never appends a root the config declares."""
    import yaml

    from ..config.resolve import CONFIG_FILE_NAME
    from ..config.safeyaml import load_yaml

    config = target.resolve().parent / CONFIG_FILE_NAME
    try:
        data = load_yaml(config.read_text(encoding="utf-8"))[0] if config.is_file() else None
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return set()
    items = data.get("sources") if isinstance(data, dict) else None
    return {
        str((config.parent / Path(item["path"]).expanduser()).resolve())
        for item in (items if isinstance(items, list) else ())
        if isinstance(item, dict) and isinstance(item.get("path"), str)
    }


def select_known(
    settings: Settings, labels: Sequence[str] = ()
) -> tuple[list[SourceEntry], list[SourceSpec]]:
    """(configured entries, specs of undeclared indexed sources) for `labels`, or for all.

    All means every `include: true` source of the config plus every source the state holds
    that the config does not declare. A label that is neither is `NotFound`; a configured
    source with `include: false` is a `ConfigError` (see `sources.select_entries`).
    """
    entries = configured_entries(settings)
    declared = {e.label for e in entries}
    with State.open(settings.data_dir, readonly=True) as state:
        undeclared = {r.source: r for r in state.sources() if r.source not in declared}
    if not labels:
        chosen = [e for e in entries if e.include]
        others = list(undeclared.values())
    else:
        wanted = list(dict.fromkeys(labels))
        missing = [x for x in wanted if x not in declared and x not in undeclared]
        if missing:
            names = ", ".join(sorted(declared | set(undeclared))) or "none yet"
            raise NotFound(f"no source labelled {missing[0]!r} (known: {names})")
        chosen = select_entries(entries, [x for x in wanted if x in declared])
        chosen = chosen if any(x in declared for x in wanted) else []
        others = [undeclared[x] for x in wanted if x in undeclared]
    specs = []
    for r in others:
        try:
            root = stored_root(r)
        except SourceError as exc:
            if labels:
                raise
            log.warning("%s", exc)  # the others still run; this one needs its root named
            continue
        specs.append(SourceSpec(label=r.source, root=root, kind=r.kind, collection=r.collection))
    return chosen, specs
