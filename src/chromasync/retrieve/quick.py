"""The keyword fast path's snapshot: what a full `search --mode keyword` resolved, reused.

A keyword search needs SQLite only, but the full CLI first resolves the settings (pydantic,
YAML), opens the store (chromadb) to list and count the collections, and decides for each
collection whether the state's keyword index covers it. None of that depends on the query.
So a full keyword search run as the process's own command line (`fastpath.main`) records,
in `<data dir>/fastpath/<key>.search`, keyed by its command line without the query (plus
its folder, environment and code version, as the ingest fast path's key):

* the config files its settings were read from (their bytes, or their absence) and the state
  file's identity (inode, size, mtime of `state.sqlite3` and its `-wal`), taken before the
  search ran and again under a free lock when it is written;
* per collection, the SQL condition its filters became (paths resolved against the index)
  and that the state's own index served it (never the mirror: a collection the state does
  not cover is not recorded);
* the request without its query (k, depth, per-doc, date order, the filters as given).

`run_snapshot` answers a new query from it with `bm25.KeywordIndex` over a read-only
connection, then the same `results.rank_hits` and `results.present` as the engine, so the
result, and its JSON, are the full path's. Whoever takes the data dir's lock deletes every
snapshot (`snapshots.invalidate`); the state identity check catches anything else. Only
embedded stores are recorded: a Chroma server can change without this data dir's lock.
The module imports the standard library only at the top; `run_snapshot` loads SQLite and
the pure retrieval modules, never chromadb, the model, click or rich.
"""

from __future__ import annotations

import marshal
import os

from ..datadir import (
    LOCK_FILE,
    OWNER_FILE,
    READER_MARK,
    SNAPSHOT_DIR,
    STATE_FILE,
    make_private_dir,
    replace_file,
)
from ..state.snapshots import consulted_unchanged

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .results import SearchRequest, SearchResult

FORMAT = 1
SUFFIX = ".search"


class SearchSnapshot:
    """One recorded keyword search, as read back (see the module docstring)."""

    __slots__ = ("collections", "consulted", "filters", "heading_weight", "plan", "request")

    def __init__(
        self,
        consulted: Sequence[tuple[str, bytes | None]],
        collections: tuple[str, ...],
        plan: Sequence[tuple[str, str, str, tuple[Any, ...]]],
        request: dict[str, Any],
        filters: dict[str, Any],
        heading_weight: float,
    ) -> None:
        self.consulted = consulted
        self.collections = collections
        self.plan = plan
        self.request = request
        self.filters = filters
        self.heading_weight = heading_weight


def search_snapshot_path(data_dir: str, key: str) -> str:
    return os.path.join(data_dir, SNAPSHOT_DIR, key[:32] + SUFFIX)


