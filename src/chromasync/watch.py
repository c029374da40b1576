"""Watch mode: keep sources in sync as their files change (watchdog), debounced.

Design notes: docs/internals.md, `watch.py`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .records import SourceSpec

log = logging.getLogger(__name__)

#: watchdog event types that mean a file's content or presence may have changed.
CHANGE_EVENTS = frozenset({"created", "modified", "deleted", "moved"})


class Debounce:
    """Which labels are due for a run, given when their events came."""

    def __init__(self, debounce: float, max_delay: float) -> None:
        self.debounce = debounce
        self.max_delay = max(max_delay, debounce)
        self._first: dict[str, float] = {}
        self._last: dict[str, float] = {}

    def note(self, label: str, now: float) -> None:
        self._first.setdefault(label, now)
        self._last[label] = now

    def due(self, now: float) -> list[str]:
        """Labels to run now (and forget until their next event)."""
        ready = [
            label
            for label, last in self._last.items()
            if now - last >= self.debounce or now - self._first[label] >= self.max_delay
        ]
        for label in ready:
            del self._first[label], self._last[label]
        return sorted(ready)

    def forget(self, label: str) -> None:
        self._first.pop(label, None)
        self._last.pop(label, None)

    def next_deadline(self) -> float | None:
        """When the next label becomes due, or None when nothing is pending."""
        if not self._last:
            return None
        return min(
            min(last + self.debounce, self._first[label] + self.max_delay)
            for label, last in self._last.items()
        )


class Watcher:
    """Watches source roots and calls `submit([spec])` for each source that changed."""

    def __init__(
        self,
        specs: Sequence[SourceSpec],
        submit: Callable[[list[SourceSpec]], object],
        *,
        debounce: float = 0.3,
        max_delay: float = 2.0,
        ignore: Sequence[Path] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.specs = {s.label: s for s in specs}
        self._roots = [(os.path.realpath(s.root), s.label) for s in specs]
        self._ignore = [os.path.realpath(p) for p in ignore]
        self._submit = submit
        self._clock = clock
        self._debounce = Debounce(debounce, max_delay)
        self._cond = threading.Condition()
        self._stopping = False
        self._observer: Any = None
        self._handler: Any = None
        self._thread = threading.Thread(target=self._flush, name="chromasync-watch", daemon=True)

    def start(self) -> None:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                if event.event_type not in CHANGE_EVENTS:
                    return
                for raw in (event.src_path, getattr(event, "dest_path", "")):
                    if raw:
                        watcher.notice(os.fsdecode(raw))

        self._handler = Handler()
        observer = Observer()
        for root, label in self._roots:
            self._schedule(observer, root, label)
        observer.start()
        self._observer = observer
        self._thread.start()

    def _schedule(self, observer: Any, root: str, label: str) -> None:
        if not os.path.isdir(root):
            log.warning("source %r: %s is not a folder; not watching it", label, root)
            return
        try:
            observer.schedule(self._handler, root, recursive=True)
        except (OSError, RuntimeError) as exc:
            log.warning("source %r: cannot watch %s: %s", label, root, exc)

    def add(self, spec: SourceSpec) -> None:
        """Watch one more source (a source added while running)."""
        root = os.path.realpath(spec.root)
        with self._cond:
            if (root, spec.label) in self._roots:
                return
            self.specs[spec.label] = spec
            self._roots.append((root, spec.label))
        if self._observer is not None:
            self._schedule(self._observer, root, spec.label)

    def remove(self, label: str) -> None:
        """Stop syncing one source (it is being removed); its events are ignored from now."""
        with self._cond:
            self._roots = [(root, name) for root, name in self._roots if name != label]
            self.specs.pop(label, None)
            self._debounce.forget(label)

    def notice(self, path: str) -> None:
        """A change at `path` (absolute): mark the sources that contain it."""
        if any(path == p or path.startswith(p + os.sep) for p in self._ignore):
            return
        with self._cond:
            for root, label in self._roots:
                if path == root or path.startswith(root + os.sep):
                    self._debounce.note(label, self._clock())
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=10)
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _flush(self) -> None:
        while True:
            with self._cond:
                while not self._stopping:
                    deadline = self._debounce.next_deadline()
                    now = self._clock()
                    if deadline is not None and deadline <= now:
                        break
                    self._cond.wait(None if deadline is None else deadline - now)
                if self._stopping:
                    return
                labels = self._debounce.due(self._clock())
            for label in labels:
                spec = self.specs.get(label)
                if spec is None:
                    continue
                log.info("source %r changed; syncing", label)
                try:
                    self._submit([spec])
                except Exception:  # the watcher outlives one failed submission
                    log.exception("source %r: could not start a sync", label)


__all__ = ["CHANGE_EVENTS", "Debounce", "Watcher"]
