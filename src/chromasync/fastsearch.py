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
from .datadir import guess

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
    options: dict[str, str] = {}
    as_json = False
    query_at = -1
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg.startswith("-") and arg != "-":
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
                return None  # --help, --group-by, --rerank, --, anything unknown
        elif query_at < 0:
            query_at = index
        else:
            return None  # a second argument: the CLI says what is wrong
        index += 1
    if query_at < 0 or options.get("--mode") != "keyword":
        return None
    return SearchLine(argv, query_at, options, as_json)


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


def search_recorder_key(argv: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The snapshot key of the process's own command line, when it is eligible."""
    line = parse_search(argv, environ)
    if line is None:
        return None
    return search_key(line, environ, os.getcwd())


__all__ = ["parse_search", "quick_search", "search_key", "search_recorder_key", "sha256"]
