"""`chromasync model`: build a side index with another model, switch to it, drop it.

Design notes: docs/internals.md, `sync/models.py`.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..config.models import (
    DEFAULT_NAME,
    ModelProfile,
    load_models,
    save_models,
    with_profile,
)
from ..config.settings import Settings
from ..datadir import side_dir
from ..errors import ConfigError, NotFound, StoreError, storage_error
from ..records import IngestSummary
from ..store.chroma import CHUNKING_KEY, MODEL_KEY
from ..store.connect import open_store_for
from .ingest import Progress
from .jobs import ConfiguredSources, KnownSources, ingest
from .registry import select_known

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ProfileRow:
    """One line of `model list`: a profile (or the data dir's own index) and its figures."""

    name: str
    provider: str
    model: str
    active: bool
    state: str
    records: int
    collections: tuple[str, ...]
    model_id: str | None = None  # as its collections record it (variant included)
    chunking: int | None = None  # the chunker version its collections record


def profile_settings(home: Settings, name: str) -> Settings:
    """The settings of profile `name` (`default`: the data dir's own), from the data dir's."""
    if name == DEFAULT_NAME:
        return home
    return with_profile(home, load_models(home.data_dir).get(name))


def add_profile(home: Settings, profile: ModelProfile, replace_existing: bool = False) -> None:
    """Record `profile` in `models.json`; an existing name needs `replace_existing` (and is
    never the active one: its vectors would no longer match its model)."""
    models = load_models(home.data_dir)
    if profile.name in models.profiles:
        if not replace_existing:
            raise ConfigError(
                f"model profile {profile.name!r} exists; `chromasync model drop "
                f"{profile.name}` first, or pass --replace"
            )
        if models.active == profile.name:
            raise ConfigError(
                f"model profile {profile.name!r} is active; switch away first "
                "(`chromasync model use default`)"
            )
        _remove_side(home, profile.name)
    save_models(home.data_dir, replace(models, profiles={**models.profiles, profile.name: profile}))


def _set_state(home: Settings, name: str, state: str, built_at: int | None = None) -> None:
    models = load_models(home.data_dir)
    profile = models.get(name)
    profile = replace(profile, state=state, built_at=built_at or profile.built_at)
    save_models(home.data_dir, replace(models, profiles={**models.profiles, name: profile}))


def build_profile(
    home: Settings,
    name: str,
    *,
    progress: Progress | None = None,
    wait: bool = False,
    clock: Callable[[], int] = time.time_ns,
) -> list[IngestSummary]:
    """Ingest the data dir's sources into profile `name`'s side index (or bring it up to
    date); the profile reads "building" until the run completes, "built" after."""
    if name == DEFAULT_NAME:
        raise ConfigError("`default` is the data dir's own index: build it with `ingest`")
    side = profile_settings(home, name)
    entries, others = select_known(home)
    own = [s.collection in (None, home.collection_for(s.kind)) for s in others]
    if home.chroma_url and any(e.collection for e in entries):
        named = next(e.label for e in entries if e.collection)
        raise ConfigError(
            f"source {named!r} names its own collection; with a Chroma server a side index "
            "would write into it. Remove its `collection:` or use the embedded store"
        )
    if home.chroma_url and not all(own):
        spec = next(s for s, o in zip(others, own, strict=True) if not o)
        raise ConfigError(
            f"source {spec.label!r} is indexed in collection {spec.collection!r}, not one of "
            f"{home.collection!r}'s; with a Chroma server a side index would write into it. "
            f"Run `model build` with --collection naming that index, or re-ingest the source "
            "into this one"
        )
    if not entries and not others:
        raise NotFound(
            f"the data dir {home.data_dir} knows no source; ingest one first "
            "(`chromasync ingest PATH`), then build the model profile"
        )
    _set_state(home, name, "building")
    summaries: list[IngestSummary] = []
    try:
        if entries:
            labels = tuple(e.label for e in entries)
            summaries += ingest(ConfiguredSources(labels), side, progress=progress, wait=wait)
        if others:  # the data dir's own collection names become the profile's
            specs = [
                replace(s, collection=None) if o else s for s, o in zip(others, own, strict=True)
            ]
            summaries += ingest(specs, side, progress=progress, wait=wait)
    except Exception as exc:  # a full disk anywhere: the store, the state, a model export
        full = exc if isinstance(exc, StoreError) else storage_error(exc, home.data_dir)
        if full is None or " is full;" not in str(full):  # `storage_error`'s words for it
            raise
        raise StoreError(
            f"{full}. The partial index of model {name!r} holds space meanwhile: "
            f"`chromasync model drop {name}` frees it"
        ) from exc
    _set_state(home, name, "built", built_at=clock())
    return summaries


def store_is_own(home: Settings) -> bool:
    """Whether each index (the data dir's own, each profile's) has a store of its own, so
    that every collection in it is the index's: the embedded store. A Chroma server is
    shared with the other indexes and other data dirs; there an index covers only the
    collections its settings name (`retrieve.session.search_collections`)."""
    return not home.chroma_url


def use_profile(home: Settings, name: str, *, progress: Progress | None = None) -> Path:
    """Switch searches and ingests to profile `name` (`default`: the data dir's own index),
    after a catch-up build; `models.json` is rewritten atomically, so a search reads the old
    pointer or the new one, never a mix. Returns the data dir of the index left behind
    (whose search daemon the caller stops: `owner.dial.make_way`)."""
    models = load_models(home.data_dir)
    target: str | None = None if name == DEFAULT_NAME else models.get(name).name
    if target is not None:
        build_profile(home, target, progress=progress)
    else:
        entries, others = select_known(home)
        if entries or others:  # catch the data dir's own index up with its sources too
            ingest(KnownSources(), home, progress=progress)
    previous = profile_settings(home, models.active or DEFAULT_NAME)
    models = replace(load_models(home.data_dir), active=target)
    save_models(home.data_dir, models)
    return previous.data_dir


def drop_profile(home: Settings, name: str) -> None:
    """Delete profile `name` and its side index; never the active one."""
    models = load_models(home.data_dir)
    models.get(name)
    if models.active == name:
        raise ConfigError(
            f"model profile {name!r} is active; switch first (`chromasync model use default` "
            "or another profile), then drop it"
        )
    _remove_side(home, name)
    profiles = {n: p for n, p in models.profiles.items() if n != name}
    save_models(home.data_dir, replace(models, profiles=profiles))


def _remove_side(home: Settings, name: str) -> None:
    side = profile_settings(home, name)
    if home.chroma_url:  # the side collections live on the server: delete them there
        store = open_store_for(side)
        for collection in store.list_collections():
            if side.owns_collection(collection):
                store.delete_collection(collection)
    shutil.rmtree(side_dir(home.data_dir, name), ignore_errors=True)


def profile_rows(home: Settings) -> list[ProfileRow]:
    """`model list`: the data dir's own index, then each profile, with their records."""
    models = load_models(home.data_dir)
    rows = [_row(home, DEFAULT_NAME, models.active is None, "built")]
    for name, profile in sorted(models.profiles.items()):
        side = with_profile(home, profile)
        rows.append(_row(side, name, models.active == name, profile.state))
    return rows


def _row(side: Settings, name: str, active: bool, state: str) -> ProfileRow:
    counts: dict[str, int] = {}
    recorded: dict[str, object] = {}
    if side.chroma_url or Path(side.store_location()).exists():
        try:
            store = open_store_for(side, existing=True, reading=True)
            for collection in store.list_collections():  # an embedded store is its own
                if not side.chroma_url or side.owns_collection(collection):
                    opened = store.collection(collection, create=False)
                    counts[collection] = opened.count()
                    recorded = recorded or dict(opened.metadata)
        except NotFound:
            counts = {}
    model = side.model or "(the provider's default)"
    return ProfileRow(
        name=name,
        provider=side.provider,
        model=model,
        active=active,
        state=state,
        records=sum(counts.values()),
        collections=tuple(sorted(counts)),
        model_id=str(recorded[MODEL_KEY]) if recorded.get(MODEL_KEY) else None,
        chunking=int(str(recorded[CHUNKING_KEY])) if recorded.get(CHUNKING_KEY) else None,
    )


__all__ = [
    "ProfileRow",
    "add_profile",
    "build_profile",
    "drop_profile",
    "profile_rows",
    "profile_settings",
    "store_is_own",
    "use_profile",
]
