"""`chromasync ingest` and `chromasync status`: sync sources, and show what is indexed."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .. import api
from ..config.resolve import CONFIG_ENV, CONFIG_FILE_NAME
from ..errors import ConfigError
from ..owner.index import open_index
from ..owner.queries import IngestRequest
from ..records import IngestSummary, SourceSpec, total_summary
from ..state.snapshots import Recorder
from ..sync.summary import render_plain
from .common import (
    print_table,
    progress_bar,
    reported_errors,
    safe,
    setting_option,
    settings_from_flags,
    stderr_console,
    store_options,
    when,
)
from .fileflags import file_fields, file_options, given, take_file_flags


@click.command()
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
@file_options
@click.option(
    "--identity",
    metavar="ORG/REPO[@BRANCH]",
    help="With PATH: index it as this repository (label ORG/REPO@BRANCH, records carry "
    "repository, branch and the repository indexer's fields), as the repository indexer "
    "names a local checkout.",
)
@click.option(
    "--commit-sha",
    metavar="SHA",
    help="Records written by this run carry indexed_commit_sha=SHA.",
)
@setting_option("batch_size")
@setting_option("chroma_retries", "--retry-attempts")
@click.option(
    "--once",
    is_flag=True,
    help="One pass, then exit: the default mode, named for cron lines (see `watch`).",
)
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
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the summary as JSON: a list, a row per source.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def ingest(
    paths: Sequence[str],
    labels: Sequence[str],
    kind: str | None,
    identity: str | None,
    once: bool,
    yes: bool,
    as_json: bool,
    quiet: bool,
    **flags: Any,
) -> None:
    """Index the text files under each PATH (one source per PATH), or, without PATH,
    every `include: true` source of the config file."""
    asked = {name: flags.pop(name) for name in _REQUEST_FLAGS}
    file_flags = take_file_flags(flags)
    per_path = [*(["--kind"] if kind else []), *given(file_flags)]
    _check_usage(paths, labels, asked, [*per_path, *(["--identity"] if identity else [])])
    if identity and (labels or len(paths) > 1):
        raise click.UsageError("--identity names one PATH's source; give one PATH, no --source")
    with reported_errors():
        fields = file_fields(file_flags) if paths else {}
        settings = settings_from_flags(**flags)
        specs: list[SourceSpec] = []
        if paths:
            label = labels[0] if labels else None
            if kind:
                fields["kind"] = kind
            if identity:
                label, fields["static_metadata"], fields["identity"] = identity_label(identity)
            specs = [
                api.source_for(p, label, allow_root=bool(flags.get("allow_root_slash")), **fields)
                for p in paths
            ]
        request = IngestRequest(tuple(specs), () if specs else tuple(labels), **asked)

        def confirm(names: Sequence[str]) -> None:
            if not yes:
                click.confirm(
                    f"Drop collection(s) {', '.join(names)} and re-embed every source in them?",
                    abort=True,
                    err=True,
                )

        def notice(line: str) -> None:
            stderr_console().print(escape(safe(line)))

        show = not quiet and not as_json and sys.stderr.isatty()
        recorder = _recorder(settings, flags.get("config_path"))
        with progress_bar(show) as progress, open_index(settings, writes=True) as index:
            summaries = index.ingest(  # through the data dir's owner when one runs
                request, progress=progress, recorder=recorder, confirm=confirm, notice=notice
            )
    _print_ingest(summaries, as_json)


#: The flags of `ingest` that are `IngestRequest`'s fields, under the same names.
_REQUEST_FLAGS = tuple(
    f.name for f in dataclasses.fields(IngestRequest) if f.name not in ("specs", "labels")
)


def _check_usage(
    paths: Sequence[str], labels: Sequence[str], asked: dict[str, Any], per_path: list[str]
) -> None:
    """A `click.UsageError` for flags that contradict each other or need another one;
    `per_path`: the flags given that apply to a PATH."""
    if paths and len(labels) > 1:
        raise click.UsageError("with PATH, --source names one source; give one PATH with it")
    if labels and len(paths) > 1:
        raise click.UsageError("--source names one source; give one PATH with it")
    if asked["gc_only"] and asked["no_gc"]:
        raise click.UsageError("--gc-only and --no-gc contradict each other")
    if asked["output_manifest"] and not asked["dry_run"]:
        raise click.UsageError("--output-manifest needs --dry-run")
    if asked["include_text"] and not asked["output_manifest"]:
        raise click.UsageError("--include-text needs --output-manifest")
    if asked["reset"] and (asked["dry_run"] or asked["gc_only"]):
        raise click.UsageError("--reset cannot be combined with --dry-run or --gc-only")
    if not paths and per_path:
        raise click.UsageError(
            f"{', '.join(per_path)} apply to a PATH; set them per source in the config file"
        )
    sha = asked["commit_sha"]
    if sha is not None and not re.fullmatch(r"[0-9a-fA-F]{7,64}", sha):
        raise click.UsageError(f"--commit-sha {sha!r} is not a commit id (7-64 hex digits)")


def identity_label(identity: str) -> tuple[str, dict[str, str], tuple[str, str, str]]:
    """`ORG/REPO[@BRANCH]` as a source label (`org/repo@branch`, as a `repo` source is
    labelled; branch `HEAD` when not given), the metadata its records carry, and the
    identity (organization, repository, branch) the repository indexer's fields come from."""
    name, _, branch = identity.strip().partition("@")
    parts = [p for p in name.strip("/").split("/") if p]
    if len(parts) != 2 or not all(re.fullmatch(r"[A-Za-z0-9_.-]+", p) for p in parts):
        raise ConfigError(
            f"--identity {identity!r}: give ORGANIZATION/REPOSITORY[@BRANCH], e.g. "
            "acme/handbook@main"
        )
    if branch and not re.fullmatch(r"[A-Za-z0-9_./-]{1,200}", branch):
        raise ConfigError(f"--identity {identity!r}: {branch!r} is not a branch name")
    repository = "/".join(parts)
    branch = branch or "HEAD"
    return (
        f"{repository}@{branch}",
        {"repository": repository, "branch": branch},
        (parts[0], parts[1], branch),
    )


