"""`chromasync chunk-report`: how ingest would chunk a tree, without a store or a model.

Registered on the `chromasync` group by `cli`; same conventions (results on stdout,
messages on stderr, errors mapped by `cli.EXIT_CODES`). The report itself is built by
`api.chunk_report`.
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .. import api
from ..sync.chunkreport import ChunkReport, TokenStats
from .common import print_table, reported_errors, safe, settings_from_flags, store_options
from .fileflags import file_fields, file_options, given, take_file_flags


@click.command("chunk-report")
@click.argument("path", type=click.Path(), required=False)
@store_options
@click.option(
    "--source",
    "-s",
    "label",
    help="A configured source, reported as ingest runs it (its subdirs, patterns...).",
)
@file_options
@click.option("--limit", type=click.IntRange(1), help="Only the first N files.")
@click.option("--verbose", "-v", is_flag=True, help="Add a per-file breakdown.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def chunk_report(
    path: str | None,
    label: str | None,
    limit: int | None,
    verbose: bool,
    as_json: bool,
    **flags: Any,
) -> None:
    """Chunk the files under PATH (default: the current folder) exactly as ingest would and
    report chunk counts and sizes (in the model's word pieces, context prefix included) per
    extension, the largest token total first; files without an extension are `(none)`. A
    PATH that is a configured source's folder (or --source LABEL) is chunked as that source
    is ingested (its subdirs, patterns, extensions). Nothing is embedded or stored."""
    file_flags = take_file_flags(flags)
    if label is not None and (path is not None or given(file_flags)):
        raise click.UsageError(
            "--source reports a configured source as declared: no PATH or file flags"
        )
    with reported_errors():
        fields = file_fields(file_flags)
        report = api.chunk_report(
            path,
            settings_from_flags(**flags),
            include=fields.pop("include"),
            exclude=fields.pop("exclude"),
            use_gitignore=fields.pop("use_gitignore"),
            limit=limit,
            source=label,
            fields={k: v for k, v in fields.items() if v},
        )
    if as_json:
        click.echo(json.dumps(report.as_json(verbose), indent=2, ensure_ascii=False))
        return
    _print_report(report, verbose)


def _sizes(stats: TokenStats) -> list[str]:
    if not stats.count:
        return ["-", "-", "-"]
    return [str(stats.min), f"{stats.median:g}", str(stats.max)]


def _print_report(report: ChunkReport, verbose: bool) -> None:
    console = Console(highlight=False)
    table = Table(
        title=f"chromasync chunk-report: {escape(safe(report.source))} "
        f"(budget {report.max_tokens} word pieces, {escape(report.model)})"
    )
    columns = ("extension", "files", "chunks", "tokens", "min", "median", "max", "over budget")
    for column in columns:
        table.add_column(column, justify="left" if column == "extension" else "right")
    for ext in report.extensions:
        table.add_row(
            escape(safe(ext.extension or "(none)")),
            str(ext.files),
            str(ext.tokens.count),
            str(ext.tokens.total),
            *_sizes(ext.tokens),
            str(ext.over_budget),
        )
    table.add_row(
        "[bold]total[/]",
        str(report.files),
        str(report.tokens.count),
        str(report.tokens.total),
        *_sizes(report.tokens),
        str(report.over_budget),
        end_section=True,
    )
    print_table(console, table)
    if verbose:
        files = Table(title="per file")
        for column in ("path", "chunks", "min", "median", "max", "over budget"):
            files.add_column(column, justify="left" if column == "path" else "right")
        for entry in report.per_file:
            files.add_row(
                escape(safe(entry.path)),
                str(entry.tokens.count),
                *_sizes(entry.tokens),
                str(entry.over_budget),
            )
        print_table(console, files)
    if report.skipped:
        reasons = ", ".join(f"{r}: {n}" for r, n in sorted(report.skipped.items()))
        console.print(f"[dim]skipped by reason: {escape(reasons)}[/]")
    if report.documents:
        formats = ", ".join(
            f"{f}: {c['files']} ({c['pages']} pages)" for f, c in sorted(report.documents.items())
        )
        console.print(f"[dim]documents read: {escape(formats)}[/]")
    console.print(
        f"[dim]read and chunked in {report.chunk_ms / 1000:.2f}s; "
        f"measured again in {report.measure_ms / 1000:.2f}s[/]"
    )
