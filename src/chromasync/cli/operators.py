"""The operator's questions beyond search: `get` (indexed files' current lines), `links`
(reverse links), `suggest` (which group a file belongs to) and `summarize` (one summary per
group). Parse, call the index (`open_index`: here, or through the data dir's owner), render.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from .. import api
from ..errors import SourceError
from ..owner import queries as q
from ..owner.index import open_index
from ..owner.queries import CompareQuery, FileSet, LinksQuery, SummariesQuery
from .common import (
    chat_options,
    config_option,
    data_dir_option,
    reported_errors,
    safe,
    settings_from_flags,
    stderr_console,
    store_options,
    threshold_option,
)


def _shown_text(text: str) -> str:
    """Control characters escaped (a file cannot drive the terminal); tabs and newlines kept."""
    return "".join(c if c.isprintable() or c in "\t\n" else repr(c)[1:-1] for c in text)


def _print_lines(found: dict[str, Any]) -> None:
    where = f"{found['source']}/{found['path']}"
    if found.get("skipped"):
        click.echo(f"==> {safe(where)} (skipped: {safe(found['skipped'])})")
        return
    start, end, total = found["start_line"], found["end_line"], found["total_lines"]
    cut = " (truncated at the size limit)" if found.get("truncated") else ""
    click.echo(f"==> {safe(where)}:{start}-{end} of {total} lines{cut}")
    lines = found["text"].split("\n") if found["text"] else []
    width = len(str(end))
    for number, line in enumerate(lines, start=start):
        click.echo(f"{number:>{width}}  {_shown_text(line)}")


@click.command(name="get")
@click.argument("location", metavar="PATH[:START[-END]]", required=False)
@click.option("--glob", "pattern", metavar="GLOB", help="Instead: every indexed file matching.")
@click.option(
    "--max-bytes",
    default=api.DEFAULT_MAX_BYTES,
    show_default=True,
    type=click.IntRange(1, 10_000_000),
    help="With --glob: files larger than this are listed, not printed.",
)
@click.option("--source", help="The source of PATH, when several index it; or the only one.")
@click.option("--json", "as_json", is_flag=True, help="Print {files, left_out} as JSON.")
@config_option
@data_dir_option
def get_command(
    location: str | None,
    pattern: str | None,
    max_bytes: int,
    source: str | None,
    as_json: bool,
    **flags: Any,
) -> None:
    """Print indexed files' current text with line numbers.

    PATH is relative to its source root, as hits cite it (`notes/a.md:12-30` for lines 12
    to 30); --glob 'journal/2026-05*.md' prints every indexed file that matches (`*` also
    crosses `/`). Only files the index holds are read, and only inside their source's root:
    absolute paths, `..`, control characters and links leading out of the root are refused
    (exit 2). Through the data dir's owner when one runs.
    """
    with reported_errors():
        if (location is None) == (pattern is None):
            raise click.UsageError("give a PATH[:START[-END]] or --glob GLOB (one of them)")
        settings = settings_from_flags(**flags)
        try:
            with open_index(settings) as index:
                if location is not None:
                    found = FileSet((index.get(location, source),))
                else:
                    found = index.multi_get(str(pattern), max_bytes, source)
            data = found.as_json()
        except SourceError as exc:  # a refused path is a usage error, like click's own
            message = f"[bold red]error:[/] {escape(safe(str(exc)))}"
            stderr_console().print(message, soft_wrap=True)
            sys.exit(2)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if not data["files"]:
        stderr_console().print(f"no indexed file matches {escape(safe(str(pattern)))}")
        sys.exit(1)
    for found in data["files"]:
        _print_lines(found)
    if data.get("left_out"):
        stderr_console().print(f"{data['left_out']} more files matched; narrow the glob")


@click.command()
@click.argument("target", required=False)
@store_options(many_collections=True)
@click.option("--all-collections", is_flag=True, help="Look in every collection of the store.")
@click.option(
    "--from",
    "from_path",
    metavar="PATH",
    help="Instead: what this file links to, and which internal targets are missing.",
)
@click.option("--source", help="The source of --from PATH, when several index that path.")
@click.option(
    "--limit",
    default=q.LINKS_LIMIT,
    show_default=True,
    type=click.IntRange(1, q.MAX_LINKS_LIMIT),
    help="At most this many linking chunks.",
)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def links(
    target: str | None,
    all_collections: bool,
    from_path: str | None,
    source: str | None,
    limit: int,
    as_json: bool,
    **flags: Any,
) -> None:
    """Every indexed file and chunk that links to TARGET, with the line and link text.

    TARGET is a URL (it also finds links to URLs under it), a path relative to its source
    root (also found through wikilinks to its title; a folder with a trailing slash finds
    links to anything in it) or a note title. With --from PATH: that file's links, and its
    internal targets that are neither indexed nor on disk (broken links).
    """
    with reported_errors():
        if (target is None) == (from_path is None):
            raise click.UsageError("give a TARGET or --from PATH (one of them)")
        settings = settings_from_flags(**flags)
        query = LinksQuery(
            target,
            from_path=from_path,
            source=source,
            collections=tuple(flags.get("collection") or ()),
            all_collections=all_collections,
            limit=limit,
            on_disk=True,
        )
        with open_index(settings) as index:  # through the data dir's owner when one runs
            report = index.links(query)
    data = report.as_json()
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    console = Console(highlight=False)
    if report.from_path is not None:
        if not report.outgoing:
            console.print(f"{escape(safe(report.from_path))} links to nothing")
            return
        for out in report.outgoing:
            link = out.link
            where = "front matter" if link.line == 0 else f"line {link.line}"
            flag = " [red]missing[/]" if out.missing else ""
            console.print(
                f"{where}: [cyan]{escape(safe(link.target))}[/] "
                f"[dim]{escape(safe(link.text))}[/]{flag}"
            )
        missing = data["missing"]
        if isinstance(missing, list) and missing:
            console.print(f"[red]{len(missing)} missing internal target(s)[/]")
        return
    if not report.chunks:
        console.print(f"nothing indexed links to {escape(safe(target or ''))}")
        return
    for chunk in report.chunks:
        for link in chunk.links or ():
            where = "front matter" if link.line == 0 else str(link.line)
            console.print(
                f"[cyan]{escape(safe(chunk.source))}:{escape(safe(chunk.path))}:{where}[/] "
                f"{escape(safe(link.text))} -> {escape(safe(link.target))}"
            )
    files = {(c.source, c.path) for c in report.chunks}
    console.print(f"[dim]{len(report.chunks)} chunk(s) in {len(files)} file(s)[/]")


@click.command()
@click.argument("path", type=click.Path(dir_okay=False))
@store_options(many_collections=True)
@click.option("--all-collections", is_flag=True, help="Compare with every collection.")
@click.option(
    "--group-by",
    required=True,
    metavar="FIELD",
    help="A metadata field, `source`, `collection` or a folder level `path:N` "
    "(path:1 = the first folder of the path).",
)
@click.option(
    "--k",
    "k",
    default=3,
    show_default=True,
    type=click.IntRange(1, 50),
    help="Number of groups.",
)
@threshold_option
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def suggest(
    path: str,
    all_collections: bool,
    group_by: str,
    k: int,
    threshold: float | None,
    as_json: bool,
    **flags: Any,
) -> None:
    """Triage: the groups whose indexed content is nearest to the file PATH.

    PATH need not be indexed (an inbox capture is chunked and embedded in memory, nothing
    is written); when it is, its own chunks are left out. Each group has a score (its share
    of the similarity of the file's chunks' nearest neighbours), a confidence band and its
    two best-matching chunks; the file's near-duplicates are listed below.
    """
    with reported_errors():
        settings = settings_from_flags(**flags)
        query = CompareQuery(
            path,
            group_by=group_by,
            k=k,
            threshold=threshold,
            collections=tuple(flags.get("collection") or ()),
            all_collections=all_collections,
        )
        with open_index(settings) as index:  # through the data dir's owner when one runs
            result = index.suggest(query)
    if as_json:
        click.echo(json.dumps(result.as_json(), indent=2, ensure_ascii=False))
        return
    console = Console(highlight=False)
    if not result.groups:
        console.print("no indexed content to compare with")
    for rank, group in enumerate(result.groups, 1):
        console.print(
            f"{rank}. [bold]{escape(safe(group.group))}[/] {group.score:.3f} "
            f"({group.band} confidence, margin {group.margin:+.3f})"
        )
        for hit in group.best:
            console.print(
                f"   [cyan]{escape(safe(hit.citation))}[/] {hit.score:.3f} "
                f"[dim]{escape(safe(hit.heading[:60]))}[/]"
            )
    duplicates = [d for d in result.similar.documents if d.duplicate]
    for doc in duplicates:
        kind = "exact copy" if doc.exact else "near-duplicate"
        console.print(
            f"[yellow]{kind}[/]: {escape(safe(doc.source))}:{escape(safe(doc.path))} "
            f"{doc.score:.3f}"
        )
    if not duplicates and result.similar.documents:
        doc = result.similar.documents[0]
        console.print(
            f"[dim]no near-duplicate; nearest document {escape(safe(doc.path))} {doc.score:.3f}[/]"
        )


@click.command()
@store_options(many_collections=True)
@click.option("--all-collections", is_flag=True, help="Summarise every collection.")
@click.option(
    "--group-by",
    required=True,
    metavar="FIELD",
    help="A metadata field, `source`, `collection` or a folder level `path:N`.",
)
@click.option(
    "--limit",
    default=q.SUMMARIES_LIMIT,
    show_default=True,
    type=click.IntRange(1, q.MAX_SUMMARIES_LIMIT),
    help="At most this many groups (the biggest).",
)
@chat_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def summarize(
    all_collections: bool, group_by: str, limit: int, as_json: bool, **flags: Any
) -> None:
    """One short summary per group: what each value of --group-by is about.

    Written by the chat model when one is configured, else extractive (the group's most
    representative sentences), with the group's distinctive terms (TF-IDF against the other
    groups). Summaries are cached in the data dir by each group's chunks: a re-run writes
    only the groups whose content changed.
    """
    collections = tuple(flags.get("collection") or ())
    with reported_errors():
        settings = settings_from_flags(**flags)
        query = SummariesQuery(group_by, limit, collections, all_collections)
        with open_index(settings) as index:  # through the data dir's owner when one runs
            data: dict[str, Any] = index.summaries(query).as_json()
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    console = Console(highlight=False)
    for group in data["groups"]:
        console.print(
            f"[bold]{escape(safe(str(group['group'])))}[/] [dim]{group['files']} file(s), "
            f"{group['chunks']} chunk(s)[/]"
        )
        if group["terms"]:
            console.print(f"  [cyan]{escape(safe(', '.join(group['terms'])))}[/]")
        if group["summary"]:
            console.print(f"  {escape(safe(str(group['summary'])))}")
    left_out = data["left_out"]
    note = f" ({left_out} smaller group(s) left out)" if left_out else ""
    console.print(
        f"[dim]{len(data['groups'])} group(s): {data['written']} written, "
        f"{data['cached']} from the cache{note}[/]"
    )


__all__ = ["links", "suggest", "summarize"]