def state_identity(data_dir: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(inode, size, mtime) of the state file and of its write-ahead log (() if absent or
    empty: a reader may leave an empty log behind, and a writer that checkpoints one back
    to empty changes the state file itself)."""
    path = os.path.join(data_dir, STATE_FILE)
    wal = _identity(path + "-wal")
    return (_identity(path), wal if wal and wal[1] else ())


def _identity(path: str) -> tuple[int, ...]:
    try:
        st = os.stat(path)
    except OSError:
        return ()
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def recordable(result: SearchResult, request: SearchRequest) -> bool:
    """Whether the fast path could give this result: keyword mode, no reranker, no groups,
    no `latest` (its documents are chosen anew at each search), no `--phrase` (its lists
    are asked twice: with it and without), no date counted back from
    today (`--after 2y`: its day moves), every collection served by the state's own index."""
    from .filter_syntax import is_span

    return (
        result.mode == "keyword"
        and not result.reranked
        and not result.warnings
        and not request.group_by
        and request.latest is None
        and not request.filters.phrases  # ranked among the candidates without it too
        and not any(is_span(str(v).split(" ", 1)[0]) for v in request.filters.echo.values())
        and bool(result.keyword_plan)
        and all(made in ("state", "none") for _, made, _, _ in result.keyword_plan)
    )


def record_search(
    data_dir: str,
    key: str,
    consulted: Sequence[tuple[str, bytes | None]],
    before: tuple[tuple[int, ...], tuple[int, ...]],
    request: SearchRequest,
    result: SearchResult,
    heading_weight: float = 1.0,  # the keyword index's, as `api` opens it
) -> bool:
    """Write the snapshot of a full keyword search (False when it must not be reused)."""
    import dataclasses

    from ..state.lock import lock_holder

    if not recordable(result, request) or not before[0]:
        return False
    if lock_holder(_path(data_dir)) is not None or state_identity(data_dir) != before:
        return False  # a writer ran meanwhile, or runs now
    if not consulted_unchanged(consulted):
        return False
    filters = {
        f.name: getattr(request.filters, f.name) for f in dataclasses.fields(request.filters)
    }
    fields = {
        "mode": request.mode,
        "k": request.k,
        "per_doc": request.per_doc,
        "sort": request.sort,
        "candidates": request.depth,
        "collections": tuple(request.collections),
        "all_collections": request.all_collections,
    }
    snapshot = (
        FORMAT,
        key,
        list(consulted),
        before,
        tuple(result.collections),
        [tuple(entry) for entry in result.keyword_plan],
        fields,
        filters,
        float(heading_weight),
    )
    path = search_snapshot_path(data_dir, key)
    try:
        data = marshal.dumps(_plain(snapshot), 2)
        make_private_dir(os.path.dirname(path))
        replace_file(path, data, durable=False)
    except (OSError, ValueError):  # a value marshal cannot hold, a full or read-only disk
        return False
    return True


def _path(data_dir: str) -> Any:
    from pathlib import Path

    return Path(data_dir)


def _plain(value: Any) -> Any:
    """Mappings as dicts (marshal takes built-in types only; anything else raises)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    if hasattr(value, "items") and hasattr(value, "keys"):
        return {k: _plain(v) for k, v in value.items()}
    return value


def read_search_snapshot(data_dir: str, key: str) -> SearchSnapshot | None:
    """The snapshot of `key` when nothing it depends on changed, else None.

    None as well while a service owns the data dir (it answers through its socket) or while
    anyone but a reader holds the lock (`owner.json` present or the lock file naming a
    holder). The search daemon is a reader (`state.lock.READER_MARK`): it writes nothing, so
    a snapshot stays good while it runs, or after it was killed.
    """
    holder = _lock_text(data_dir)
    reader = holder.partition(": ")[2].startswith(READER_MARK)
    if not reader and os.path.exists(os.path.join(data_dir, OWNER_FILE)):
        return None
    try:
        with open(search_snapshot_path(data_dir, key), "rb") as handle:
            data = marshal.loads(handle.read())  # noqa: S302 - our own file
        fmt, stored, consulted, identity, collections, plan, request, filters, weight = data
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if fmt != FORMAT or stored != key or identity != state_identity(data_dir):
        return None
    if (holder and not reader) or not consulted_unchanged(consulted):
        return None
    return SearchSnapshot(consulted, collections, plan, request, filters, weight)


def _lock_text(data_dir: str) -> str:
    """Who the lock file names (holders write `pid N: ...` and truncate it on release)."""
    try:
        with open(os.path.join(data_dir, LOCK_FILE), "rb") as handle:
            return handle.read(400).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def run_snapshot(data_dir: str, snapshot: SearchSnapshot, query: str) -> SearchResult:
    """Answer `query` as the recorded full search would have (keyword mode)."""
    import sqlite3
    from pathlib import Path

    from .bm25 import Condition, KeywordIndex
    from .dense import merge_by_score
    from .filters import Filters
    from .results import Gathered, SearchRequest, lean_window, present, rank_hits

    fields = dict(snapshot.request)
    request = SearchRequest(query, filters=Filters(**snapshot.filters), **fields)
    uri = Path(data_dir, STATE_FILE).absolute().as_uri() + "?mode=ro"
    db = sqlite3.connect(uri, uri=True)
    try:
        index = KeywordIndex(db, snapshot.heading_weight)
        depth = request.depth
        lists = [
            index.search(name, query, depth, Condition(sql, tuple(params)))
            for name, made, sql, params in snapshot.plan
            if made == "state"
        ]
    finally:
        db.close()
    names = snapshot.collections
    gathered = Gathered(
        dense=(),
        keyword=tuple(merge_by_score(lists, depth * len(names))),
        collections=names,
        keyword_plan=tuple(snapshot.plan),
    )
    # what is shown is a prefix of the ranking (groups reorder the top k only); a
    # per-document collapse and date order read further down, as the engine does
    limit = None if request.per_doc or request.sort == "date" else lean_window(request.k)
    return present(request, gathered, rank_hits(gathered, "keyword", limit=limit), False)


__all__ = [
    "SearchSnapshot",
    "read_search_snapshot",
    "record_search",
    "recordable",
    "run_snapshot",
    "search_snapshot_path",
    "state_identity",
]
