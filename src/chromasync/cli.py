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
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import __version__, api, fastpath
from .config import CONFIG_ENV, CONFIG_FILE_NAME
from .errors import ChromasyncError, ConfigError, LockError, NotFound
from .ingest import IngestOptions
from .records import IngestSummary, SourceSpec, total_summary
from .snapshots import Recorder

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
        _stderr().print(f"[bold red]error:[/] {escape(_safe(str(exc)))}", soft_wrap=True)
        sys.exit(_exit_code(exc))


_safe = fastpath.printable  # control characters escaped: file names cannot drive the terminal


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
            help="Embedding provider: local, openai, server, hash "
            "[env CHROMASYNC_EMBEDDING_PROVIDER].",
        ),
        click.option(
            "--model", help="Model for the provider (local: a sentence-transformers folder)."
        ),
        click.option(
            "--embedding-url",
            help="openai provider: base URL of an OpenAI-compatible API, e.g. "
            "http://localhost:11434/v1 [env CHROMASYNC_EMBEDDING_URL].",
        ),
        click.option(
            "--embed-option",
            "embed_options",
            multiple=True,
            metavar="KEY=VALUE",
            help="A provider option (batch_size, max_tokens, backend, device, dimension...).",
        ),
        click.option(
            "--chroma-url",
            help="Chroma server instead of the embedded store: http(s)://HOST:PORT or "
            "chroma-cloud:// [env CHROMASYNC_CHROMA_URL].",
        ),
        click.option(
            "--chroma-token",
            help="Bearer token (Chroma Cloud: API key) for the server; prefer the environment "
            "[env CHROMASYNC_CHROMA_TOKEN; CHROMA_API_KEY for chroma-cloud://].",
        ),
        click.option("--tenant", help="Chroma tenant [env CHROMASYNC_CHROMA_TENANT]."),
        click.option("--database", help="Chroma database [env CHROMASYNC_CHROMA_DATABASE]."),
        click.option(
            "--config",
            "config_path",
            type=click.Path(dir_okay=False),
            help="Config file [env CHROMASYNC_CONFIG; ./chromasync.yaml if present].",
        ),
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
    ]

    def apply(f: F) -> F:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return apply(func) if func is not None else apply


def _settings(**flags: Any) -> api.Settings:
    known = {
        "data_dir",
        "collection",
        "provider",
        "model",
        "chroma_url",
        "chroma_token",
        "tenant",
        "database",
        "embedding_url",
        "rerank_model",
    }
    values = {k: v for k, v in flags.items() if k in known}
    if isinstance(values.get("collection"), tuple):  # repeatable --collection: not a setting
        values.pop("collection")
    options = _embed_options(flags.get("embed_options") or ())
    if options:
        values["provider_options"] = options
    return api.configure(
        values,
        os.environ,
        Path.cwd(),
        config=flags.get("config_path"),
        sources_file=flags.get("sources_file"),
        allow_root=bool(flags.get("allow_root_slash")),
    )


