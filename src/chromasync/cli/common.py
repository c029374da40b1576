"""What every command of the CLI shares: store options, settings, the error table, output.

Results go to stdout (`--json` for machines), progress and messages to stderr. Errors map
to exit codes in one table (`EXIT_CODES`): 1 for a failure, 2 for bad usage.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .. import api
from ..config.resolve import CONFIG_ENV, CONFIG_FILE_NAME
from ..config.settings import SETTINGS
from ..config.spec import Setting
from ..corpus.listing import printable
from ..errors import SURFACES, ChromasyncError, ConfigError, lookup, shown_url
from ..owner.dial import DAEMON_NOTICE
from ..retrieve.options import BY_NAME, OPTIONS, Option

F = TypeVar("F", bound=Callable[..., Any])

#: Error class -> exit code (a column of `errors.SURFACES`; the most specific class wins).
EXIT_CODES: dict[type[ChromasyncError], int] = {c: row[0] for c, row in SURFACES.items()}


def import_extra(module: str, what: str, extra: str, requires: str) -> Any:
    """`chromasync.<module>`, whose dependency `requires` (a package it may import late)
    comes with an extra; a `ConfigError` naming `what` and the extra when it is missing."""
    try:
        if importlib.util.find_spec(requires) is None:
            raise ModuleNotFoundError(name=requires)
        return importlib.import_module(f"chromasync.{module}")
    except ImportError as exc:
        if not isinstance(exc, ModuleNotFoundError):  # installed, but broken: not missing
            raise ConfigError(f"{what} is installed but failed to import: {exc}") from exc
        raise ConfigError(
            f"this command needs {what} ({exc.name}); install it with: "
            f"pip install 'chromasync[{extra}]'"
        ) from exc


def exit_code(exc: ChromasyncError) -> int:
    return lookup(EXIT_CODES, exc)


#: The environment and folder of the command line being run, when it is not this process's:
#: the search daemon runs a client's (`cli.daemon`). Settings and consoles read them here.
CALLER: ContextVar[tuple[Mapping[str, str], Path] | None] = ContextVar("caller", default=None)


def caller() -> tuple[Mapping[str, str], Path]:
    """The environment and folder of the command line being run (`CALLER`, else ours)."""
    here = CALLER.get()
    return here if here is not None else (os.environ, Path.cwd())


def out_console(**options: Any) -> Console:
    """A rich console for the command line being run (its environment: `caller`)."""
    here = CALLER.get()
    return Console(highlight=False, _environ=None if here is None else here[0], **options)


def stderr_console() -> Console:
    return out_console(stderr=True)


@contextmanager
def reported_errors() -> Iterator[None]:
    try:
        yield
    except ChromasyncError as exc:
        stderr_console().print(
            f"[bold red]error:[/] {escape(safe(shown_url(str(exc)), lines=True))}", soft_wrap=True
        )
        sys.exit(exit_code(exc))


safe = printable  # control characters escaped: file names cannot drive the terminal


class _LogLine(logging.Formatter):
    """A log record as printed: its message on one line, control characters escaped (a file
    name forges no line and drives no terminal), URLs without user info; a traceback below."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return safe(shown_url(super().formatMessage(record)))

    def formatException(self, ei: Any) -> str:
        return shown_url(super().formatException(ei))


def print_logs_safely() -> None:
    """Every log line this process prints (Python's last-resort handler: stderr, which is
    `daemon.log` for the daemon) goes through `_LogLine`."""
    if logging.lastResort is not None:
        logging.lastResort.setFormatter(_LogLine())


def print_table(console: Console, table: Table) -> None:
    """`table` as a grid when it fits; else (a narrow terminal, or stdout not a terminal)
    one `column: value` block per row, so that no cell is cut to "colle…"."""
    from rich.measure import Measurement

    needed = Measurement.get(console, console.options.update_width(10_000), table).maximum
    if console.is_terminal and needed <= console.width:
        console.print(table)
        return
    if table.title:
        console.print(table.title, style="bold")
    headers = [str(column.header) for column in table.columns]
    cells = [list(column.cells) for column in table.columns]
    for row in range(table.row_count):
        if row:
            console.print()
        for header, column in zip(headers, cells, strict=True):
            value = column[row] if row < len(column) else ""
            line = Text.assemble((f"{header}: ", "dim"))
            line.append_text(value if isinstance(value, Text) else Text.from_markup(str(value)))
            console.print(line, soft_wrap=True)


#: The parameters of the options `setting_option` makes: settings (`settings_from_flags`).
SETTING_FLAGS: set[str] = set()
_SETTINGS = {spec.name: spec for spec in SETTINGS}


