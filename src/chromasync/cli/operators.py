"""The operator's questions beyond search: `get` (indexed files' current lines), `links`
(reverse links), `suggest` (which group a file belongs to) and `summarize` (one summary per
group). Parse, call `api` (or the owner), render.
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
from ..owner.index import open_index
from .common import reported_errors, safe, settings_from_flags, stderr_console, store_options


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
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="Config file [env CHROMASYNC_CONFIG; ./chromasync.yaml].",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    help="State and embedded store folder [env CHROMASYNC_DATA_DIR; ./.chromasync].",
)
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
                data: dict[str, Any]
                if location is not None:
                    data = {"files": [index.get(location, source)], "left_out": 0}
                else:
                    data = index.multi_get(str(pattern), max_bytes, source)
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
    default=1000,
    show_default=True,
    type=click.IntRange(1, 100_000),
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
        report = api.links(
            target,
            settings,
            from_path=from_path,
            source=source,
            collections=tuple(flags.get("collection") or ()),
            all_collections=all_collections,
            limit=limit,
        )
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


__all__ = ["links"]
