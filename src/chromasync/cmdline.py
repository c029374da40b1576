"""The console script's front door: command lines read without click, and their one key.

The console script answers some command lines before it imports click (`fastpath`): an
unchanged re-run of `ingest`, a `search --mode keyword` from its SQLite snapshot, and any
other `search` through the warm daemon's socket (`fastsearch`). All three read the command
line here, with one parser and one table per command (`INGEST`, `SEARCH`), and name what
their answer depends on with one key scheme (`line_key`):

* A table lists the options a fast path may take, each with its spellings, whether it takes
  a value, and its part: `settings` (which store, model and config: the daemon's key),
  `request` (a search parameter, by its name on the daemon's `/search`: made from
  `retrieve.options`, the one declaration of every search option) or `output`. Any
  option not in the table (`--help`, `--rerank`, `--dry-run`...), a flag given a value or a
  value missing sends the command line to the CLI, which says what is wrong.
  `tests/unit/test_cmdline.py` walks click's commands and fails when a table disagrees with
  click (a spelling click lacks, a flag click reads as taking a value, or the other way).
* The key is a digest of the purpose, this code (version, chunking version, location), the
  command line's material (its whole argv, or with the query left out, or its settings
  options), the folder, the `CHROMASYNC_*` environment and `HOME` (secrets only as their
  digest; the two switches `CHROMASYNC_NO_FASTPATH` and `CHROMASYNC_NO_DAEMON` left out),
  and the bytes of the config file the command line reads, so an edited `chromasync.yaml`
  makes another key: a snapshot or a daemon of the old file is not used for the new one.

Standard library only (the built-in hash, `marshal`), the base's `datadir` and
`retrieve.options` (which imports nothing).
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

SETTINGS = "settings"
REQUEST = "request"
OUTPUT = "output"


class Option:
    """One option a fast path takes: its spellings, whether it takes a value, its part, and
    for a search request the daemon's parameter (a flag: the parameter and its value)."""

    __slots__ = ("keyword", "param", "part", "spellings", "value")

    def __init__(
        self,
        spellings: tuple[str, ...],
        value: bool,
        part: str,
        param: str | tuple[str, str] | None = None,
        keyword: bool = True,
    ) -> None:
        self.spellings = spellings
        self.value = value
        self.part = part
        self.param = param
        #: `search`: the keyword fast path's snapshot may answer a command line with it
        self.keyword = keyword


def _table(options: Iterable[Option]) -> dict[str, Option]:
    return {spelling: option for option in options for spelling in option.spellings}


def _settings(value: bool, *spellings: str, keyword: bool = True) -> Option:
    return Option(spellings, value, SETTINGS, keyword=keyword)


#: `ingest` options with which a re-run of the same command line over the same tree is a
#: no-op (settings and output only). Anything else (--dry-run, --checksum, --reembed,
#: --limit, --chroma-token, --embed-option...) goes to the CLI.
INGEST: dict[str, Option] = _table(
    [
        *(
            _settings(True, name)
            for name in (
                "--data-dir",
                "--collection",
                "--provider",
                "--model",
                "--kind",
                "--include",
                "--exclude",
                "--config",
                "--sources-file",
                "--embedding-url",
                "--chroma-url",
                "--tenant",
                "--database",
                # the repository indexer's flags (issue 29): settings of the walk and writes
                "--include-extension",
                "--exclude-extension",
                "--encoding",
                "--chunk-size",
                "--batch-size",
                "--retry-attempts",
                "--identity",
                "--commit-sha",
            )
        ),
        _settings(True, "--source", "-s"),
        _settings(False, "--no-gitignore"),
        _settings(False, "--allow-root-slash"),
        _settings(False, "--once"),  # the default mode, named for cron lines
        Option(("--json",), False, OUTPUT),
        Option(("--quiet", "-q"), False, OUTPUT),
    ]
)


#: Search options the keyword fast path's snapshot answers (by `retrieve.options` name: what
#: `retrieve.quick` records); any other, and any option added later, the daemon or the CLI.
_KEYWORD = frozenset(
    {
        *("all_collections", "mode", "k", "sources", "where", "where_json", "tags"),
        *("tags_all", "after", "before", "date_fields", "paths", "phrases", "matches"),
        *("collections", "per_doc", "sort", "rerank"),
    }
)


def _requests() -> list[Option]:
    """The request's options, each CLI flag of `retrieve.options.OPTIONS` (the one
    declaration of every search option): a value's flag sends its text under the option's
    query parameter; a true/false option's flag sends "true", its negative "false"."""
    from .retrieve.options import cli_flags  # the ingest fast path never loads it

    out = []
    for flag, declared, takes_value in cli_flags():
        keyword = declared.name in _KEYWORD
        if takes_value:
            out.append(Option((flag,), True, REQUEST, declared.param, keyword))
        else:
            value = "false" if flag == declared.negative else "true"
            out.append(Option((flag,), False, REQUEST, (declared.param, value), keyword))
    return out


def _search() -> dict[str, Option]:
    """`search` options the daemon's client sends (settings: in its key and the daemon's own
    command line; request: as `/search` parameters, from `retrieve.options`; output: how the
    answer is drawn); those with `keyword` the keyword fast path's snapshot covers too."""
    return _table(
        [
            *(
                _settings(True, name)
                for name in (
                    "--data-dir",
                    "--provider",
                    "--model",
                    "--embedding-url",
                    "--chroma-url",
                    "--tenant",
                    "--database",
                    "--config",
                    "--sources-file",
                )
            ),
            _settings(True, "--embed-option", keyword=False),
            _settings(True, "--chroma-token", keyword=False),
            _settings(False, "--allow-root-slash"),
            *_requests(),
            Option(("--json",), False, OUTPUT),
            Option(("--no-daemon",), False, OUTPUT),  # the snapshot needs no daemon either
            Option(("--files",), False, OUTPUT, keyword=False),
            Option(("-0", "--null"), False, OUTPUT, keyword=False),
            Option(("--explain",), False, OUTPUT, keyword=False),
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

    __slots__ = ("_config", "argv", "command", "items")

    def __init__(self, argv: Sequence[str], items: list[tuple[int, str, str | None]]) -> None:
        self.argv = tuple(argv)
        self.command = argv[0]
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

    def table(self) -> dict[str, Option]:
        table = table_of(self.command)
        assert table is not None
        return table

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
    "OUTPUT",
    "REQUEST",
    "SETTINGS",
    "Line",
    "Option",
    "line_key",
    "parse",
    "sha256",
    "table_of",
]
