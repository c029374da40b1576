"""The console script's keyword-search fast path: `search QUERY --mode keyword` from SQLite.

A keyword search needs neither chromadb nor the model, yet the full CLI imports both, and
click, rich and pydantic, before it reads the index. `fastpath.main` calls `quick_search`
first; it answers when:

1. the command line is `search QUERY --mode keyword` with only the options listed below
   (any other option, `--group-by`, `--rerank`, `--help` or a second argument goes to the
   CLI), and its output is `--json` or not a terminal (the CLI draws a terminal's with rich);
2. `CHROMASYNC_NO_FASTPATH` is unset or empty;
3. a full run of the same command line with any query recorded what it resolved
   (`retrieve.quick`), and nothing that depends on changed: no writer took the data dir's
   lock since, the state file and config files are as recorded, no service owns the data
   dir (its searches go through its socket, by the CLI).

Otherwise the CLI runs the search, and records a snapshot for the next call when it may.
The output is the full path's: `--json` byte for byte, else `results.plain_lines`.
"""

from __future__ import annotations

import marshal
import os
import sys

from . import __version__
from .datadir import guess, split_argv

try:  # the built-in hash: hashlib would load OpenSSL, which costs more than the whole check
    from _sha256 import sha256
except ImportError:  # pragma: no cover - Python 3.12 renamed it
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

#: `search` options taking a value that the snapshot's key covers.
_VALUE_OPTIONS = frozenset(
    {
        "--data-dir",
        "--collection",
        "--provider",
        "--model",
        "--embedding-url",
        "--chroma-url",
        "--tenant",
        "--database",
        "--config",
        "--sources-file",
        "--mode",
        "--k",
        "--source",
        "--where",
        "--where-json",
        "--tag",
        "--after",
        "--before",
        "--date-field",
        "--path",
        "--phrase",
        "--match",
        "--sort",
    }
)
_FLAG_OPTIONS = frozenset(
    {
        "--json",
        "--all-collections",
        "--tags-all",
        "--tags-any",
        "--per-doc",
        "--no-rerank",
        "--allow-root-slash",
        "--no-daemon",  # the snapshot needs no daemon either
    }
)
_SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD")
OFF_ENV = "CHROMASYNC_NO_FASTPATH"
QUERY_MARK = "\0query"


class SearchLine:
    """An eligible `search` command line: the query, its position, options by name."""

    __slots__ = ("argv", "as_json", "options", "query", "query_at")

    def __init__(
        self, argv: Sequence[str], query_at: int, options: dict[str, str], as_json: bool
    ) -> None:
        self.argv = tuple(argv)
        self.query_at = query_at
        self.query = argv[query_at]
        self.options = options
        self.as_json = as_json


def parse_search(argv: Sequence[str], environ: Mapping[str, str]) -> SearchLine | None:
    """The command line as a fast-path `search`, or None when the CLI must run it."""
    if not argv or argv[0] != "search" or environ.get(OFF_ENV):
        return None
    items = split_argv(argv, _FLAG_OPTIONS, _VALUE_OPTIONS)
    if items is None:
        return None
    arguments = [index for index, name, _value in items if not name]
    options = {name: value for _index, name, value in items if name and value is not None}
    if len(arguments) != 1 or options.get("--mode") != "keyword":
        return None  # no query, or a second argument: the CLI says what is wrong
    as_json = any(name == "--json" for _index, name, _value in items)
    return SearchLine(argv, arguments[0], options, as_json)


def search_key(line: SearchLine, environ: Mapping[str, str], cwd: str) -> str:
    """What a keyword search resolves besides its query depends on (hex digest, no secrets):
    the command line with the query left out, the folder, the environment, this code."""
    argv = list(line.argv)
    argv[line.query_at] = QUERY_MARK
    env = sorted(
        (name, value)
        for name, value in environ.items()
        if ((name.startswith("CHROMASYNC_") and name != OFF_ENV) or name == "HOME")
        and not any(word in name for word in _SECRET_WORDS)
    )
    here = os.path.dirname(os.path.abspath(__file__))
    material = ("search", __version__, here, tuple(argv), cwd, tuple(env))
    return str(sha256(marshal.dumps(material, 2)).hexdigest())


