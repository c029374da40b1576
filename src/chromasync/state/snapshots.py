"""The ingest fast path's snapshots, `<data dir>/fastpath/<key>.snap`, and `.ran` stamps
(docs/architecture.md, "The console script"). Built-in modules only, like `fastpath`."""

from __future__ import annotations

import marshal
import os

from ..datadir import FILE_MODE
from ..datadir import LOCK_FILE as LOCK_FILE
from ..datadir import SNAPSHOT_DIR as FOLDER

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

    from ..records import SettledSource

FORMAT = 1
KEPT_STAMPS = 64


def snapshot_path(data_dir: str, key: str) -> str:
    """Where the snapshot of a command line's key lives (without its suffix)."""
    return os.path.join(data_dir, FOLDER, key[:32])


def read_snapshot(path: str, key: str) -> tuple[Any, ...] | None:
    """The snapshot at `path`, of this format and key, when the config files and the state
    file it depends on are as recorded: (sources, JSON report parts, summaries), each
    source (root, starts, pruned folders, use .gitignore, listing)."""
    try:
        with open(path + ".snap", "rb") as handle:
            data = marshal.loads(handle.read())  # noqa: S302 - our own file, like the state
        fmt, stored_key, consulted, (state_file, identity), sources, parts, summaries = data
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if fmt != FORMAT or stored_key != key or _identity(state_file) != identity:
        return None
    return (sources, parts, summaries) if consulted_unchanged(consulted) else None


def stamp(path: str, report: str) -> None:
    """Record a run answered from the snapshot at `path` (for `status`), written over the last
    one in place: ext4 flushes a file rewritten after a truncation to empty (3.5 ms here)."""
    data = report.encode("utf-8")
    try:
        fd = os.open(path + ".ran", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
    except OSError:
        return


def consulted_unchanged(consulted: Sequence[tuple[str, bytes | None]]) -> bool:
    """Each file holds the bytes recorded, or is still absent (None)."""
    for path, content in consulted:
        if content is None:
            if os.path.isfile(path):
                return False
            continue
        try:
            with open(path, "rb") as handle:
                if handle.read() != content:
                    return False
        except OSError:
            return False
    return True


def join_report(parts: Sequence[str], durations: Sequence[int]) -> str:
    """The JSON report with each source's duration put back."""
    out = [parts[0]]
    for duration, part in zip(durations, parts[1:], strict=True):
        out += (str(duration), part)
    return "".join(out)


class Recorder:
    """Collects, during a full `ingest`, what an unchanged re-run of it would print
    (`commit` writes it; failing to never fails the ingest)."""

    def __init__(self, key: str, render_json: Callable[[list[dict[str, object]]], str]) -> None:
        self.key = key
        self.render_json = render_json
        self.consulted: list[tuple[str, bytes | None]] = []
        self.settled: list[SettledSource] = []

    def consult(self, inputs: Iterable[tuple[str, bytes]], default_config: str | None) -> None:
        """The files the settings were read from, and the default config file when it was
        looked for and absent."""
        self.consulted = [(path, content) for path, content in inputs]
        if default_config and default_config not in {p for p, _ in self.consulted}:
            self.consulted.append((default_config, None))

    def add(self, settled: SettledSource) -> None:
        self.settled.append(settled)

    def commit(self, data_dir: str, state_file: str, ran: Sequence[tuple[str, str]]) -> bool:
        """Write the snapshot if every source of this run, (collection, source) in order,
        settled (the lock is held)."""
        if not ran or list(ran) != [(s.collection, s.source) for s in self.settled]:
            return False
        identity = _identity(state_file)
        if not identity or not consulted_unchanged(self.consulted):
            return False
        sentinels = [str(9_073_000_000_000_017 + i) for i in range(len(self.settled))]
        rows = [
            {**s.summary, "duration_ms": int(sentinel)}
            for s, sentinel in zip(self.settled, sentinels, strict=True)
        ]
        text = self.render_json(rows)
        parts: list[str] = []
        for sentinel in sentinels:
            if text.count(sentinel) != 1:
                return False
            before, text = text.split(sentinel)
            parts.append(before)
        parts.append(text)
        snapshot = (
            FORMAT,
            self.key,
            self.consulted,
            (state_file, identity),
            [
                (s.root, list(s.starts), list(s.pruned_dirs), s.use_gitignore, s.listing)
                for s in self.settled
            ],
            parts,
            [dict(s.summary) for s in self.settled],
        )
        path = snapshot_path(data_dir, self.key) + ".snap"
        from ..datadir import make_private_dir, replace_file

        try:
            make_private_dir(os.path.dirname(path))
            replace_file(path, marshal.dumps(snapshot, 2), durable=False)
        except OSError:  # a full or read-only disk: the next run takes the full path
            return False
        return True


def _identity(path: str) -> tuple[int, ...]:
    try:
        st = os.stat(path)
    except OSError:
        return ()
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def invalidate(data_dir: str) -> None:
    """Delete every snapshot of a data dir (whoever takes its lock may change the state)."""
    folder = os.path.join(data_dir, FOLDER)
    try:
        names = os.listdir(folder)
    except OSError:
        return
    stamps = []
    for name in names:
        path = os.path.join(folder, name)
        if name.endswith((".snap", ".search", ".tmp")):  # .search: an older keyword snapshot
            try:
                os.unlink(path)
            except OSError:
                continue
        elif name.endswith(".ran"):
            stamps.append(path)
    stamps.sort(key=lambda path: _identity(path)[2:], reverse=True)  # the newest first
    for path in stamps[KEPT_STAMPS:]:
        try:
            os.unlink(path)
        except OSError:
            continue


def recent_runs(data_dir: str) -> dict[tuple[str, str], tuple[int, dict[str, object]]]:
    """(collection, source) -> (time, summary) of the latest fast-path run of each source."""
    import json

    folder = os.path.join(data_dir, FOLDER)
    out: dict[tuple[str, str], tuple[int, dict[str, object]]] = {}
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".ran")]
    except OSError:
        return out
    for name in names:
        path = os.path.join(folder, name)
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
            when = os.stat(path).st_mtime_ns
        except (OSError, ValueError, RecursionError):
            continue
        for summary in data if isinstance(data, list) else [data]:
            if not isinstance(summary, dict):
                continue
            key = (str(summary.get("collection")), str(summary.get("source")))
            if key not in out or out[key][0] < when:
                out[key] = (when, summary)
    return out
