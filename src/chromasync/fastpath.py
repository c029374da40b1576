"""The console script's entry, and the fast path of an unchanged re-run of `ingest`.

An unchanged re-run should cost about what walking and stat-ing the tree costs. The full
CLI spends ten times that importing click, rich, SQLite and its own ~60 modules before it
looks at a file, so the console script starts here, in a module that imports only the
standard library's built-in modules (`os`, `marshal`, `fcntl`, `_sha256`):

1. Only `ingest` with settings flags is eligible (paths, `--json`, `--quiet`, `--data-dir`,
   `--config`, `--source`...); any other command or flag goes straight to the CLI, and so
   does a run whose human output would go to a terminal (the CLI draws it with rich).
2. The invocation's key is a digest of its arguments, its folder, the `CHROMASYNC_*`
   environment (secrets left out) and this code's version and location.
3. Under the data dir's lock, taken without waiting (a holder means the CLI must handle
   it), the snapshot that the last full run of the same key recorded is read. It holds the
   config files that run read, the state file's identity, and per source the listing its
   walk saw: each folder's entries with inode, mode, size, mtime_ns and ctime_ns, symlink
   verdicts, the folders an ignore rule pruned, and what a re-run over that tree reports.
4. If every config file and the state file are as recorded and every source's tree lists
   exactly the same, that report is printed with this run's own time, and the run is
   stamped for `status`. Anything else falls through to the full CLI.

A full run records a snapshot (`Recorder`, fed by the ingest's `SettledSource` reports) only
when a re-run over the tree it walked would do nothing by the full path's own triage: no
new, changed, racily clean or gone file, the source marked clean. Taking the data dir's lock
deletes every snapshot (`invalidate`), so any writer (ingest, verify --repair, sources
remove, reset, serve, watch) voids them before it changes anything. `CHROMASYNC_NO_FASTPATH`
set to anything but empty turns the fast path off.
"""

from __future__ import annotations

import errno
import marshal
import os
import stat as stat_mod
import sys
import time

from . import __version__
from .versions import CHUNKING_VERSION

try:  # the built-in hash: hashlib would load OpenSSL, which costs more than the whole check
    from _sha256 import sha256
except ImportError:  # pragma: no cover - Python 3.12 renamed it
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any

    from .records import SettledSource

FORMAT = 1
FOLDER = "fastpath"
LOCK_FILE = "lock"  # lock.LOCK_FILE (a test checks they agree)
OFF_ENV = "CHROMASYNC_NO_FASTPATH"
CRASH_ENV = "CHROMASYNC_CRASH_AT"
KEPT_STAMPS = 64

#: `ingest` options that only select settings or output: with these, a re-run of the same
#: command line over the same tree is a no-op. Anything else (--dry-run, --checksum,
#: --reembed, --limit, --chroma-token, --embed-option...) goes to the CLI.
_VALUE_OPTIONS = frozenset(
    {
        "--data-dir",
        "--collection",
        "--provider",
        "--model",
        "--source",
        "-s",
        "--kind",
        "--include",
        "--exclude",
        "--config",
        "--sources-file",
        "--embedding-url",
        "--chroma-url",
        "--tenant",
        "--database",
    }
)
_FLAG_OPTIONS = frozenset({"--json", "--quiet", "-q", "--no-gitignore", "--allow-root-slash"})
_SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD")


#: The command line the CLI is running as this process's own (set by `main`); a snapshot is
#: only recorded for it, never for a CLI called from Python with other arguments.
_command_line: list[tuple[str, ...]] = []


def main() -> int | None:
    """The `chromasync` console script: the fast path when it applies, else the CLI."""
    argv = sys.argv[1:]
    code = quick_ingest(argv, os.environ)
    if code is not None:
        return code
    from .cli import main as cli_main

    _command_line[:] = [tuple(argv)]
    cli_main()
    return None


# -- the invocation --------------------------------------------------------------------------


class Invocation:
    """An eligible `ingest` command line: its options by name (the last of each wins)."""

    __slots__ = ("argv", "as_json", "options")

    def __init__(self, argv: Sequence[str], options: dict[str, str], as_json: bool) -> None:
        self.argv = tuple(argv)
        self.options = options
        self.as_json = as_json


