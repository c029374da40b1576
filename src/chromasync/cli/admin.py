"""The operator's commands: `config show`, `sources list|add|remove`, `discover`, `verify`,
`share`.

Registered on the `chromasync` group by `cli`; same conventions (results on stdout,
messages on stderr, errors mapped by `cli.EXIT_CODES`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .. import api
from ..owner.index import open_index
from ..owner.queries import RemoveRequest, ShareRequest, VerifyRequest
from .common import (
    print_table,
    reported_errors,
    safe,
    settings_from_flags,
    store_options,
    when,
)


@click.group()
def config() -> None:
    """Inspect the resolved configuration."""


@config.command("show")
@store_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def config_show(as_json: bool, **flags: Any) -> None:
    """Print each setting with where its value came from (secrets masked), and the sources."""
    with reported_errors():
        settings = settings_from_flags(**flags)
        entries = api.configured_entries(settings)
        listed = settings.config_file.sources_file if settings.config_file else None
        about: tuple[tuple[str, str], ...] = ()
        if listed is not None:  # pydantic loads only when needed: not at every CLI start
            from ..config.file import load_sources_file

            about = load_sources_file(listed).about
    if as_json:
        data: dict[str, Any] = {
            "settings": [{"name": n, "value": v, "from": o} for n, v, o in settings.shown()],
            "sources": [
                {
                    "label": e.label,
                    "kind": e.kind,
                    "include": e.include,
                    "path": str(e.path) if e.path else None,
                    "repo": e.repo,
                    "branch": e.branch,
                    "collection": settings.collection_for(e.kind, e.collection),
                    "declared_at": f"{e.declared_in}:{e.line}",
                    "label_from": e.label_from or "named",
                }
                for e in entries
            ],
        }
        if listed is not None:
            data["sources_file"] = {"path": str(listed), "about": dict(about)}
        click.echo(json.dumps(data, indent=2))
        return
    table = Table(title="chromasync config")
    for column in ("setting", "value", "from"):
        table.add_column(column)
    for name, value, origin in settings.shown():
        table.add_row(name, escape(safe(value)), escape(safe(origin)))
    console = Console(highlight=False)
    print_table(console, table)
    if listed is not None:
        console.print(f"sources file: {escape(safe(str(listed)))}")
        for key, value in about:
            console.print(f"  {key}: {escape(safe(value))}")
    if entries:
        _print_entries(console, settings, entries)


def _print_entries(console: Console, settings: api.Settings, entries: Sequence[Any]) -> None:
    table = Table(title="sources")
    for column in ("label", "kind", "include", "path", "collection", "declared at"):
        table.add_column(column)
    for e in entries:
        where = f"{e.repo}@{e.branch or 'HEAD'}" if e.repo else str(e.path)
        table.add_row(
            escape(safe(e.label)),
            escape(e.kind),
            "yes" if e.include else "no",
            escape(safe(where)),
            escape(settings.collection_for(e.kind, e.collection)),
            escape(safe(f"{e.declared_in}:{e.line}")),
        )
    print_table(console, table)
    for e in entries:  # a label made distinct: say how, so it can be named to keep it
        if "roots end in" in e.label_from:
            console.print(
                f"label {escape(safe(e.label))!r} from {escape(safe(e.label_from))} "
                "(set `label:` to choose another)"
            )


@click.group()
def sources() -> None:
    """List, add and remove the configured sources."""


@sources.command("list")
@store_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def sources_list(as_json: bool, **flags: Any) -> None:
    """Configured sources with their index figures, and indexed ones no longer configured."""
    with reported_errors(), open_index(settings_from_flags(**flags)) as index:
        rows = index.sources()  # through the data dir's owner when one runs
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(r) for r in rows], indent=2))
        return
    table = Table(title="chromasync sources")
    for column in ("label", "kind", "include", "location", "collection", "files", "chunks"):
        table.add_column(column)
    table.add_column("last run")
    table.add_column("declared at")
    for r in rows:
        table.add_row(
            escape(safe(r.label)),
            escape(r.kind),
            "yes" if r.include else "no",
            escape(safe(r.location)),
            escape(r.collection),
            str(r.files),
            str(r.chunks),
            f"{when(r.last_finished_ns)} {r.last_outcome or ''}".strip(),
            escape(safe(r.declared_at or "not configured")),
        )
    print_table(Console(highlight=False), table)


@sources.command("add")
@click.argument("path", type=click.Path(file_okay=False))
@store_options
@click.option("--label", help="Source label (default: the folder's name).")
@click.option("--kind", default="notes", show_default=True, help="Source kind.")
@click.option("--exclude-source", "excluded", is_flag=True, help="Declare it with include: false.")
@click.option("--note", help="A note kept with the declaration.")
def sources_add(
    path: str, label: str | None, kind: str, excluded: bool, note: str | None, **flags: Any
) -> None:
    """Declare PATH as a source in the config file (./chromasync.yaml is created if none)."""
    with reported_errors():
        settings = settings_from_flags(**flags)
        target = None if settings.config_file else Path.cwd() / "chromasync.yaml"
        entry = api.add_source(
            settings, path, label=label, kind=kind, include=not excluded, target=target, note=note
        )
    click.echo(
        f"added source {safe(entry.label)!r} ({entry.kind}, "
        f"include: {str(entry.include).lower()}) to {safe(str(entry.declared_in))}:{entry.line}"
    )


@sources.command("remove")
@click.argument("label")
@store_options
@click.option("--keep-entry", is_flag=True, help="Keep the declaration in the config file.")
@click.option("--wait", is_flag=True, help="Wait for another ingest of the data dir to finish.")
def sources_remove(label: str, keep_entry: bool, wait: bool, **flags: Any) -> None:
    """Delete LABEL's records from its collection and its state (other sources are left
    alone), and its declaration unless --keep-entry."""
    request = RemoveRequest(label, keep_declaration=keep_entry, wait=wait)
    with reported_errors(), open_index(settings_from_flags(**flags), writes=True) as index:
        removed = index.remove_source(request)  # through the data dir's owner when one runs
    where = ", ".join(removed.collections) or "no collection"
    click.echo(
        f"removed source {safe(removed.label)!r}: {removed.records_deleted} records from "
        f"{where}; declaration {'removed' if removed.declaration_removed else 'kept'}"
        + (
            f"; dropped the emptied collection(s) {', '.join(removed.collections_dropped)}"
            if removed.collections_dropped
            else ""
        )
    )


@click.command("discover")
@click.argument("root", type=click.Path(file_okay=False, exists=True))
@store_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def discover_cmd(root: str, as_json: bool, **flags: Any) -> None:
    """Find candidate content roots under ROOT (>= 10 Markdown files within 3 levels, no
    build output) and append new ones to the sources file with `include: false`."""
    with reported_errors():
        settings = settings_from_flags(**{k: v for k, v in flags.items() if k != "sources_file"})
        result = api.discover(settings, root, flags.get("sources_file"))
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(result), indent=2))
        return
    console = Console(highlight=False)
    for path in result.candidates:
        mark = "[green]added[/]" if path in result.added else "[dim]known[/]"
        console.print(f"{mark} {escape(safe(path))}")
    console.print(
        f"{len(result.added)} added, {len(result.known)} already listed, in "
        f"{escape(safe(result.sources_file))}"
    )


@click.command()
@store_options
@click.option("--source", "labels", multiple=True, help="Only this source (repeatable).")
@click.option("--repair", is_flag=True, help="Heal and re-sync every source with a difference.")
@click.option("--wait", is_flag=True, help="Wait for another process using the data dir.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(labels: Sequence[str], repair: bool, wait: bool, as_json: bool, **flags: Any) -> None:
    """Compare the manifest, keyword index, collection and files on disk.

    Reports orphans, missing, mismatched and duplicate records, keyword-index drift, and
    files changed, added or gone since the last ingest. Exits 1 when a difference remains.
    Also lists what is wrong with sidecars (a binary_asset whose sha256 does not match its
    file, without a filename, or naming a path outside the source): one line each, which
    does not change the exit status. Records another tool wrote into a collection (without
    chromasync's marker) are listed as foreign and kept; they never fail the check.
    """
    request = VerifyRequest(tuple(labels), repair=repair, wait=wait)
    with reported_errors(), open_index(settings_from_flags(**flags), writes=True) as index:
        checks = index.verify(request)  # the report through a running owner; not --repair
    if as_json:
        click.echo(json.dumps([c.as_json() for c in checks], indent=2, ensure_ascii=False))
    else:
        table = Table(title="chromasync verify")
        for column in ("collection", "source", "files", "records", "state", "differences"):
            table.add_column(column)
        for c in checks:
            found = ", ".join(f"{k}: {v}" for k, v in c.problem_counts().items() if v)
            state = "ok" if c.ok else "differs"
            if c.repaired:
                state += " (repaired)"
            if c.foreign:  # another tool's records: reported and kept, never a difference
                found = f"{c.foreign} foreign record(s), kept: " + ", ".join(c.foreign_sample)
            table.add_row(
                escape(c.collection),
                escape(safe(c.source)) if not c.foreign else "(another tool)",
                str(c.files),
                str(c.foreign or c.records),
                state,
                escape(found) or "-",
            )
        console = Console(highlight=False)
        print_table(console, table)
        for c in checks:  # problems of the corpus, not of the index: they do not fail
            for line in c.sidecar_findings:
                console.print(
                    f"sidecar ({escape(safe(c.source))}): {escape(safe(line))}", soft_wrap=True
                )
    if any(not c.ok for c in checks):
        raise SystemExit(1)


@click.command()
@store_options
@click.option(
    "--no-model", is_flag=True, help="Only configure the collections; do not place the model."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def share(no_model: bool, as_json: bool, **flags: Any) -> None:
    """Let other Chroma clients query this data dir's collections by text, offline.

    Records Chroma's default embedding function (the same all-MiniLM-L6-v2 model) in the
    configuration of every collection of the default model that has none, gives the
    records of an index an older release wrote the keys peers read (a metadata rewrite),
    and puts that model where chromadb reads it (~/.cache/chroma/onnx_models), from the
    offline weights or else downloaded once. No vector is re-embedded. See docs/peers.md.
    """
    with reported_errors(), open_index(settings_from_flags(**flags), writes=True) as index:
        report = index.share(ShareRequest(no_model=no_model))  # refused through an owner
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2))
        return
    for name in report.configured:
        click.echo(f"configured {safe(name)}: Chroma's default embedding function")
    for name in report.already:
        click.echo(f"already configured: {safe(name)}")
    for name in report.other_model:
        click.echo(f"another model, left as is (peers pass vectors): {safe(name)}")
    if report.upgraded:
        click.echo(f"upgraded {report.upgraded} record(s) of an older index (metadata only)")
    state = "placed now" if report.model_placed else "in place"
    click.echo(f"Chroma's default model: {safe(report.model_folder)} ({state})")
