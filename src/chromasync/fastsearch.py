"""The console script's keyword-search fast path: `search QUERY --mode keyword` from SQLite.

A keyword search needs neither chromadb nor the model, yet the full CLI imports both, and
click, rich and pydantic, before it reads the index. `fastpath.main` calls `quick_search`
first; it answers when:

1. the command line is `search QUERY --mode keyword` with only the options of `cmdline`'s
   `search` table (any other option, `--group-by`, `--rerank`, `--help` or a second
   argument goes on), and its output is `--json` or not a terminal (the CLI draws a
   terminal's with rich);
2. `CHROMASYNC_NO_FASTPATH` is unset or empty;
3. a full run of the same command line with any query recorded what it resolved
   (`retrieve.quick`), and nothing that depends on changed: no writer took the data dir's
   lock since, the state file and config files are as recorded, no service owns the data
   dir (its searches go through its socket, by the CLI).

Otherwise the CLI runs the search, and records a snapshot for the next call when it may.
The output is the full path's: `--json` byte for byte, else `results.plain_lines`.

Any other `search` goes to the data dir's warm daemon when one runs (`daemon_search`): the
command line, folder and environment are sent, and the daemon runs the CLI's own `search`
on them (`cli.daemon.run_line`), or says they are not its own and the CLI runs here.
"""

from __future__ import annotations

import os
import sys

from .cmdline import OFF_ENV, SETTINGS, Line, parse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

QUERY_MARK = "\0query"


class SearchLine:
    """An eligible `search` command line: the query, its position, options by name."""

    __slots__ = ("as_json", "line", "query", "query_at")

    def __init__(self, line: Line, query_at: int) -> None:
        self.line = line
        self.query_at = query_at
        self.query = line.argv[query_at]
        self.as_json = line.given("--json")


def parse_search(argv: Sequence[str], environ: Mapping[str, str]) -> SearchLine | None:
    """The command line as a fast-path `search`, or None when the CLI must run it."""
    if not argv or argv[0] != "search" or environ.get(OFF_ENV):
        return None
    line = parse(argv)
    if line is None:
        return None  # --group-by, --files, --chroma-token...: the daemon or the CLI
    arguments = line.arguments
    if len(arguments) != 1 or line.options.get("--mode") != "keyword":
        return None  # no query, or a second argument: the CLI says what is wrong
    from .retrieve.options import QUERY  # loaded already: `cmdline`'s search table reads it

    if len(arguments[0][1]) > (QUERY.max_chars or 0):
        return None  # over the query's bound: the CLI says so
    return SearchLine(line, arguments[0][0])


def search_key(line: SearchLine, environ: Mapping[str, str], cwd: str) -> str:
    """What a keyword search resolves besides its query depends on (`cmdline.line_key`):
    the command line with the query left out, the folder, the environment, the config."""
    argv = list(line.line.argv)
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

#: What the client sends of its environment besides `CHROMASYNC_*`: what settings read
#: (`HOME`, `CHROMA_API_KEY`) and what rich reads to draw for a terminal.
_SENT = frozenset(
    {"HOME", "CHROMA_API_KEY", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "COLUMNS"}
    | {"LINES", "TTY_COMPATIBLE", "TTY_INTERACTIVE"}
)
#: `search`'s settings options: a command line with one of them (but `--data-dir` or
#: `--config`, passed on as `daemon run`'s flags) starts no daemon here, the CLI does
#: (`tests/unit/test_cmdline.py` checks the list against click's `search`).
EARLY = {"--data-dir": "data_dir", "--config": "config_path"}
LATE = frozenset(SETTINGS) - set(EARLY) | {
    "--embed-option",
    "--chroma-token",
    "--allow-root-slash",
    "--rerank",
}


def daemon_search(argv: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """Answer a `search` through the data dir's warm daemon, which runs the command line
    itself: the exit code, or None for the CLI (no daemon, `--no-daemon`, not the daemon's
    settings, anything but a clean answer: the CLI does all of those)."""
    from .owner.dial import daemon_off, daemon_socket, nobody_owns, post, start_daemon

    if argv[:1] != ["search"] or "--no-daemon" in argv or daemon_off(environ):
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    from .datadir import config_bytes, guess_from

    named = _named(argv)
    data_dir = guess_from(named, environ, cwd, config_bytes(named, environ, cwd))
    if data_dir is None:
        return None
    socket_path = daemon_socket(data_dir)
    if socket_path is None and nobody_owns(data_dir) and _starts_here(argv):
        # the first search starts it before click loads; of other settings, it says "not
        # mine" below and the CLI replaces it (`owner.daemon.ensure`)
        socket_path = start_daemon(data_dir, {EARLY[k]: v for k, v in named.items()})
    if socket_path is None:
        return None
    env = {k: v for k, v in environ.items() if k.startswith("CHROMASYNC_") or k in _SENT}
    for fd in (0, 1, 2):  # rich's own order: the first terminal's width, unless COLUMNS
        if "COLUMNS" in env:
            break
        try:  # noqa: SIM105 - contextlib costs the console script ~10 ms to import
            env["COLUMNS"] = str(os.get_terminal_size(fd).columns)
        except (OSError, ValueError):
            pass
    tty = [sys.stdout.isatty(), sys.stderr.isatty()]
    body = {"argv": list(argv), "cwd": cwd, "env": env, "tty": tty}
    reply = post(socket_path, "/daemon/run", body, environ.get("CHROMASYNC_API_TOKEN"))
    if reply is None:
        return None
    size, _, rest = reply.partition(b"\n")  # `rest.add_run_route`: len(stderr), stderr, stdout
    if not size.isdigit() or int(size) > len(rest):
        return None
    err = rest[: int(size)].decode("utf-8", "surrogatepass")
    out = rest[int(size) :].decode("utf-8", "surrogatepass")
    sys.stderr.write(err)
    sys.stderr.flush()
    sys.stdout.write(out)
    sys.stdout.flush()
    return 0


def _starts_here(argv: Sequence[str]) -> bool:
    """No settings option but `EARLY`'s before `--` (the CLI starts the daemon of those)."""
    for arg in argv:
        if arg == "--":
            break
        if arg.partition("=")[0] in LATE:
            return False
    return True


def _named(argv: Sequence[str]) -> dict[str, str]:
    """`--data-dir` and `--config` as given, to find the daemon (a wrong guess only finds
    none, or one whose settings differ: it says so and the CLI runs the search)."""
    found: dict[str, str] = {}
    for index, arg in enumerate(argv):
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        if name in ("--data-dir", "--config") and (eq or index + 1 < len(argv)):
            found[name] = value if eq else argv[index + 1]
    return found


def search_recorder_key(argv: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The snapshot key of the process's own command line, when it is eligible."""
    line = parse_search(argv, environ)
    if line is None:
        return None
    return search_key(line, environ, os.getcwd())


__all__ = [
    "daemon_search",
    "parse_search",
    "quick_search",
    "search_key",
    "search_recorder_key",
]