def parse_invocation(argv: Sequence[str], environ: Mapping[str, str]) -> Invocation | None:
    """The command line as an eligible `ingest`, or None when the CLI must run it."""
    if not argv or argv[0] != "ingest" or environ.get(OFF_ENV) or environ.get(CRASH_ENV):
        return None
    options: dict[str, str] = {}
    as_json = False
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg.startswith("-"):
            name, eq, value = arg.partition("=")
            if name in _FLAG_OPTIONS and not eq:
                as_json = as_json or name == "--json"
            elif name in _VALUE_OPTIONS:
                if not eq:
                    index += 1
                    if index == len(argv):
                        return None
                    value = argv[index]
                options[name] = value
            else:
                return None
        index += 1
    return Invocation(argv, options, as_json)


def invocation_key(invocation: Invocation, environ: Mapping[str, str], cwd: str) -> str:
    """What the outcome of a no-op run depends on, besides files (hex digest, no secrets)."""
    env = sorted(
        (name, value)
        for name, value in environ.items()
        if ((name.startswith("CHROMASYNC_") and name != OFF_ENV) or name == "HOME")
        and not any(word in name for word in _SECRET_WORDS)
    )
    here = os.path.dirname(os.path.abspath(__file__))
    material = (FORMAT, __version__, CHUNKING_VERSION, here, invocation.argv, cwd, tuple(env))
    return str(sha256(marshal.dumps(material, 2)).hexdigest())


def guess_data_dir(invocation: Invocation, environ: Mapping[str, str], cwd: str) -> str | None:
    """Where the data dir most likely is, without parsing the config file.

    A wrong guess is harmless: a snapshot is only used when its key matches, and a full run
    with the same key wrote it into the data dir it resolved.
    """
    value = invocation.options.get("--data-dir") or environ.get("CHROMASYNC_DATA_DIR")
    if value:
        return os.path.join(cwd, os.path.expanduser(value))
    named = invocation.options.get("--config") or environ.get("CHROMASYNC_CONFIG")
    config = os.path.join(cwd, os.path.expanduser(named or "chromasync.yaml"))
    try:
        with open(config, "rb") as handle:
            text = handle.read()
    except OSError:
        return None if named else os.path.join(cwd, ".chromasync")
    if b"data_dir" not in text:
        return os.path.join(cwd, ".chromasync")
    for line in text.decode("utf-8", "replace").splitlines():
        _, found, after = line.partition("data_dir")
        if found and after.lstrip()[:1] in (":", "="):
            raw = after.lstrip()[1:]
            for stop in ",}#":
                raw = raw.split(stop, 1)[0]
            raw = raw.strip().strip("'\"")
            base = os.path.dirname(os.path.realpath(config))
            return os.path.normpath(os.path.join(base, os.path.expanduser(raw))) if raw else None
    return None


# -- the listing -----------------------------------------------------------------------------


def symlink_reason(path: str, real_root: str) -> str:
    """Why a symlink is skipped: its target is a loop, missing, outside, or walked anyway."""
    try:
        target = os.path.realpath(path, strict=True)
    except OSError as exc:
        return "symlink-loop" if exc.errno == errno.ELOOP else "broken-symlink"
    except RuntimeError:
        return "symlink-loop"
    if target != real_root and not target.startswith(real_root + os.sep):
        return "symlink-outside-root"
    parent = os.path.realpath(os.path.dirname(path))
    if parent == target or parent.startswith(target + os.sep):
        return "symlink-loop"
    return "symlink-duplicate"


