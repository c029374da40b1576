"""The `chromasync` command line: parse flags, call `api`, render the result.

Results go to stdout (`--json` for machines), progress and messages to stderr. Errors map
to exit codes in one table (`EXIT_CODES`): 1 for a failure, 2 for bad usage.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import __version__, api
from .errors import ChromasyncError, ConfigError, NotFound
from .ingest import IngestOptions
from .records import IngestSummary

F = TypeVar("F", bound=Callable[..., Any])

#: Error class -> exit code. Click's own usage errors exit with 2 as well.
EXIT_CODES: dict[type[ChromasyncError], int] = {ConfigError: 2, NotFound: 1, ChromasyncError: 1}


def _exit_code(exc: ChromasyncError) -> int:
    for cls in type(exc).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return 1


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except ChromasyncError as exc:
        _stderr().print(f"[bold red]error:[/] {escape(_safe(str(exc)))}")
        sys.exit(_exit_code(exc))


def _safe(text: str) -> str:
    """Escape control characters so file names cannot drive the terminal."""
    return "".join(c if c.isprintable() or c in "\n" else repr(c)[1:-1] for c in text)


def store_options(func: F | None = None, *, many_collections: bool = False) -> Any:
    """The options every command that touches the store shares.

    With `many_collections`, `--collection` may be repeated (search, similar, eval).
    """
    collection_help = "Chroma collection [env CHROMASYNC_COLLECTION; default chromasync]."
    decorators = [
        click.option(
            "--data-dir",
            type=click.Path(file_okay=False),
            help="State and embedded store folder [env CHROMASYNC_DATA_DIR; ./.chromasync].",
        ),
        click.option(
            "--collection",
            multiple=many_collections,
            help=collection_help + (" Repeatable." if many_collections else ""),
        ),
        click.option(
            "--provider",
            help="Embedding provider: local, hash [env CHROMASYNC_EMBEDDING_PROVIDER].",
        ),
        click.option(
            "--model", help="Model for the provider (local: a sentence-transformers folder)."
        ),
        click.option(
            "--chroma-url",
            help="Chroma server URL instead of the embedded store [env CHROMASYNC_CHROMA_URL].",
        ),
    ]

    def apply(f: F) -> F:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return apply(func) if func is not None else apply


def _settings(**flags: Any) -> api.Settings:
    known = {"data_dir", "collection", "provider", "model", "chroma_url", "rerank_model"}
    values = {k: v for k, v in flags.items() if k in known}
    if isinstance(values.get("collection"), tuple):
        names = values["collection"]
        values["collection"] = names[0] if names else None
    return api.resolve_settings(values, os.environ)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="chromasync")
def main() -> None:
    """Keep a folder of text files indexed in ChromaDB, cheaply and exactly, and search it."""


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@store_options
@click.option("--source", "label", help="Source label (default: the folder's name); one PATH only.")
@click.option("--include", multiple=True, help="Only paths matching this git-wildmatch pattern.")
@click.option("--exclude", multiple=True, help="Skip paths matching this git-wildmatch pattern.")
@click.option("--no-gitignore", is_flag=True, help="Do not honour .gitignore files.")
@click.option("--dry-run", is_flag=True, help="Compute the plan and figures; write nothing.")
@click.option(
    "--checksum", is_flag=True, help="Hash every file instead of trusting size and mtime."
)
@click.option("--reembed", is_flag=True, help="Regenerate every vector for a new model.")
@click.option("--allow-mass-delete", is_flag=True, help="Allow deleting most of a source.")
@click.option("--wait", is_flag=True, help="Wait for another ingest of the data dir to finish.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def ingest(
    paths: Sequence[str],
    label: str | None,
    include: Sequence[str],
    exclude: Sequence[str],
    no_gitignore: bool,
    dry_run: bool,
    checksum: bool,
    reembed: bool,
    allow_mass_delete: bool,
    wait: bool,
    as_json: bool,
    quiet: bool,
    **flags: Any,
) -> None:
    """Index the text files under each PATH (one source per PATH)."""
    if label and len(paths) > 1:
        raise click.UsageError("--source names one source; give one PATH with it")
    with _errors():
        settings = _settings(**flags)
        specs = [
            api.source_for(
                p,
                label,
                include=tuple(include),
                exclude=tuple(exclude),
                use_gitignore=not no_gitignore,
            )
            for p in paths
        ]
        options = IngestOptions(
            dry_run=dry_run,
            checksum=checksum,
            reembed=reembed,
            allow_mass_delete=allow_mass_delete,
            max_file_bytes=settings.max_file_bytes,
        )
        show = not quiet and not as_json and sys.stderr.isatty()
        with _progress(show) as progress:
            summaries = api.ingest(specs, settings, options, progress=progress, wait=wait)
    if as_json:
        data = [s.as_json() for s in summaries]
        click.echo(json.dumps(data[0] if len(data) == 1 else data, indent=2))
    else:
        _print_summaries(summaries)


@contextmanager
def _progress(show: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    if not show:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=_stderr(),
        transient=True,
    ) as bar:
        tasks: dict[str, Any] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                label = {"read": "Reading files", "write": "Embedding and writing"}.get(
                    phase, phase
                )
                tasks[phase] = bar.add_task(label, total=total)
            bar.update(tasks[phase], completed=done, total=total)

        yield update


def _print_summaries(summaries: Sequence[IngestSummary]) -> None:
    console = Console(highlight=False)
    table = Table(
        title="chromasync ingest" + (" (dry run)" if summaries and summaries[0].dry_run else "")
    )
    for column in (
        "source",
        "seen",
        "new",
        "updated",
        "unchanged",
        "deleted",
        "skipped",
        "chunks",
        "embedded",
        "reused",
        "time",
    ):
        table.add_column(column, justify="left" if column == "source" else "right")
    for s in summaries:
        table.add_row(
            escape(s.source),
            str(s.files_seen),
            str(s.files_new),
            str(s.files_updated),
            str(s.files_unchanged),
            str(s.files_deleted),
            str(sum(s.files_skipped.values())),
            str(s.chunks_total),
            str(s.chunks_embedded),
            str(s.chunks_reused),
            f"{s.duration_ms / 1000:.2f}s (embed {s.embed_ms / 1000:.2f}s)",
        )
    console.print(table)
    for s in summaries:
        if s.files_skipped:
            reasons = ", ".join(f"{r}: {n}" for r, n in sorted(s.files_skipped.items()))
            console.print(f"[dim]{escape(s.source)} skipped by reason: {escape(reasons)}[/]")


@main.command()
@store_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def status(as_json: bool, **flags: Any) -> None:
    """Show each source: files, chunks, model and last run."""
    with _errors():
        rows = api.status(_settings(**flags))
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(r) for r in rows], indent=2))
        return
    table = Table(title="chromasync status")
    for column in ("collection", "source", "files", "chunks", "model", "state", "last run"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            escape(r.collection),
            escape(r.source),
            str(r.files),
            str(r.chunks),
            r.embedding_model,
            r.status,
            r.last_outcome or "-",
        )
    Console(highlight=False).print(table)


@main.group()
def config() -> None:
    """Inspect the resolved configuration."""


@config.command("show")
@store_options
def config_show(**flags: Any) -> None:
    """Print each setting with where its value came from (secrets masked)."""
    with _errors():
        settings = _settings(**flags)
    table = Table(title="chromasync config")
    for column in ("setting", "value", "from"):
        table.add_column(column)
    for name, value, origin in settings.shown():
        table.add_row(name, escape(value), origin)
    Console(highlight=False).print(table)


# The retrieval commands (search, similar, eval) live beside this module for size; importing
# them registers them on `main`.
from . import cli_search  # noqa: E402, F401

if __name__ == "__main__":  # pragma: no cover
    main()