def setting_option(name: str, flag: str | None = None, **attrs: Any) -> Callable[[F], F]:
    """The click option of the setting `name`, made from its one declaration (`config.spec`):
    the flag (`--name` unless `flag`), the bound as click's type, the help with the
    environment variable and the default. With `param`, the command reads the value itself
    (it is no setting flag); `more` is added to the help; the rest goes to `click.option`."""
    spec = _SETTINGS[name]
    param = attrs.pop("param", name)
    if param == name:
        SETTING_FLAGS.add(name)
    attrs.setdefault("type", _click_type(spec))
    help = _with_env(spec.help + attrs.pop("more", ""), name)
    return click.option(flag or "--" + name.replace("_", "-"), param, help=help, **attrs)


def _with_env(help: str, name: str) -> str:
    """`help` ending with the environment variable(s) and default of the setting `name`."""
    spec = _SETTINGS[name]
    tail = "env " + " or ".join(spec.env)
    if spec.default not in (None, "") and not spec.secret:
        tail += f"; default: {spec.default}"
    return f"{help.rstrip('.')} [{tail}]."


def _click_type(spec: Setting | Option) -> Any:
    """A setting's or search option's bound as click's type (None: click's text)."""
    above = getattr(spec, "above", False)  # a search option's `low` is always allowed
    if spec.choices:
        return click.Choice(spec.choices)
    if spec.kind == "float":
        return click.FloatRange(spec.low, spec.high, min_open=above)
    if spec.kind == "int":
        low, high = (None if b is None else int(b) for b in (spec.low, spec.high))
        return click.IntRange(low, high, min_open=above)
    return None


def stacked(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """One decorator: `decorators` applied as if written one above the other."""

    def apply(func: F) -> F:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


#: `--llm-url` and `--llm-model`: the chat model of `ask` and `summarize`.
chat_options = stacked(
    setting_option("llm_url", metavar="URL"), setting_option("llm_model", metavar="NAME")
)


#: `--threshold` of `similar` and `suggest`: the request's own (else the setting's).
threshold_option = setting_option("duplicate_threshold", "--threshold", param="threshold")


def eval_options(default: str) -> Callable[[F], F]:
    """`--k` and `--mode` of `eval` and `model eval`; `default`: the modes measured without
    `--mode`, in words."""
    k = click.option(
        "--k",
        "k",
        default=10,
        show_default=True,
        type=click.IntRange(1, 100),
        help="Cut-off for nDCG@k and recall@k.",
    )
    mode = click.option(
        "--mode",
        "modes",
        multiple=True,
        type=click.Choice(BY_NAME["mode"].choices),
        help=f"Mode(s) to measure (repeatable; default: {default}).",
    )
    return stacked(k, mode)


#: `--config`: the config file (`config.resolve`), which is no setting.
config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help=f"Config file [env {CONFIG_ENV}; ./{CONFIG_FILE_NAME} if present].",
)
data_dir_option = setting_option("data_dir", type=click.Path(file_okay=False))


def store_options(func: F | None = None, *, many_collections: bool = False) -> Any:
    """The options every command that touches the store shares.

    With `many_collections`, `--collection` may be repeated (search, similar, eval).
    """
    apply = stacked(
        data_dir_option,
        setting_option(
            "collection", multiple=many_collections, more="; repeatable" * many_collections
        ),
        setting_option("provider"),
        setting_option("model"),
        setting_option("embedding_url"),
        click.option(
            "--embed-option",
            "embed_options",
            multiple=True,
            metavar="KEY=VALUE",
            help="A provider option (batch_size, max_tokens, backend, device, dimension...).",
        ),
        setting_option("chroma_url"),
        setting_option("chroma_token"),
        setting_option("tenant"),
        setting_option("database"),
        config_option,
        click.option(
            "--sources-file",
            type=click.Path(dir_okay=False),
            help="A Markdown file whose front matter lists sources (content_sources:).",
        ),
        click.option(
            "--allow-root-slash",
            is_flag=True,
            help="Allow a source whose path is the filesystem root '/'.",
        ),
    )
    return apply(func) if func is not None else apply


#: `search` and `ask` run through the warm daemon unless told not to (`owner.daemon`).
no_daemon_option = click.option(
    "--no-daemon",
    is_flag=True,
    help="Run in this process; do not start or use the search daemon [env CHROMASYNC_NO_DAEMON=1].",
)
#: The parameters `search_options` adds; `search_args` takes them out of a command's kwargs
#: (`--collection` is a store option: `store_options`).
SEARCH_PARAMS = (
    *(option.name for option in OPTIONS if option.name not in ("collections", "rerank")),
    "no_rerank",
)


