"""What an ingestor writes into and reads through: its collection, the embedding cache and
the token meter, each opened on first use (an unchanged re-run opens none of them), and the
reads of the store a run makes before it writes: the store's limits, and the records a lost
manifest is rebuilt from (`heal`).

Opening the collection follows the model it was written with (`Embedder.follow`); with
`--reembed` and a new model it is recreated, unless it holds records of a source this data
dir did not write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..embed import Embedder
from ..embed.cache import EmbeddingCache
from ..embed.tokens import TokenMeter, default_token_meter, load_token_meter
from ..errors import NotFound, StoreError
from ..metakeys import BOOKKEEPING_KEYS
from ..plan.upgrade import RECORDS_VERSION
from ..records import FileState, StoreLimits
from ..state.manifest import State, stored_root
from ..store.peers import attach_function, foreign_records, owned_records, upgrade_records
from .heal import rebuild_manifest

if TYPE_CHECKING:
    from ..store.chroma import Collection, Store

log = logging.getLogger(__name__)


class Resources:
    """One data dir's collection, and what writing into it needs, for one ingestor."""

    def __init__(
        self,
        state: State,
        collection_name: str,
        embedder: Embedder,
        open_store: Callable[..., Store],
        cache: Callable[[], EmbeddingCache],
    ) -> None:
        self.state = state
        self.collection_name = collection_name
        self.embedder = embedder
        self._open_store = open_store
        self._open_cache = cache
        self._store: Store | None = None
        self._collection: Collection | None = None
        self._cache: EmbeddingCache | None = None
        self._meter: TokenMeter | None = None
        self.labels: list[str] = []  # the sources the ingestor has been asked to ingest
        self._upgraded: set[str] = set()

    def collection(self, reembed: bool = False) -> Collection:
        if self._collection is None:
            self._store = self._open_store()
            if reembed and not self.embedder.embeds_in_store:
                self._reset_for_reembed(self._store)
            elif not self.embedder.embeds_in_store:
                try:
                    existing = self._store.collection(self.collection_name, create=False)
                except NotFound:
                    pass
                else:
                    self.embedder.follow(existing.model_id)
            self._collection = self._store.collection(
                self.collection_name,
                self.embedder.model_id,
                0 if self.embedder.embeds_in_store else self.embedder.dimension,
                provider=self.embedder.name,
                adopt=reembed,
            )
            for label in self.labels:  # an index written by an older release: its records
                self._upgrade(self._collection, label)
            # a collection made before it records Chroma's function for peers (no vector)
            attach_function(self._collection)
        return self._collection

    def upgrade(self, label: str) -> None:
        """Give `label`'s records in the store the keys records carry now, by a metadata
        rewrite (`store.peers.upgrade_records`), once: the state then records it."""
        collection = self.collection()
        if label not in self._upgraded:
            self._upgrade(collection, label)

    def _upgrade(self, collection: Collection, label: str) -> None:
        row = self.state.source(self.collection_name, label)
        upgrade_records(collection, label, str(stored_root(row)) if row is not None else "")
        self.state.rename_keyword_keys(self.collection_name, label, BOOKKEEPING_KEYS)
        self.state.set_records_version(self.collection_name, label, RECORDS_VERSION)
        self._upgraded.add(label)

    def limits(self, dry_run: bool, reembed: bool) -> StoreLimits:
        """The target's limits; a dry run opens no store that does not exist yet."""
        if not dry_run:
            self.collection(reembed)
            assert self._store is not None
            return self._store.limits
        try:
            return self._open_store(existing=True).limits
        except NotFound:
            return StoreLimits()

    def _reset_for_reembed(self, store: Store) -> None:
        existing = store.collection(self.collection_name)
        # another tool's collection: adopted as it is (store.collection's `adopt`), its
        # records kept; only a collection of chromasync's own records is recreated
        if existing.model_id is None and existing.count() and foreign_records(existing).count:
            log.warning(
                "--reembed: collection %r holds records of another tool; they are kept "
                "untouched, and this model is recorded on the collection",
                self.collection_name,
            )
            return
        if existing.model_id != self.embedder.model_id and existing.count():
            ours = sorted(
                {r.source for r in self.state.sources() if r.collection == self.collection_name}
                | set(self.labels)
            )
            for label in ours:
                upgrade_records(existing, label, contexts=False)
            other = existing.other_source(ours)
            if other is not None:
                whose = f"source {other!r}" if other else "another tool"
                raise StoreError(
                    f"collection {self.collection_name!r} also holds records of {whose}, "
                    "which this data dir did not write (another ingester shares the "
                    "collection); --reembed would delete them. Re-embed into a new "
                    "collection (--collection), and move every ingester to it"
                )
            log.warning(
                "--reembed: recreating collection %r for model %s (was %s); every source in "
                "it must be ingested again",
                self.collection_name,
                self.embedder.model_id,
                existing.model_id,
            )
            store.delete_collection(self.collection_name)
            for row in self.state.sources():
                if row.collection == self.collection_name:
                    self.state.drop_source(row.collection, row.source)

    def cache(self) -> EmbeddingCache:
        if self._cache is None:
            self._cache = self._open_cache()
        return self._cache

    def meter(self) -> TokenMeter:
        if self._meter is None:
            path = self.embedder.tokenizer_path
            self._meter = load_token_meter(path) if path else default_token_meter()
        return self._meter

    def close(self) -> None:
        if self._cache is not None:
            self._cache.finish_run()
            self._cache.close()

    def heal(
        self, label: str, manifest: dict[str, FileState], dry_run: bool, reembed: bool
    ) -> tuple[dict[str, FileState], frozenset[int]]:
        """Rebuild the manifest of source `label` from the collection (no embedding); with
        the chunking versions of the records found. A dry run reads an existing collection
        only, and keeps the rebuilt manifest to itself."""
        if dry_run:
            try:
                collection = self._open_store(existing=True).collection(
                    self.collection_name, create=False
                )
            except NotFound:
                return manifest, frozenset()
        else:
            collection = self.collection(reembed=reembed)
        stored = owned_records(collection, label, documents=True)
        rebuilt = rebuild_manifest(stored, manifest)
        if rebuilt.inconsistent:
            log.warning(
                "source %r: %d file(s) were left half-written by an earlier run; re-reading them",
                label,
                len(rebuilt.inconsistent),
            )
        if not dry_run:
            self.state.replace_source(
                self.collection_name, label, list(rebuilt.files.values()), rebuilt.records
            )
        return rebuilt.files, rebuilt.chunking_versions


__all__ = ["Resources"]
