"""Change events to syncs: which source each named file belongs to, and when to try again.

Design notes: docs/internals.md, `nats/events.py`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

#: Seconds before a batch whose sync failed is delivered again: doubling, capped.
REDELIVER_BASE_S = 1.0
REDELIVER_CAP_S = 60.0


@dataclass(frozen=True, slots=True)
class Placement:
    """The sources a batch syncs (sorted), and the paths that lie in none of them."""

    labels: tuple[str, ...]
    outside: tuple[str, ...]


def absolute(path: str, corpus_root: str | None) -> str | None:
    """`path` made absolute: as it is, or under `corpus_root`; None when relative and there
    is no corpus root to read it against."""
    if path.startswith("/"):
        return path
    if not corpus_root:
        return None
    return posixpath.join(corpus_root, path)


def within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def place(
    paths: Iterable[str],
    roots: Mapping[str, str],
    corpus_root: str | None,
    resolve: Callable[[str], str],
) -> Placement:
    """Each path's sources (`roots`: label -> resolved root; nested sources both sync)."""
    labels: set[str] = set()
    outside: list[str] = []
    for path in paths:
        full = absolute(path, corpus_root)
        found = []
        if full is not None and "\x00" not in full:
            real = resolve(full)
            found = [label for label, root in roots.items() if within(real, root)]
        if found:
            labels.update(found)
        else:
            outside.append(path)
    return Placement(tuple(sorted(labels)), tuple(outside))


def subject_matches(pattern: str, subject: str) -> bool:
    """Whether a stream's subject `pattern` (`*`, `>` wildcards) covers `subject`."""
    want, have = pattern.split("."), subject.split(".")
    for i, part in enumerate(want):
        if part == ">":
            return len(have) > i
        if i >= len(have) or part not in ("*", have[i]):
            return False
    return len(want) == len(have)


def redeliver_delay(deliveries: int) -> float:
    """Seconds before delivery number `deliveries + 1` of an event whose sync failed."""
    return float(min(REDELIVER_CAP_S, REDELIVER_BASE_S * 2 ** max(0, deliveries - 1)))


def reconnect_delay(attempt: int, rand: float, base_s: float = 0.25, cap_s: float = 10.0) -> float:
    """Seconds before reconnect attempt `attempt + 1` (1-based): doubling from `base_s`,
    capped at `cap_s`, half of it random ("equal jitter", as `retry.retry_delay`)."""
    backoff = min(cap_s, base_s * 2 ** max(0, attempt - 1))
    return float(backoff / 2 + backoff / 2 * rand)


__all__ = [
    "Placement",
    "absolute",
    "place",
    "reconnect_delay",
    "redeliver_delay",
    "subject_matches",
    "within",
]