def quick_search(argv: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """Answer a keyword search from its snapshot: the exit code, or None for the CLI."""
    line = parse_search(argv, environ)
    if line is None or not (line.as_json or not sys.stdout.isatty()):
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    data_dir = guess(line.options, environ, cwd)
    if data_dir is None or not line.query.strip():
        return None
    from .retrieve.quick import read_search_snapshot, run_snapshot

    key = search_key(line, environ, cwd)
    snapshot = read_search_snapshot(data_dir, key)
    if snapshot is None:
        return None
    try:
        result = run_snapshot(data_dir, snapshot, line.query)
    except Exception:  # noqa: BLE001 - anything unexpected: the CLI runs it and reports
        return None
    if line.as_json:
        import json

        text = json.dumps(result.as_json(), indent=2, ensure_ascii=False) + "\n"
    else:
        from .retrieve.results import plain_lines

        text = plain_lines(result)
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0


# -- through the search daemon ---------------------------------------------------------------

#: `search` options the daemon's settings key covers (`owner.daemon`): the store and model.
_STORE_OPTIONS = frozenset(
    {
        "--data-dir",
        "--provider",
        "--model",
        "--embedding-url",
        "--embed-option",
        "--chroma-url",
        "--chroma-token",
        "--tenant",
        "--database",
        "--config",
        "--sources-file",
        "--allow-root-slash",
    }
)
#: `search` options sent to the daemon, by the name of `/search`'s parameter.
_REQUEST_VALUES = {
    "--collection": "collection",
    "--mode": "mode",
    "--k": "k",
    "--source": "source",
    "--where": "where",
    "--where-json": "where_json",
    "--tag": "tag",
    "--after": "after",
    "--before": "before",
    "--date-field": "date_field",
    "--path": "path",
    "--phrase": "phrase",
    "--match": "match",
    "--links-to": "links_to",
    "--min-score": "min_score",
    "--sort": "sort",
    "--group-by": "group_by",
}
_REQUEST_FLAGS = {
    "--all-collections": ("all_collections", "true"),
    "--tags-all": ("tags_all", "true"),
    "--tags-any": ("tags_all", "false"),
    "--per-doc": ("per_doc", "true"),
    "--no-rerank": ("rerank", "false"),
}
_OUTPUT_FLAGS = frozenset({"--json", "--files", "--explain", "--no-daemon"})
DAEMON_OFF_ENV = "CHROMASYNC_NO_DAEMON"
#: How long the client waits for the daemon it started (then the CLI runs the search).
START_TIMEOUT = 30.0


class DaemonLine:
    """A `search` command line the daemon can answer: query, store options, request, output."""

    __slots__ = ("options", "output", "params", "query", "store")

    def __init__(self) -> None:
        self.query = ""
        self.store: list[tuple[str, str]] = []
        self.params: list[tuple[str, str]] = []
        self.options: dict[str, str] = {}
        self.output: set[str] = set()


def parse_daemon_search(argv: Sequence[str]) -> DaemonLine | None:
    """The command line as a search for the daemon, or None when the CLI must run it."""
    if not argv or argv[0] != "search":
        return None
    flags = _OUTPUT_FLAGS | _REQUEST_FLAGS.keys() | {"--allow-root-slash"}
    items = split_argv(argv, flags, _STORE_OPTIONS | _REQUEST_VALUES.keys())
    if items is None:
        return None
    line = DaemonLine()
    arguments = [value for _index, name, value in items if not name]
    if len(arguments) != 1:
        return None
    line.query = str(arguments[0])
    for _index, name, value in items:
        if not name:
            continue
        if name in _REQUEST_FLAGS:
            line.params.append(_REQUEST_FLAGS[name])
        elif name in _OUTPUT_FLAGS:
            line.output.add(name)
        elif value is None:
            line.store.append((name, ""))  # --allow-root-slash
        else:
            if name in _STORE_OPTIONS:
                line.store.append((name, value))
            else:
                line.params.append((_REQUEST_VALUES[name], value))
            line.options[name] = value
    if not line.query.strip() or "--no-daemon" in line.output:
        return None
    if "--files" in line.output and line.output & {"--json", "--explain"}:
        return None  # the CLI says why not
    return line


def daemon_key(store: Sequence[tuple[str, str]], environ: Mapping[str, str], cwd: str) -> str:
    """What a search's settings depend on (hex digest): store options, folder, environment
    (secrets hashed in), this code. The full CLI registers it with a daemon whose settings it
    checked (`owner.daemon`); this client sends it with each search."""
    env = sorted(
        (name, value)
        for name, value in environ.items()
        if (name.startswith("CHROMASYNC_") and name not in (OFF_ENV, DAEMON_OFF_ENV))
        or name == "HOME"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    material = ("daemon", __version__, here, tuple(store), cwd, tuple(env))
    return str(sha256(marshal.dumps(material, 2)).hexdigest())


def daemon_search(argv: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """Answer a search through the data dir's warm daemon: the exit code, or None for the
    CLI (no daemon, another's settings, an error to report: the CLI does all of those)."""
    line = parse_daemon_search(argv)
    if line is None or environ.get(DAEMON_OFF_ENV, "").strip().lower() not in (
        "",
        "0",
        "false",
        "no",
    ):
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    data_dir = guess(line.options, environ, cwd)
    if data_dir is None:
        return None
    key = daemon_key(line.store, environ, cwd)
    from .owner.dial import daemon_socket, get, nobody_owns

    socket_path = daemon_socket(data_dir)
    if socket_path is None and nobody_owns(data_dir):
        socket_path = _start_daemon(line, data_dir, key, environ)
    if socket_path is None:
        return None
    tty = sys.stdout.isatty()
    if "--json" in line.output:
        render = "json"
    elif "--files" in line.output:
        render = "files"
    else:
        render = "rich" if tty or "--explain" in line.output else "plain"
    params = [("q", line.query), *line.params, ("render", render)]
    if "--explain" in line.output:
        params.append(("explain", "true"))
    if tty and render == "rich":
        params.append(("tty", "true"))
        import shutil

        params.append(("width", str(shutil.get_terminal_size().columns)))
        params.append(("color", _color_system(environ)))
    reply = get(socket_path, "/daemon/search", params, key, environ.get("CHROMASYNC_API_TOKEN"))
    if reply is None:
        return None
    import json

    try:
        body = json.loads(reply)
        text, warnings = str(body["stdout"]), [str(w) for w in body["warnings"]]
    except (ValueError, KeyError, TypeError):
        return None
    for warning in warnings:
        sys.stderr.write(f"warning: {warning}\n")
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0


def _start_daemon(
    line: DaemonLine, data_dir: str, key: str, environ: Mapping[str, str]
) -> str | None:
    """Start the daemon from this command line's store options, with its key accepted from
    the start, and wait until it listens: its socket, or None (the CLI then runs the search,
    and reports whatever kept the daemon from starting)."""
    import subprocess
    import time

    from .datadir import DAEMON_LOG, DAEMON_NOTICE, open_private
    from .owner.dial import daemon_socket, listening

    argv = [sys.executable, "-m", "chromasync", "daemon", "run", "--key", key]
    for name, value in line.store:
        argv += [name] if name == "--allow-root-slash" else [f"{name}={value}"]
    sys.stderr.write(DAEMON_NOTICE + "\n")
    sys.stderr.flush()
    try:
        with open_private(os.path.join(data_dir, DAEMON_LOG), "ab") as log:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                env=dict(environ),
            )
    except OSError:
        return None
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        found = daemon_socket(data_dir)
        if found is not None and listening(found):
            return found
        if process.poll() is not None:  # it could not start, or another one won the lock
            found = daemon_socket(data_dir)
            return found if found is not None and listening(found) else None
        time.sleep(0.02)
    return None


def _color_system(environ: Mapping[str, str]) -> str:
    """The terminal's colours, as rich names them (rich's own detection needs rich)."""
    if environ.get("NO_COLOR"):
        return "none"
    if environ.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
        return "truecolor"
    term = environ.get("TERM", "").lower()
    if term in ("dumb", "unknown"):
        return "none"
    return "256" if "256" in term else "standard"


def search_recorder_key(argv: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The snapshot key of the process's own command line, when it is eligible."""
    line = parse_search(argv, environ)
    if line is None:
        return None
    return search_key(line, environ, os.getcwd())


def daemon_recorder_key(argv: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The daemon key of the process's own command line, when the daemon client may send it."""
    line = parse_daemon_search(argv)
    if line is None:
        return None
    return daemon_key(line.store, environ, os.getcwd())


__all__ = [
    "daemon_key",
    "daemon_recorder_key",
    "daemon_search",
    "parse_daemon_search",
    "parse_search",
    "quick_search",
    "search_key",
    "search_recorder_key",
    "sha256",
]
