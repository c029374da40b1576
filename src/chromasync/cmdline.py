"""The console script's fast paths' command line, read without click, and their one key.

The console script answers two command lines from a snapshot before it imports click
(`fastpath`): an unchanged re-run of `ingest`, and a `search --mode keyword`
(`fastsearch`). Both read the command line here, with one parser and one table per command
(`INGEST`, `SEARCH`), and name what their answer depends on with one key (`line_key`):

* A table lists the options a snapshot's answer holds for, each with its spellings and
  whether it takes a value. Any other option (`--help`, `--rerank`, `--dry-run`...), a flag
  given a value or a value missing sends the command line to the CLI, which says what is
  wrong. `tests/unit/test_cmdline.py` walks click's commands and fails when a table
  disagrees with click.
* The key is a digest of the purpose, this code (version, chunking version, location), the
  command line (its whole argv, or with the query left out), the folder, the `CHROMASYNC_*`
  environment and `HOME` (secrets only as their digest; the switches
  `CHROMASYNC_NO_FASTPATH` and `CHROMASYNC_NO_DAEMON` left out), and the bytes of the config
  file the command line reads, so an edited `chromasync.yaml` makes another key.

(A `search` through the warm daemon needs none of this: the daemon reads the command line
with click itself, `cli.daemon.run_line`.) Standard library only (the built-in hash,
`marshal`), the base's `datadir` and `retrieve.options` (which imports nothing).
"""

from __future__ import annotations

import marshal
import os

from . import __version__
from .datadir import config_bytes, config_path, guess_from
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
    from collections.abc import Iterable, Mapping, Sequence

OFF_ENV = "CHROMASYNC_NO_FASTPATH"
DAEMON_OFF_ENV = "CHROMASYNC_NO_DAEMON"
_SWITCHES = frozenset({OFF_ENV, DAEMON_OFF_ENV})
_SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD")


class Option:
    """One option a fast path takes: its spellings, and whether it takes a value."""

    __slots__ = ("spellings", "value")

    def __init__(self, spellings: tuple[str, ...], value: bool) -> None:
        self.spellings = spellings
        self.value = value


def _table(options: Iterable[Option]) -> dict[str, Option]:
    return {spelling: option for option in options for spelling in option.spellings}


def _values(*names: str) -> list[Option]:
    return [Option((name,), True) for name in names]


#: Settings options of both commands (which store, model and config).
SETTINGS = (
    *("--data-dir", "--provider", "--model", "--embedding-url", "--chroma-url", "--tenant"),
    *("--database", "--config", "--sources-file"),
)

#: `ingest` options with which a re-run of the same command line over the same tree is a
#: no-op (settings and output only). Anything else (--dry-run, --checksum, --reembed,
#: --limit, --chroma-token, --embed-option...) goes to the CLI.
INGEST: dict[str, Option] = _table(
    [
        *_values(*SETTINGS, "--collection", "--kind", "--include", "--exclude"),
        # the repository indexer's flags (issue 29): settings of the walk and writes
        *_values("--include-extension", "--exclude-extension", "--encoding", "--chunk-size"),
        *_values("--batch-size", "--retry-attempts", "--identity", "--commit-sha"),
        Option(("--source", "-s"), True),
        *(Option((flag,), False) for flag in ("--no-gitignore", "--allow-root-slash", "--once")),
        Option(("--json",), False),
        Option(("--quiet", "-q"), False),
    ]
)


#: Search options the keyword snapshot answers for (by `retrieve.options` name: what
#: `retrieve.quick` records); any other, and any option added later, goes to the CLI.
_KEYWORD = frozenset(
    {
        *("all_collections", "mode", "k", "sources", "where", "where_json", "tags"),
        *("tags_all", "after", "before", "date_fields", "paths", "phrases", "matches"),
        *("collections", "per_doc", "sort", "rerank"),
    }
)


def _search() -> dict[str, Option]:
    """`search` options the keyword snapshot answers for: the settings, the request's
    (`retrieve.options.cli_flags`, the one declaration of every search option) that
    `_KEYWORD` names, and the output's."""
    from .retrieve.options import cli_flags  # the ingest fast path never loads it

    return _table(
        [
            *_values(*SETTINGS),
            Option(("--allow-root-slash",), False),
            *(Option((f,), value) for f, opt, value in cli_flags() if opt.name in _KEYWORD),
            Option(("--json",), False),
            Option(("--no-daemon",), False),  # the snapshot needs no daemon either
        ]
    )


