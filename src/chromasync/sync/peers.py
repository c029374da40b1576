"""`chromasync share`: make this data dir's collections usable by other Chroma clients.

Design notes: docs/internals.md, `sync/peers.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config.settings import Settings
from ..embed import Embedder, embedder_for
from ..embed.shared import model_folder
from ..errors import SourceError
from ..records import plain_fields
from ..state.lock import StoreLock
from ..state.manifest import State
from ..state.rows import SourceRow, stored_root
from ..store.connect import open_store_for
from ..store.peers import attach_function, function_name, runs_default_model, upgrade_records

if TYPE_CHECKING:
    from ..store.chroma import Collection


@dataclass(frozen=True, slots=True)
class ShareReport:
    """What `share` found and did."""

    model_folder: str  # Chroma's default model (all-MiniLM-L6-v2, ONNX)
    model_placed: bool  # chromasync put it there in this run
    configured: tuple[str, ...]  # collections given Chroma's default function now
    already: tuple[str, ...]  # collections that carried a function already
    other_model: tuple[str, ...]  # collections of another model: a peer must pass vectors
    upgraded: int = 0  # records of an older index given today's keys (metadata only)

    def as_json(self) -> dict[str, object]:
        return plain_fields(self)


def _upgrade(collection: Collection, row: SourceRow) -> int:
    try:
        root = str(stored_root(row))
    except SourceError:  # a root recorded relative: the next ingest, which names it, does it
        return 0
    return upgrade_records(collection, row.source, root)


def share(
    settings: Settings, embedder: Embedder | None = None, place_model: bool = True
) -> ShareReport:
    """Configure every collection of this data dir, and any other chromasync made in the
    store, for peers; with `place_model`, also make sure Chroma's default model is on disk
    where chromadb reads it."""
    configured: list[str] = []
    already: list[str] = []
    other: list[str] = []
    default_model = False
    upgraded = 0
    with StoreLock(settings.data_dir), State.open(settings.data_dir, readonly=True) as state:
        store = open_store_for(settings)
        rows = state.sources()
        known = {r.collection for r in rows}
        existing = store.list_collections()
        for name in existing:
            collection = store.collection(name, create=False)
            meta = collection.metadata
            model = meta.get("chromasync_embedding_model")
            if model is None and name not in known and not settings.owns_collection(name):
                continue  # another tool's collection
            for row in rows:  # an index an older release wrote: today's keys, no vector
                if row.collection == name:
                    upgraded += _upgrade(collection, row)
            provider = str(meta.get("chromasync_embedding_provider", "local"))
            if not runs_default_model(str(model) if model else None, provider):
                other.append(name)
            elif attach_function(collection):
                configured.append(name)
                default_model = True
            else:
                already.append(name) if function_name(collection) else other.append(name)
                default_model = True
    placed = False
    if place_model and default_model:
        local = embedder or embedder_for(settings)
        place = getattr(local, "place_shared_model", None)
        if callable(place):
            placed = bool(place())
    return ShareReport(
        str(model_folder()), placed, tuple(configured), tuple(already), tuple(other), upgraded
    )


__all__ = ["ShareReport", "share"]
