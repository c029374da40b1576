"""The console script's keyword-search fast path: `search QUERY --mode keyword` from SQLite.

A keyword search needs neither chromadb nor the model, yet the full CLI imports both, and
click, rich and pydantic, before it reads the index. `fastpath.main` calls `quick_search`
first; it answers when:

1. the command line is `search QUERY --mode keyword` with only the options `cmdline.SEARCH`
   marks `keyword` (any other option, `--group-by`, `--rerank`, `--help` or a second
   argument goes to the CLI), and its output is `--json` or not a terminal (the CLI draws a
   terminal's with rich);
2. `CHROMASYNC_NO_FASTPATH` is unset or empty;
3. a full run of the same command line with any query recorded what it resolved
   (`retrieve.quick`), and nothing that depends on changed: no writer took the data dir's
   lock since, the state file and config files are as recorded, no service owns the data
   dir (its searches go through its socket, by the CLI).

Otherwise the CLI runs the search, and records a snapshot for the next call when it may.
The output is the full path's: `--json` byte for byte, else `results.plain_lines`.
"""

from __future__ import annotations

import os
import sys

from .cmdline import DAEMON_OFF_ENV, OFF_ENV, OUTPUT, REQUEST, SETTINGS, Line, parse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

QUERY_MARK = "\0query"
#: `search` output options that print paths only (`-0`/`--null`: raw, NUL-ended)
_FILES = frozenset({"--files", "-0", "--null"})


class SearchLine:
    """An eligible `search` command line: the query, its position, options by name."""

    __slots__ = ("as_json", "line", "query", "query_at")

    def __init__(self, line: Line, query_at: int) -> None:
        self.line = line
        self.query_at = query_at
        self.query = line.argv[query_at]
        self.as_json = line.given("--json")

    @property
    def argv(self) -> tuple[str, ...]:
        return self.line.argv

    @property
    def options(self) -> dict[str, str]:
        return self.line.options


def parse_search(argv: Sequence[str], environ: Mapping[str, str]) -> SearchLine | None:
    """The command line as a fast-path `search`, or None when the CLI must run it."""
    if not argv or argv[0] != "search" or environ.get(OFF_ENV):
        return None
    line = parse(argv)
    if line is None:
        return None
    table = line.table()
    if not all(table[name].keyword for _index, name, _value in line.items if name):
        return None  # --group-by, --files, --chroma-token...: the daemon or the CLI
    arguments = line.arguments
    if len(arguments) != 1 or line.options.get("--mode") != "keyword":
        return None  # no query, or a second argument: the CLI says what is wrong
    if _too_long(arguments[0][1]):
        return None
    return SearchLine(line, arguments[0][0])


def _too_long(query: str) -> bool:
    """Over the query's bound (`retrieve.options.QUERY`): the CLI says so."""
    from .retrieve.options import QUERY  # loaded already: `cmdline`'s search table reads it

    return len(query) > (QUERY.max_chars or 0)


def search_key(line: SearchLine, environ: Mapping[str, str], cwd: str) -> str:
    """What a keyword search resolves besides its query depends on (`cmdline.line_key`):
    the command line with the query left out, the folder, the environment, the config."""
    argv = list(line.argv)
    argv[line.query_at] = QUERY_MARK
    return line.line.key("search", tuple(argv), environ, cwd)


def quick_search(argv: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """Answer a keyword search from its snapshot: the exit code, or None for the CLI."""
    line = parse_search(argv, environ)
    if line is None or not (line.as_json or not sys.stdout.isatty()):
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    data_dir = line.line.data_dir(environ, cwd)
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


class DaemonLine:
    """A `search` command line the daemon can answer: the query, its settings options (the
    daemon's key and its own command line), the request's parameters, the output flags."""

    __slots__ = ("line", "output", "params", "query", "store")

    def __init__(self, line: Line, query: str) -> None:
        self.line = line
        self.query = query
        self.store: list[tuple[str, str]] = []
        self.params: list[tuple[str, str]] = []
        self.output: set[str] = set()

    @property
    def options(self) -> dict[str, str]:
        return self.line.options


def parse_daemon_search(argv: Sequence[str]) -> DaemonLine | None:
    """The command line as a search for the daemon, or None when the CLI must run it."""
    if not argv or argv[0] != "search":
        return None
    parsed = parse(argv)
    if parsed is None:
        return None
    arguments = parsed.arguments
    if len(arguments) != 1:
        return None
    line = DaemonLine(parsed, arguments[0][1])
    table = parsed.table()
    for _index, name, value in parsed.items:
        if not name:
            continue
        option = table[name]
        param = option.param
        if option.part == OUTPUT:
            line.output.add(name)
        elif option.part == SETTINGS:
            line.store.append((name, "" if value is None else value))
        elif option.part == REQUEST and isinstance(param, tuple):
            line.params.append(param)
        elif option.part == REQUEST and isinstance(param, str) and value is not None:
            line.params.append((param, value))
    if not line.query.strip() or "--no-daemon" in line.output or _too_long(line.query):
        return None
    if line.output & _FILES and line.output & {"--json", "--explain"}:
        return None  # the CLI says why not
    return line


def daemon_key(line: DaemonLine, environ: Mapping[str, str], cwd: str) -> str:
    """What a search's settings depend on (`cmdline.line_key` of its settings options). The
    full CLI registers it with a daemon whose settings it checked (`owner.daemon`); this
    client sends it with each search."""
    return line.line.key("daemon", tuple(line.store), environ, cwd)


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
    data_dir = line.line.data_dir(environ, cwd)
    if data_dir is None:
        return None
    key = daemon_key(line, environ, cwd)
    from .owner.dial import daemon_socket, get, nobody_owns, start_daemon

    socket_path = daemon_socket(data_dir)
    if socket_path is None and nobody_owns(data_dir):
        socket_path = start_daemon(data_dir, {"argv": _daemon_argv(line), "keys": [key]}, environ)
    if socket_path is None:
        return None
    tty = sys.stdout.isatty()
    if "--json" in line.output:
        render = "json"
    elif line.output & _FILES:
        render = "files0" if line.output & {"-0", "--null"} else "files"
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


def _daemon_argv(line: DaemonLine) -> list[str]:
    """The daemon's own settings options, from this command line's (`daemon run` reads them
    from its stdin: a `--chroma-token` never shows in `ps`)."""
    argv: list[str] = []
    for name, value in line.store:
        argv += [name] if name == "--allow-root-slash" else [f"{name}={value}"]
    return argv


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
    return daemon_key(line, environ, os.getcwd())


__all__ = [
    "daemon_key",
    "daemon_recorder_key",
    "daemon_search",
    "parse_daemon_search",
    "parse_search",
    "quick_search",
    "search_key",
    "search_recorder_key",
]