def _embed_options(pairs: Sequence[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--embed-option takes KEY=VALUE, got {pair!r}")
        options[key.strip()] = value.strip()
    return options


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="chromasync")
def main() -> None:
    """Keep a folder of text files indexed in ChromaDB, cheaply and exactly, and search it."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@store_options
@click.option(
    "--source",
    "-s",
    "labels",
    multiple=True,
    help="Without PATH: ingest only this configured source (repeatable). "
    "With one PATH: that source's label.",
)
@click.option("--kind", help="With PATH: the source kind (default notes).")
@click.option("--include", multiple=True, help="Only paths matching this git-wildmatch pattern.")
@click.option("--exclude", multiple=True, help="Skip paths matching this git-wildmatch pattern.")
@click.option("--no-gitignore", is_flag=True, help="Do not honour .gitignore files.")
@click.option("--limit", type=click.IntRange(1), help="Only the first N files of each source.")
@click.option("--gc-only", is_flag=True, help="Only delete records of files gone from disk.")
@click.option("--no-gc", is_flag=True, help="Do not delete records of files gone from disk.")
@click.option("--reset", is_flag=True, help="Drop and recreate the sources' collections first.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask before --reset.")
@click.option("--dry-run", is_flag=True, help="Compute the plan and figures; write nothing.")
@click.option(
    "--output-manifest",
    type=click.Path(dir_okay=False, writable=True),
    help="With --dry-run: write the desired records as JSON Lines to this file.",
)
@click.option(
    "--include-text", is_flag=True, help="With --output-manifest: include each chunk's text."
)
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
    labels: Sequence[str],
    kind: str | None,
    include: Sequence[str],
    exclude: Sequence[str],
    no_gitignore: bool,
    limit: int | None,
    gc_only: bool,
    no_gc: bool,
    reset: bool,
    yes: bool,
    dry_run: bool,
    output_manifest: str | None,
    include_text: bool,
    checksum: bool,
    reembed: bool,
    allow_mass_delete: bool,
    wait: bool,
    as_json: bool,
    quiet: bool,
    **flags: Any,
) -> None:
    """Index the text files under each PATH (one source per PATH), or, without PATH,
    every `include: true` source of the config file."""
    if paths and len(labels) > 1:
        raise click.UsageError("with PATH, --source names one source; give one PATH with it")
    if labels and len(paths) > 1:
        raise click.UsageError("--source names one source; give one PATH with it")
    if gc_only and no_gc:
        raise click.UsageError("--gc-only and --no-gc contradict each other")
    if output_manifest and not dry_run:
        raise click.UsageError("--output-manifest needs --dry-run")
    if include_text and not output_manifest:
        raise click.UsageError("--include-text needs --output-manifest")
    if reset and (dry_run or gc_only):
        raise click.UsageError("--reset cannot be combined with --dry-run or --gc-only")
    if not paths and (kind or include or exclude or no_gitignore):
        raise click.UsageError(
            "--kind, --include, --exclude and --no-gitignore apply to a PATH; "
            "set them per source in the config file"
        )
    with _errors():
        settings = _settings(**flags)
        recorder = _recorder(settings, flags.get("config_path"))
        options = api.default_options(
            settings,
            dry_run=dry_run,
            checksum=checksum,
            reembed=reembed,
            allow_mass_delete=allow_mass_delete,
            gc=not no_gc,
            gc_only=gc_only,
            limit=limit,
        )
        specs = []
        if paths:
            label = labels[0] if labels else None
            fields = {"kind": kind} if kind else {}
            specs = [
                api.source_for(
                    p,
                    label,
                    include=tuple(include),
                    exclude=tuple(exclude),
                    use_gitignore=not no_gitignore,
                    allow_root=bool(flags.get("allow_root_slash")),
                    **fields,
                )
                for p in paths
            ]
            collections = [api.collection_of(s, settings) for s in specs]
        else:
            entries = api.selected_sources(settings, labels)
            if not entries:
                where = settings.config_file.path if settings.config_file else None
                raise ConfigError(
                    "nothing to ingest: give a PATH, or declare sources with `include: true` "
                    + (
                        f"in {where}"
                        if where
                        else "in chromasync.yaml (see `chromasync sources add`)"
                    )
                )
            collections = [settings.collection_for(e.kind, e.collection) for e in entries]
            if any(e.repo for e in entries):
                recorder = None  # a repository is fetched on every run
        client = api.owner_client(settings)
        if client is not None:
            if reset or output_manifest:
                raise LockError(
                    f"the data dir is owned by {client.owner.describe()}; --reset and "
                    "--output-manifest cannot go through it: stop it first"
                )
            with client:
                summaries = _ingest_via_owner(client, specs, labels, options)
            _print_ingest(summaries, as_json)
            return
        if reset:
            names = sorted(set(collections))
            if not yes:
                click.confirm(
                    f"Drop collection(s) {', '.join(names)} and re-embed every source in them?",
                    abort=True,
                    err=True,
                )
            dropped = api.reset_collections(settings, names, wait=wait)
            _stderr().print(f"dropped: {escape(', '.join(dropped) or 'nothing (none existed)')}")
        if output_manifest:
            jobs = (
                [(s, options) for s in specs]
                if specs
                else api.configured_jobs(settings, labels, options)
            )
            with open(output_manifest, "w", encoding="utf-8") as handle:
                count = api.export_manifest(settings, jobs, handle, include_text=include_text)
            _stderr().print(f"wrote {count} desired records to {escape(_safe(output_manifest))}")
        show = not quiet and not as_json and sys.stderr.isatty()
        with _progress(show) as progress:
            if specs:
                summaries = api.ingest(
                    specs, settings, options, progress=progress, wait=wait, recorder=recorder
                )
            else:
                summaries = api.ingest_configured(
                    settings, labels, options, progress=progress, wait=wait, recorder=recorder
                )
    _print_ingest(summaries, as_json)


def _recorder(settings: api.Settings, config_flag: str | None) -> Recorder | None:
    """What records this command line's unchanged re-run for the fast path, when this
    process runs it as its own command line (`fastpath.main`)."""
    recorder = fastpath.recorder_for_command_line(os.environ, _summary_json)
    if recorder is not None:
        looked_for = not config_flag and not os.environ.get(CONFIG_ENV)
        recorder.consult(
            settings.config_file.inputs if settings.config_file else (),
            str(Path.cwd() / CONFIG_FILE_NAME) if looked_for else None,
        )
    return recorder


def _summary_json(rows: list[dict[str, object]]) -> str:
    return json.dumps(rows[0] if len(rows) == 1 else rows, indent=2) + "\n"


def _print_ingest(summaries: Sequence[IngestSummary], as_json: bool) -> None:
    rows = [s.as_json() for s in summaries]
    if as_json:
        click.echo(_summary_json(rows), nl=False)
    elif not sys.stdout.isatty():  # the same lines as the fast path's (no rich, no width)
        click.echo(fastpath.render_plain(rows), nl=False)
    else:
        _print_summaries(summaries)


def _ingest_via_owner(
    client: Any, specs: Sequence[SourceSpec], labels: Sequence[str], options: IngestOptions
) -> list[IngestSummary]:
    """While a service owns the data dir, ask it to reindex the same (known) sources."""
    from .cli_service import summaries_from_job

    owner = client.owner.describe()
    if options.dry_run or options.reembed or options.limit or options.gc_only or not options.gc:
        raise LockError(
            f"the data dir is owned by {owner}; --dry-run, --reembed, --limit, --gc-only and "
            "--no-gc cannot go through it: stop it first"
        )
    known = {s["label"]: s["location"] for s in client.sources()}
    for spec in specs:
        root = known.get(spec.label)
        if root is None or os.path.realpath(root) != os.path.realpath(spec.root):
            raise LockError(
                f"the data dir is owned by {owner}, which does not know source "
                f"{spec.label!r} at {str(spec.root)!r}; add it there (POST /sources) or stop it"
            )
    _stderr().print(f"[dim]the data dir is owned by {escape(owner)}; reindexing through it[/]")
    job = client.reindex(
        [s.label for s in specs] or list(labels),
        checksum=options.checksum,
        allow_mass_delete=options.allow_mass_delete,
    )
    job = client.wait(job["id"])
    if job["status"] != "done":
        raise ChromasyncError(f"{owner}: the reindex failed: {job['error']}")
    return summaries_from_job(job)


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


SUMMARY_COLUMNS = (
    "source",
    "seen",
    "unchanged",
    "updated",
    "new",
    "deleted",
    "skipped",
    "chunks",
    "embedded",
    "reused",
    "embed time",
    "other time",
)


def _summary_cells(s: IngestSummary) -> list[str]:
    return [
        str(s.files_seen),
        str(s.files_unchanged),
        str(s.files_updated),
        str(s.files_new),
        str(s.files_deleted),
        str(sum(s.files_skipped.values())),
        str(s.chunks_total),
        str(s.chunks_embedded),
        str(s.chunks_reused),
        f"{s.embed_ms / 1000:.2f}s",
        f"{max(s.duration_ms - s.embed_ms, 0) / 1000:.2f}s",
    ]


def _print_summaries(summaries: Sequence[IngestSummary]) -> None:
    console = Console(highlight=False)
    if console.width < 110:  # the table needs room; a narrow terminal gets lines
        _print_summary_lines(console, summaries)
        return
    table = Table(
        title="chromasync ingest" + (" (dry run)" if summaries and summaries[0].dry_run else "")
    )
    for column in SUMMARY_COLUMNS:
        table.add_column(column, justify="left" if column == "source" else "right")
    for s in summaries:
        table.add_row(escape(_safe(s.source)), *_summary_cells(s))
    if len(summaries) > 1:
        table.add_section()
        table.add_row("[bold]total[/]", *_summary_cells(total_summary(summaries)))
    console.print(table)
    rows = [*summaries, total_summary(summaries)] if len(summaries) > 1 else list(summaries)
    for s in rows:
        if s.files_skipped:
            reasons = ", ".join(f"{r}: {n}" for r, n in sorted(s.files_skipped.items()))
            console.print(f"[dim]{escape(_safe(s.source))} skipped by reason: {escape(reasons)}[/]")


def _print_summary_lines(console: Console, summaries: Sequence[IngestSummary]) -> None:
    text = fastpath.render_plain(
        [s.as_json() for s in summaries], name=lambda source: f"[bold]{escape(source)}[/]"
    )
    console.print(text, end="")


def _when(ns: int | None) -> str:
    if not ns:
        return "never"
    import datetime as dt

    return dt.datetime.fromtimestamp(ns / 1e9).isoformat(timespec="seconds")


@main.command()
@store_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def status(as_json: bool, **flags: Any) -> None:
    """Per source and collection: files, chunks, last run and outcome, model; the store's
    location and the state's health."""
    with _errors():
        settings = _settings(**flags)
        health = api.health(settings)
        rows = api.status(settings)
        configured = (
            {
                (settings.collection_for(e.kind, e.collection), e.label): e
                for e in api.selected_sources(settings)
            }
            if settings.config_file
            else {}
        )
    if as_json:
        data = {
            "health": dataclasses.asdict(health),
            "sources": [dataclasses.asdict(r) for r in rows],
            "configured_not_indexed": [
                {"collection": c, "source": label}
                for (c, label) in configured
                if not any(r.collection == c and r.source == label for r in rows)
            ],
        }
        click.echo(json.dumps(data, indent=2, default=str))
        return
    console = Console(highlight=False)
    console.print(f"store: {escape(_safe(health.store))}")
    console.print(f"state: {escape(_safe(health.state_file))}: {escape(health.state)}")
    if health.config_file:
        console.print(f"config: {escape(_safe(health.config_file))}")
    table = Table(title="chromasync status")
    for column in (
        "collection",
        "source",
        "kind",
        "files",
        "chunks",
        "model",
        "state",
        "last run",
        "outcome",
    ):
        table.add_column(column)
    for r in rows:
        table.add_row(
            escape(r.collection),
            escape(_safe(r.source)),
            escape(r.kind),
            str(r.files),
            str(r.chunks),
            r.embedding_model,
            r.status,
            _when(r.last_finished_ns),
            r.last_outcome or "-",
        )
    for (collection, label), entry in configured.items():
        if not any(r.collection == collection and r.source == label for r in rows):
            table.add_row(
                escape(collection),
                escape(_safe(label)),
                escape(entry.kind),
                "0",
                "0",
                "-",
                "not indexed",
                "never",
                "-",
            )
    console.print(table)
    if health.interrupted:
        console.print(
            "[yellow]interrupted runs (reconciled by the next ingest):[/] "
            + escape(", ".join(health.interrupted))
        )


# Commands defined beside this module for size; importing them registers them on `main`:
# config, sources and discover; chunk-report; search, similar and eval; serve, watch, mcp.
from . import cli_admin, cli_report, cli_search, cli_service  # noqa: E402,F401

if __name__ == "__main__":  # pragma: no cover
    main()