def _click_option(option: Option) -> Callable[[F], F]:
    """The click option of a declared search option (`retrieve.options`)."""
    if option.kind == "bool":
        if option.flag is None:  # true by default, the flag turns it off (--no-rerank)
            assert option.negative is not None
            return click.option(option.negative, is_flag=True, help=option.help)
        if option.negative:
            return click.option(
                f"{option.flag}/{option.negative}",
                option.name,
                default=option.default,
                show_default=True,
                help=option.help,
            )
        return click.option(option.flag, option.name, is_flag=True, help=option.help)
    assert option.flag is not None
    shown = option.default is not None and not option.many
    return click.option(
        option.flag,
        option.name,
        type=_click_type(option),
        multiple=option.many,
        default=option.default if shown else None,
        show_default=shown,
        metavar=option.metavar,
        # `--date-field`'s default is the setting's
        help=_with_env(option.help, "date_fields") if option.name == "date_fields" else option.help,
    )


def search_options(func: F) -> F:
    """The retrieval options `search` and `ask` share: filters, ranking, grouping, each made
    from its declaration (`retrieve.options.OPTIONS`); `--rerank FOLDER` is the setting."""
    return stacked(
        *(_click_option(o) for o in OPTIONS if o.name not in ("collections", "rerank")),
        setting_option("rerank_model", "--rerank", metavar="FOLDER"),
        _click_option(BY_NAME["rerank"]),
    )(func)


def search_args(query: str, flags: dict[str, Any]) -> api.SearchArgs:
    """The `SearchArgs` of a command given `search_options` (taken out of `flags`; the
    store options, `--collection` included, stay there for `settings_from_flags`)."""
    given = {name: flags.pop(name) for name in SEARCH_PARAMS}
    no_rerank = given.pop("no_rerank")
    return api.SearchArgs.of(
        query,
        **given,
        collections=flags.get("collection"),
        rerank=not no_rerank,
    )


#: What `settings_from_flags` reads besides `SETTING_FLAGS`.
_FILE_FLAGS = frozenset({"embed_options", "config_path", "sources_file", "allow_root_slash"})
#: `ask`'s chat model: the daemon's searches do not depend on it (`owner.daemon`).
_CHAT_FLAGS = frozenset({"llm_url", "llm_model"})


def settings_from_flags(*, active_model: bool = True, **flags: Any) -> api.Settings:
    """The settings a command's flags resolve to; with `active_model`, the data dir's
    active model profile's (`config.models`)."""
    values = {k: v for k, v in flags.items() if k in SETTING_FLAGS}
    if isinstance(values.get("collection"), tuple):  # repeatable --collection: not a setting
        values.pop("collection")
    options = embed_options(flags.get("embed_options") or ())
    if options:
        values["provider_options"] = options
    environ, cwd = caller()
    return api.configure(
        values,
        environ,
        cwd,
        config=flags.get("config_path"),
        sources_file=flags.get("sources_file"),
        allow_root=bool(flags.get("allow_root_slash")),
        active_model=active_model,
    )


def daemon_flags(flags: dict[str, Any]) -> dict[str, Any]:
    """The flags a command's search daemon needs to resolve the same settings (JSON-ready):
    every settings flag but the chat model's, not a search's repeatable `--collection`
    (the request's)."""
    keep = (SETTING_FLAGS | _FILE_FLAGS) - _CHAT_FLAGS
    out = {k: v for k, v in flags.items() if k in keep and v not in (None, (), [], False)}
    if isinstance(out.get("collection"), (tuple, list)):
        out.pop("collection")
    if "embed_options" in out:
        out["embed_options"] = list(out["embed_options"])
    return out


def starting_notice() -> None:
    """What a command says on stderr when it starts the search daemon."""
    stderr_console().print(f"[dim]{escape(DAEMON_NOTICE)}[/]")


def embed_options(pairs: Sequence[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--embed-option takes KEY=VALUE, got {pair!r}")
        options[key.strip()] = value.strip()
    return options


@contextmanager
def progress_bar(show: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A progress callback drawing bars on stderr (None when not `show`); the bars appear at
    the first report, so that a prompt before it (`ingest --reset`) has the terminal."""
    if not show:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=stderr_console(),
        transient=True,
    )
    tasks: dict[str, Any] = {}

    def update(phase: str, done: int, total: int) -> None:
        if not tasks:
            bar.start()
        if phase not in tasks:
            label = {"read": "Reading files", "write": "Embedding and writing"}.get(phase, phase)
            tasks[phase] = bar.add_task(label, total=total)
        bar.update(tasks[phase], completed=done, total=total)

    try:
        yield update
    finally:
        if tasks:
            bar.stop()


def when(ns: int | None) -> str:
    if not ns:
        return "never"
    import datetime as dt

    return dt.datetime.fromtimestamp(ns / 1e9).isoformat(timespec="seconds")
