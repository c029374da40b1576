"""Front-matter identities (`identity_key`): which file of a source holds each one.

Design notes: docs/internals.md, `plan/identities.py`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Container, Iterable, Mapping

from ..records import FileState


class Identities:
    """The claims of one source's run: those remembered (`known`: path -> (identity, held)
    as last written), replaced file by file as they are read (`read`)."""

    def __init__(
        self,
        known: Mapping[str, tuple[str, bool]],
        gone: Collection[str],
        to_read: Iterable[str],
    ) -> None:
        self._claims: dict[str, str] = {}
        self._by: defaultdict[str, set[str]] = defaultdict(set)
        self._holder: dict[str, str] = {}
        self._open = set(to_read)  # to be read this run: their claims may change
        for path in sorted(known):
            if path in gone:
                continue
            identity, held = known[path]
            self._claim(path, identity)
            if held:
                self._holder.setdefault(identity, path)

    def _claim(self, path: str, identity: str) -> None:
        self._claims[path] = identity
        self._by[identity].add(path)

    def _unclaim(self, path: str) -> None:
        old = self._claims.pop(path, None)
        if old is None:
            return
        self._by[old].discard(path)
        if not self._by[old]:
            del self._by[old]
        if self._holder.get(old) == path:
            del self._holder[old]  # a vacancy: `rereads` names who takes it over

    def read(self, path: str, identity: str | None) -> bool:
        """Record what reading `path` found (`identity`: None for none, or a skip whose
        records go); True when it must wait until every claim is known (planned last)."""
        self._open.discard(path)
        if self._claims.get(path) != identity:
            self._unclaim(path)
        if identity is None:
            return False
        self._claim(path, identity)
        holder = self._holder.get(identity)
        if holder is None and self._by[identity] == {path}:
            self._holder[identity] = path
            return False
        return holder is None or holder in self._open

    def kept(self, path: str) -> None:
        """`path` could not be read this time (a transient skip): its records and its claim
        stay as they were."""
        self._open.discard(path)

    def rereads(self, read: Container[str]) -> set[str]:
        """Files not read this run that must be: the first claimant of each identity left
        without a holder (it takes the identity over)."""
        firsts = (min(paths) for i, paths in self._by.items() if i not in self._holder)
        return {path for path in firsts if path not in read}

    def holder(self, identity: str) -> str:
        """The path that holds `identity` once every claim is known (the first claimant
        by path when its holder went)."""
        holder = self._holder.get(identity)
        if holder is None or holder in self._open:
            holder = self._holder[identity] = min(self._by[identity])
        return holder


def shared_rows(manifest: Mapping[str, FileState], gone: Collection[str]) -> set[str]:
    """Files on disk whose rows list a record ID another row lists too: written by a
    release that let two files share an identity's records (or cut off between one file
    taking an identity over and the run's end). They are read and written again."""
    seen: dict[str, str] = {}
    shared: set[str] = set()
    for path, state in manifest.items():
        for ref in state.records:
            other = seen.setdefault(ref.id, path)
            if other != path:
                shared.update((path, other))
    return shared - set(gone)


__all__ = ["Identities", "shared_rows"]
