"""What can go where: the parts of a request the data dir's owner serves, in one table.

While an owner (`serve`, `watch`, `mcp`) holds the data dir, every operation of the index
seam goes through it. Reads go through whole; of a write, only what `OWNER_SERVES` names: an
ingest as the owner's reindex of the sources it knows (`OWNER_INGESTS`), a source's removal
whole, `verify`'s report (not `--repair`), no `share`. Anything else asked is refused, named
as the caller spells it, with the fix (docs/reliability.md, rule 5). `LocalIndex` runs every
field in process; the owner's client and its `Service` both ask `check_owner_serves`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..config.settings import Settings
from ..config.sources import selected_sources
from ..errors import ChromasyncError, ConfigError, LockError
from ..records import IngestSummary
from .queries import IngestRequest, RemoveRequest, ShareRequest, VerifyRequest

if TYPE_CHECKING:
    from ..config.file import SourceEntry
    from .index import Index

#: The fields of an `IngestRequest` the data dir's owner serves: which sources, and the two
#: options of its `reindex`. `wait` holds too: the owner queues the run behind any other.
OWNER_INGESTS = frozenset({"specs", "labels", "checksum", "allow_mass_delete", "wait"})

#: Each request record of a writing operation -> (its command, the fields the data dir's
#: owner serves; None: none, the command is refused whole). A field asked that is not
#: served (not at its default) is refused, named as the command spells it.
OWNER_SERVES: dict[type, tuple[str, frozenset[str] | None]] = {
    IngestRequest: ("ingest", OWNER_INGESTS),
    RemoveRequest: ("sources remove", frozenset({"label", "keep_declaration", "wait"})),
    VerifyRequest: ("verify", frozenset({"labels", "wait"})),  # the report; not --repair
    ShareRequest: ("share", None),  # it rewrites every collection's configuration
}


def spelled(field: str) -> str:
    """An `IngestRequest` field as `chromasync ingest` spells it (`no_gc` -> `--no-gc`)."""
    return "--" + field.replace("_", "-")


def refused_by_owner(request: object, spell: Callable[[str], str] = spelled) -> list[str]:
    """What `request` (a record of `OWNER_SERVES`) asks that the owner cannot serve
    (fields not at their default), in the caller's spelling (`spell`: the command line's,
    else a field's name as the owner's wire spells it)."""
    served = OWNER_SERVES[type(request)][1] or frozenset()
    return [
        spell(f.name)
        for f in dataclasses.fields(request)  # type: ignore[arg-type]
        if f.name not in served and getattr(request, f.name) != f.default
    ]


def check_owner_serves(request: object, owner: str, spell: Callable[[str], str] = spelled) -> None:
    """`LockError` unless the data dir's owner (`owner`, described) serves all `request`
    asks, naming what it does not (`spell`: as `refused_by_owner`) and the fix."""
    command, served = OWNER_SERVES[type(request)]
    if served is None:
        raise LockError(
            f"the data dir is owned by {owner}; `chromasync {command}` cannot go through it: "
            "stop it first"
        )
    refused = refused_by_owner(request, spell)
    if refused:
        names = ", ".join(refused[:-1]) + " and " + refused[-1] if len(refused) > 1 else refused[0]
        fix = f"run `chromasync {command}` without it" if spell is spelled else "ask without it"
        raise LockError(
            f"the data dir is owned by {owner}; {names} cannot go through it: stop it first"
            + (f", or {fix}" if command != "ingest" else "")
        )


def configured_sources(request: IngestRequest, settings: Settings) -> list[SourceEntry]:
    """The configured sources a request without specs ingests (`ConfigError` for none)."""
    entries = selected_sources(settings, request.labels)
    if not entries:
        where = settings.config_file.path if settings.config_file else None
        raise ConfigError(
            "nothing to ingest: give a PATH, or declare sources with `include: true` "
            + (f"in {where}" if where else "in chromasync.yaml (see `chromasync sources add`)")
        )
    return entries


def ingest_through_owner(
    index: Index,
    request: IngestRequest,
    owner: str,
    settings: Settings | None,
    notice: Callable[[str], None] | None = None,
) -> list[IngestSummary]:
    """Run `request` as the owner's reindex of the same (known) sources, and wait for it;
    `LockError` naming what the owner cannot serve, or a source it does not know.
    `settings`: the caller's (a request without specs needs a configured source there)."""
    check_owner_serves(request, owner)
    if not request.specs and settings is not None:
        configured_sources(request, settings)
    known = {s.label: s.location for s in index.sources()}
    for spec in request.specs:
        root = known.get(spec.label)
        if root is None or os.path.realpath(root) != os.path.realpath(spec.root):
            raise LockError(
                f"the data dir is owned by {owner}, which does not know source "
                f"{spec.label!r} at {str(spec.root)!r}; add it there (POST /sources) or stop it"
            )
    if notice is not None:
        notice(f"the data dir is owned by {owner}; reindexing through it")
    labels: Sequence[str] = [s.label for s in request.specs] or list(request.labels)
    job = index.reindex(
        labels, checksum=request.checksum, allow_mass_delete=request.allow_mass_delete
    )
    job = index.wait(job.id)
    if job.status != "done":
        raise ChromasyncError(f"{owner}: the reindex failed: {job.error}")
    return job.ingest_summaries()


__all__ = [
    "OWNER_INGESTS",
    "OWNER_SERVES",
    "check_owner_serves",
    "configured_sources",
    "ingest_through_owner",
    "refused_by_owner",
    "spelled",
]