def folder_facts(
    entries: Iterable[os.DirEntry[str]], real_root: str, gitignore: bool
) -> list[object]:
    """One folder's entries as discovery sees them, in the order the folder lists them.

    A hidden name is its name (never read, except `.gitignore`), a folder is `(name,)`, a
    symlink `(name, verdict)`, anything else `(name, inode, size, mtime_ns, ctime_ns)`: any
    write, chmod or replacement moves ctime, which cannot be set back. A failed stat raises
    OSError.
    """
    facts: list[object] = []
    append = facts.append
    for entry in entries:
        name = entry.name
        if name[0] == "." and not (gitignore and name == ".gitignore"):
            append(name)
            continue
        st = entry.stat(follow_symlinks=False)
        kind = stat_mod.S_IFMT(st.st_mode)
        if kind == stat_mod.S_IFDIR:
            append((name,) if name[0] != "." else (name, st.st_ino, st.st_ctime_ns))
        elif kind == stat_mod.S_IFLNK:
            append((name, symlink_reason(entry.path, real_root)))
        else:
            append((name, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return facts


def encode_listing(folders: list[tuple[str, list[object]]]) -> bytes:
    """The walk's folders, in walk order, as comparable bytes (marshal 2: no references)."""
    return marshal.dumps(folders, 2)


def tree_listing(
    root: str, starts: Sequence[str], pruned: frozenset[str], gitignore: bool
) -> bytes | None:
    """Walk a source as discovery does, given the folders it pruned; None on any error.

    Discovery walks depth first, sub-folders in name order, hidden ones and pruned ones
    left out; this walk takes the same route.
    """
    real_root = os.path.realpath(root)
    folders: list[tuple[str, list[object]]] = []
    for start in starts:
        stack = [start]
        while stack:
            rel_dir = stack.pop()
            try:
                with os.scandir(os.path.join(root, rel_dir) if rel_dir else root) as it:
                    facts = folder_facts(it, real_root, gitignore)
            except OSError:
                return None
            folders.append((rel_dir, facts))
            names = sorted(f[0] for f in facts if type(f) is tuple and len(f) == 1)
            subdirs = [f"{rel_dir}/{n}" if rel_dir else n for n in names]
            stack.extend(reversed([d for d in subdirs if d not in pruned]))
    return encode_listing(folders)


# -- the fast path ---------------------------------------------------------------------------


def quick_ingest(argv: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """Answer an unchanged re-run from its snapshot: the exit code, or None for the CLI."""
    started = time.perf_counter_ns()
    invocation = parse_invocation(argv, environ)
    if invocation is None or not (invocation.as_json or not sys.stdout.isatty()):
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    data_dir = guess_data_dir(invocation, environ, cwd)
    if data_dir is None:
        return None
    key = invocation_key(invocation, environ, cwd)
    try:
        fd = os.open(os.path.join(data_dir, LOCK_FILE), os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    import fcntl

    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # held: the CLI says by whom, or waits, or goes through the owner
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}: chromasync {' '.join(argv)}"[:300].encode() + b"\n")
        try:
            text = _replay(os.path.join(data_dir, FOLDER, key[:32]), key, started, invocation)
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock
    if text is None:
        return None
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0


def _replay(path: str, key: str, started: int, invocation: Invocation) -> str | None:
    """The output of the recorded no-op run, when nothing it depends on changed."""
    try:
        with open(path + ".snap", "rb") as handle:
            snapshot = marshal.loads(handle.read())  # noqa: S302 - our own file, like the state
        fmt, stored_key, consulted, state_file, sources, json_parts, summaries = snapshot
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if fmt != FORMAT or stored_key != key or not _files_as_recorded(consulted, state_file):
        return None
    durations: list[int] = []
    for root, starts, pruned, gitignore, listing in sources:
        if tree_listing(root, starts, frozenset(pruned), gitignore) != listing:
            return None
        now = time.perf_counter_ns()
        durations.append((now - started) // 1_000_000)
        started = now
    as_json = _join(json_parts, durations)
    try:  # the run's stamp, for `status`: its time is the file's mtime
        with open(path + ".ran", "w", encoding="utf-8") as handle:
            handle.write(as_json)
    except OSError:
        pass
    if invocation.as_json:
        return as_json
    for summary, duration in zip(summaries, durations, strict=True):
        summary["duration_ms"] = duration
    return render_plain(summaries)


def _files_as_recorded(
    consulted: Sequence[tuple[str, bytes | None]], state_file: tuple[str, tuple[int, ...]]
) -> bool:
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
    state_path, identity = state_file
    try:
        st = os.stat(state_path)
    except OSError:
        return False
    return (st.st_ino, st.st_size, st.st_mtime_ns) == identity


def _join(parts: Sequence[str], durations: Sequence[int]) -> str:
    out = [parts[0]]
    for duration, part in zip(durations, parts[1:], strict=True):
        out += (str(duration), part)
    return "".join(out)


# -- output ----------------------------------------------------------------------------------

_COUNTS = (
    "files_seen",
    "files_new",
    "files_updated",
    "files_unchanged",
    "files_deleted",
    "chunks_total",
    "chunks_embedded",
    "chunks_reused",
    "chunks_deleted",
    "duration_ms",
    "embed_ms",
)


def render_plain(summaries: Sequence[Mapping[str, Any]]) -> str:
    """Ingest summaries as plain lines (the CLI's output when stdout is not a terminal)."""
    rows = list(summaries)
    if len(rows) > 1:
        total: dict[str, Any] = {n: sum(int(s[n]) for s in rows) for n in _COUNTS}
        skipped: dict[str, int] = {}
        for s in rows:
            for reason, n in s["files_skipped"].items():
                skipped[reason] = skipped.get(reason, 0) + n
        total.update(source="total", collection="", files_skipped=skipped)
        rows.append(total)
    dry = " (dry run: nothing written)" if rows and rows[0].get("dry_run") else ""
    lines = []
    for s in rows:
        where = f" -> {s['collection']}" if s["collection"] else ""
        duration, embed = int(s["duration_ms"]), int(s["embed_ms"])
        lines += [
            f"{printable(str(s['source']))}{where}{dry}",
            f"  files   {s['files_seen']} seen: {s['files_new']} new, {s['files_updated']} "
            f"updated, {s['files_unchanged']} unchanged, {s['files_deleted']} deleted, "
            f"{sum(s['files_skipped'].values())} skipped",
            f"  chunks  {s['chunks_total']} total: {s['chunks_embedded']} embedded, "
            f"{s['chunks_reused']} reused, {s['chunks_deleted']} deleted",
            f"  time    {duration / 1000:.2f} s: embedding {embed / 1000:.2f} s, "
            f"the rest {max(duration - embed, 0) / 1000:.2f} s",
        ]
        if s["files_skipped"]:
            reasons = sorted(s["files_skipped"].items())
            lines.append("  skipped " + ", ".join(f"{r} {n}" for r, n in reasons))
    return "\n".join(lines) + "\n"


def printable(text: str) -> str:
    """Control characters escaped, so that a file name cannot drive the terminal."""
    return "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in text)


# -- recording (the full path) ---------------------------------------------------------------


class Recorder:
    """Collects, during a full `ingest`, what an unchanged re-run of it would print.

    Made by the CLI for an eligible command line (`for_command_line`); the ingest reports
    each settled source (`add`), and `commit`, still under the data dir's lock, writes the
    snapshot when every source settled and no config file changed meanwhile.
    """

    def __init__(self, key: str, render_json: Callable[[list[dict[str, object]]], str]) -> None:
        self.key = key
        self.render_json = render_json
        self.consulted: list[tuple[str, bytes | None]] = []
        self.settled: list[SettledSource] = []

    @classmethod
    def for_command_line(
        cls, environ: Mapping[str, str], render_json: Callable[[list[dict[str, object]]], str]
    ) -> Recorder | None:
        """A recorder for this process's own command line, when it is eligible."""
        invocation = parse_invocation(_command_line[0], environ) if _command_line else None
        if invocation is None:
            return None
        return cls(invocation_key(invocation, environ, os.getcwd()), render_json)

    def consult(self, inputs: Iterable[tuple[str, bytes]], default_config: str | None) -> None:
        """The files the settings were read from, and the default config file if it was
        looked for and absent."""
        self.consulted = [(path, content) for path, content in inputs]
        if default_config and default_config not in {p for p, _ in self.consulted}:
            self.consulted.append((default_config, None))

    def add(self, settled: SettledSource) -> None:
        self.settled.append(settled)

    def commit(
        self, data_dir: str, state_file: str, summaries: Sequence[Mapping[str, object]]
    ) -> bool:
        """Write the snapshot if every source of this run settled (the lock is held)."""
        ran = [(s["collection"], s["source"]) for s in summaries]
        if ran != [(s.collection, s.source) for s in self.settled] or not ran:
            return False
        if not _files_as_recorded(self.consulted, (state_file, _identity(state_file))):
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
            (state_file, _identity(state_file)),
            [
                (s.root, list(s.starts), list(s.pruned_dirs), s.use_gitignore, s.listing)
                for s in self.settled
            ],
            parts,
            [dict(s.summary) for s in self.settled],
        )
        folder = os.path.join(data_dir, FOLDER)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, self.key[:32] + ".snap")
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "wb") as handle:
            handle.write(marshal.dumps(snapshot, 2))
        os.replace(temporary, path)
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
        if name.endswith((".snap", ".tmp")):
            try:
                os.unlink(path)
            except OSError:
                continue
        elif name.endswith(".ran"):
            stamps.append(path)
    stamps.sort(key=_mtime, reverse=True)
    for path in stamps[KEPT_STAMPS:]:
        try:
            os.unlink(path)
        except OSError:
            continue


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


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
        except (OSError, ValueError):
            continue
        for summary in data if isinstance(data, list) else [data]:
            if not isinstance(summary, dict):
                continue
            key = (str(summary.get("collection")), str(summary.get("source")))
            if key not in out or out[key][0] < when:
                out[key] = (when, summary)
    return out