_SEARCH: list[dict[str, Option]] = []


def table_of(command: str) -> dict[str, Option] | None:
    """The table of a command word (`search`'s made on first use), None for another."""
    if command == "ingest":
        return INGEST
    if command == "search":
        if not _SEARCH:
            _SEARCH.append(_search())
        return _SEARCH[0]
    return None


class Line:
    """A command line as a fast path reads it: (index, option, value) for each option given
    (value None for a flag; option "" for an argument), in order."""

    __slots__ = ("_config", "argv", "items")

    def __init__(self, argv: Sequence[str], items: list[tuple[int, str, str | None]]) -> None:
        self.argv = tuple(argv)
        self.items = items
        self._config: tuple[str, bytes | None] | None = None

    @property
    def arguments(self) -> list[tuple[int, str]]:
        return [(index, str(value)) for index, name, value in self.items if not name]

    @property
    def options(self) -> dict[str, str]:
        """Each option given a value, by spelling (the last of each wins)."""
        return {name: value for _i, name, value in self.items if name and value is not None}

    def given(self, spelling: str) -> bool:
        return any(name == spelling for _i, name, _value in self.items)

    def config(self, environ: Mapping[str, str], cwd: str) -> bytes | None:
        """The bytes of the config file this command line reads (read once per path)."""
        path = config_path(self.options, environ, cwd)[0]
        if self._config is None or self._config[0] != path:
            self._config = (path, config_bytes(self.options, environ, cwd))
        return self._config[1]

    def data_dir(self, environ: Mapping[str, str], cwd: str) -> str | None:
        """Where its data dir most likely is (`datadir.guess`: no config file parser)."""
        return guess_from(self.options, environ, cwd, self.config(environ, cwd))

    def key(self, purpose: str, material: object, environ: Mapping[str, str], cwd: str) -> str:
        """`line_key` of this command line, with its config file's bytes."""
        return line_key(purpose, material, environ, cwd, self.config(environ, cwd))


def parse(argv: Sequence[str]) -> Line | None:
    """`argv` (the command word first) read with its command's table, or None when the CLI
    must run it: another command, an option the table lacks, a flag given a value (`--json=1`),
    a value missing at the end, or `-` (no folder, no query: the CLI says so)."""
    table = table_of(argv[0]) if argv else None
    if table is None:
        return None
    items: list[tuple[int, str, str | None]] = []
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg == "-":
            return None
        if arg.startswith("-"):
            name, eq, value = arg.partition("=")
            option = table.get(name)
            if option is None or (eq and not option.value):
                return None  # --help, --rerank, --, anything unknown; --json=1
            if not option.value:
                items.append((index, name, None))
            else:
                if not eq:
                    index += 1
                    if index == len(argv):
                        return None
                    value = argv[index]
                items.append((index, name, value))
        else:
            items.append((index, "", arg))
        index += 1
    return Line(argv, items)


def line_key(
    purpose: str,
    material: object,
    environ: Mapping[str, str],
    cwd: str,
    config: bytes | None,
) -> str:
    """The one key of a fast path's answer (hex digest; see the module docstring): what it
    depends on besides the files it checks itself."""
    env = sorted(
        (name, _secret_digest(value) if any(w in name for w in _SECRET_WORDS) else value)
        for name, value in environ.items()
        if (name.startswith("CHROMASYNC_") and name not in _SWITCHES) or name == "HOME"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    digest = None if config is None else sha256(config).hexdigest()
    body = (purpose, __version__, CHUNKING_VERSION, here, material, cwd, tuple(env), digest)
    return str(sha256(marshal.dumps(body, 2)).hexdigest())  # type: ignore[arg-type]


def _secret_digest(value: str) -> str:
    return "sha256:" + str(sha256(value.encode("utf-8", "surrogatepass")).hexdigest())


__all__ = [
    "DAEMON_OFF_ENV",
    "INGEST",
    "OFF_ENV",
    "SETTINGS",
    "Line",
    "Option",
    "line_key",
    "parse",
    "sha256",
    "table_of",
]