def _recorder(settings: api.Settings, config_flag: str | None) -> Recorder | None:
    """What records this command line's unchanged re-run for the fast path, when this
    process runs it as its own command line (`fastpath.main` passes a factory as `obj`)."""
    factory = click.get_current_context().find_root().obj
    recorder = factory(os.environ, _summary_json) if callable(factory) else None
    if recorder is not None:
        looked_for = not config_flag and not os.environ.get(CONFIG_ENV)
        recorder.consult(
            settings.config_file.inputs if settings.config_file else (),
            str(Path.cwd() / CONFIG_FILE_NAME) if looked_for else None,
        )
    return recorder


def _summary_json(rows: list[dict[str, object]]) -> str:
    return json.dumps(rows, indent=2) + "\n"  # one shape: a list, one row per source


def _print_ingest(summaries: Sequence[IngestSummary], as_json: bool) -> None:
    rows = [s.as_json() for s in summaries]
    if as_json:
        click.echo(_summary_json(rows), nl=False)
    elif not sys.stdout.isatty():  # the same lines as the fast path's (no rich, no width)
        click.echo(render_plain(rows), nl=False)
    else:
        _print_summaries(summaries)


SUMMARY_COLUMNS: tuple[str, ...] = ("source", "seen", "unchanged", "updated", "new", "deleted")
SUMMARY_COLUMNS += ("skipped", "chunks", "embedded", "reused", "embed time", "other time")


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
        plain = [s.as_json() for s in summaries]
        console.print(render_plain(plain, name=lambda src: f"[bold]{escape(src)}[/]"), end="")
        return
    table = Table(
        title="chromasync ingest" + (" (dry run)" if summaries and summaries[0].dry_run else "")
    )
    for column in SUMMARY_COLUMNS:
        table.add_column(column, justify="left" if column == "source" else "right")
    for s in summaries:
        table.add_row(escape(safe(s.source)), *_summary_cells(s))
    if len(summaries) > 1:
        table.add_section()
        table.add_row("[bold]total[/]", *_summary_cells(total_summary(summaries)))
    print_table(console, table)
    rows = [*summaries, total_summary(summaries)] if len(summaries) > 1 else list(summaries)
    for s in rows:
        if s.files_skipped:
            reasons = ", ".join(f"{r}: {n}" for r, n in sorted(s.files_skipped.items()))
            console.print(f"[dim]{escape(safe(s.source))} skipped by reason: {escape(reasons)}[/]")


@click.command()
@store_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def status(as_json: bool, **flags: Any) -> None:
    """Per source and collection: files, chunks, last run and outcome, model; the store's
    location and the state's health."""
    with reported_errors():
        settings = settings_from_flags(**flags)
        with open_index(settings) as index:  # through the data dir's owner when one runs
            found = index.status()
        health, rows = found.health, found.sources
    if as_json:
        data = {
            "health": dataclasses.asdict(health),
            "sources": [dataclasses.asdict(r) for r in rows],
            "configured_not_indexed": [
                {"collection": c, "source": label}
                for (c, label, _kind) in found.configured_not_indexed
            ],
        }
        click.echo(json.dumps(data, indent=2, default=str))
        return
    console = Console(highlight=False)
    console.print(f"store: {escape(safe(health.store))}")
    console.print(f"state: {escape(safe(health.state_file))}: {escape(health.state)}")
    if health.config_file:
        console.print(f"config: {escape(safe(health.config_file))}")
    table = Table(title="chromasync status")
    for column in ("collection", "source", "kind", "files", "chunks", "model", "state"):
        table.add_column(column)
    table.add_column("last run")
    table.add_column("outcome")
    for r in rows:
        table.add_row(
            escape(r.collection),
            escape(safe(r.source)),
            escape(r.kind),
            str(r.files),
            str(r.chunks),
            r.embedding_model,
            r.status,
            when(r.last_finished_ns),
            r.last_outcome or "-",
        )
    for collection, label, kind in found.configured_not_indexed:
        never = ("0", "0", "-", "not indexed", "never", "-")
        table.add_row(escape(collection), escape(safe(label)), escape(kind), *never)
    print_table(console, table)
    if health.interrupted:
        console.print(
            "[yellow]interrupted runs (reconciled by the next ingest):[/] "
            + escape(", ".join(health.interrupted))
        )
