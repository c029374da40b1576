"""The retrieval commands of the CLI: `search`, `similar` and `eval` (parse, call, render).

`cli.main` registers them. Results go to stdout (`--json` for machines); progress and
warnings to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.style import Style
from rich.table import Table
from rich.text import Text

from .. import api
from ..chunk.blocks import code_lines, reading_view
from ..owner.index import open_index
from ..owner.queries import CompareQuery, EvalRequest
from ..records import Hit
from ..retrieve.request import check_query
from ..retrieve.results import (
    WEAKER_LINE,
    dated_text,
    explain_text,
    plain_lines,
    score_text,
    weaker_from,
)
from .common import (
    daemon_flags,
    eval_options,
    no_daemon_option,
    out_console,
    print_table,
    progress_bar,
    reported_errors,
    safe,
    search_args,
    search_options,
    settings_from_flags,
    starting_notice,
    stderr_console,
    store_options,
    threshold_option,
)


@click.command()
@click.argument("query")
@store_options(many_collections=True)
@search_options
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print {query, mode, collections, filters, hits} as JSON.",
)
@click.option(
    "--files",
    "files_only",
    is_flag=True,
    help="Print only the hits' paths, one per line, once (control characters and a newline "
    "escaped: `\\n`).",
)
@click.option(
    "-0",
    "--null",
    is_flag=True,
    help="As --files, but each path raw and ended by a NUL byte (for `xargs -0`).",
)
@click.option(
    "--explain", is_flag=True, help="Under each hit: each list's rank and raw score, the fused."
)
@no_daemon_option
def search(
    query: str,
    as_json: bool,
    files_only: bool,
    null: bool,
    explain: bool,
    no_daemon: bool,
    **flags: Any,
) -> None:
    """Search the indexed chunks for QUERY: filter, then rank by meaning and words.

    Each hit shows its relevance (0-1; see docs/how-it-works.md) before its raw score; hits
    under half the best one's relevance come after a "weaker matches" line, and
    --min-score X drops those under X. Runs through the data dir's warm daemon, which it
    starts when none runs (see `chromasync daemon`).
    """
    with reported_errors():
        if (files_only or null) and (as_json or explain):
            raise click.UsageError("--files prints paths only: not with --json or --explain")
        check_query(query, "cli")
        settings = settings_from_flags(**flags)
        args = search_args(query, flags)
        with open_index(
            settings,
            start=daemon_flags(flags),
            daemon=not no_daemon,
            on_start=starting_notice,
        ) as index:  # through the data dir's owner when one runs
            result = index.search(args)
    for warning in result.warnings:
        stderr_console().print(f"[yellow]warning:[/] {escape(safe(warning))}")
    if as_json:
        fmt = "json"
    elif files_only or null:
        fmt = "files0" if null else "files"
    else:
        fmt = "plain" if not sys.stdout.isatty() and not explain else "rich"
    render_search(result, fmt, explain=explain)


def render_search(result: api.SearchResult, fmt: str, *, explain: bool = False) -> None:
    """Write a search's output to stdout as `search` prints it (`fmt`: json, files, files0,
    plain, rich). Each hit's editor link (`result.links`) is its `open_url` in JSON and an
    OSC-8 hyperlink in a terminal."""
    write = sys.stdout.write
    if fmt == "json":
        write(json.dumps(result.as_json(), indent=2, ensure_ascii=False) + "\n")
    elif fmt in ("files", "files0"):
        paths = dict.fromkeys(h.path for h in result.hits)
        raw = fmt == "files0"
        write("".join(path + "\0" if raw else safe(path) + "\n" for path in paths))
    elif fmt == "plain" and not result.groups:
        write(plain_lines(result))
    else:
        _print_result(result, explain)
    sys.stdout.flush()


def _print_result(
    result: api.SearchResult,
    explain: bool = False,
    console: Console | None = None,
) -> None:
    """The hits for a terminal; a hit with a link (`editor_uri`) has its citation made an
    OSC-8 hyperlink (rich writes it only where the console is a terminal)."""
    console = console or out_console()
    link_of = dict(enumerate(result.links or ()))
    if not result.hits:
        console.print("no hits")
        return
    show_collection = len(result.collections) > 1
    if result.groups:
        for value, indexes in result.groups:
            console.rule(f"{escape(result.group_field or '')}: {escape(safe(value))}")
            for i in indexes:
                hit = result.hits[i]
                _print_hit(console, i + 1, hit, result, show_collection, explain, link_of.get(i))
        return
    weaker = weaker_from(result.hits)
    for rank, hit in enumerate(result.hits, 1):
        if rank - 1 == weaker:
            console.print(Text(WEAKER_LINE, style="dim"))
        _print_hit(console, rank, hit, result, show_collection, explain, link_of.get(rank - 1))


def _print_hit(
    console: Console,
    rank: int,
    hit: Hit,
    result: api.SearchResult,
    show_collection: bool,
    explain: bool = False,
    link: str | None = None,
) -> None:
    where = hit.citation
    line = Text()
    line.append(f"{rank}. ", style="bold")
    if show_collection:
        line.append(f"[{safe(hit.collection)}] ", style="magenta")
    line.append(safe(where), style=Style(color="cyan", link=link) if link else "cyan")
    if hit.relevance is not None:
        line.append(f" {hit.relevance:.2f}", style="bold")
    line.append(" " + score_text(replace(hit, relevance=None)), style="dim")
    if result.order != "rank":  # the date the hits are ordered by
        line.append(" " + safe(dated_text(hit, result.filters.date_fields)), style="yellow")
    if hit.collapsed:
        line.append(f" +{hit.collapsed} more in this file", style="dim")
    console.print(line)
    if hit.also_at:
        console.print(Text("   also at: " + safe(", ".join(hit.also_at)), style="dim"))
    if hit.heading:
        console.print(Text("   " + safe(hit.heading), style="green"))
    if hit.context:
        console.print(Text("   context: " + safe(hit.context), style="dim"))
    prose, code = reading_view(hit.text)
    flat = safe(prose)
    spans = api.highlight(flat, result.query, result.filters.phrases)
    window, shifted = api.snippet(flat, spans)
    text = Text("   " + window)
    for start, end in shifted:
        text.stylize("bold yellow", start + 3, end + 3)
    console.print(text)
    if code is not None:  # code kept apart from the prose, as it stands in the file
        console.print(Text("   ┌ " + (safe(code.lang) or "code"), style="dim"))
        for row in code_lines(code):
            console.print(Text("   │ " + safe(row), style="cyan"))
    if explain:
        console.print(Text("   " + explain_text(hit, result.mode), style="dim"))


@click.command()
@click.argument("path", type=click.Path(dir_okay=False))
@store_options(many_collections=True)
@click.option("--all-collections", is_flag=True, help="Compare with every collection.")
@click.option(
    "--k",
    "k",
    default=10,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Number of documents.",
)
@threshold_option
@click.option(
    "--group-by",
    metavar="FIELD",
    help="Group the documents by a front-matter field, source, collection or path:N.",
)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def similar(
    path: str,
    all_collections: bool,
    k: int,
    threshold: float | None,
    group_by: str | None,
    as_json: bool,
    **flags: Any,
) -> None:
    """The indexed documents nearest to the file PATH (indexed or not)."""
    with reported_errors():
        settings = settings_from_flags(**flags)
        query = CompareQuery(
            path,
            k=k,
            threshold=threshold,
            collections=tuple(flags.get("collection") or ()),
            all_collections=all_collections,
            group_by=group_by,
        )
        with open_index(settings) as index:  # through the data dir's owner when one runs
            result = index.similar(query)
    if as_json:
        click.echo(json.dumps(result.as_json(), indent=2, ensure_ascii=False))
        return
    console = Console(highlight=False)
    if not result.documents:
        console.print("no similar documents")
        return
    title = f"documents similar to {escape(safe(result.path))}"
    groups = result.groups or (("", tuple(range(len(result.documents)))),)
    for value, indexes in groups:
        named = escape(safe(f", {result.group_by}: {value}")) if result.group_by else ""
        table = Table(title=title + named)
        for column in ("#", "score", "duplicate", "source", "path", "nearest chunk"):
            table.add_column(column, justify="right" if column in ("#", "score") else "left")
        for at in indexes:
            doc = result.documents[at]
            flag = "exact copy" if doc.exact else ("duplicate" if doc.duplicate else "")
            best = doc.best
            nearest = f"{best.citation[len(best.path) :].lstrip(': ')} {best.heading}"[:60]
            table.add_row(
                str(at + 1),
                f"{doc.score:.3f}",
                flag,
                escape(safe(doc.source)),
                escape(safe(doc.path)),
                escape(safe(nearest)),
            )
        print_table(console, table)
    sources = result.nearest_sources
    if sources:
        name, score, count = sources[0]
        console.print(
            f"closest source: [bold]{escape(safe(name))}[/] (best {score:.3f}, "
            f"{count} of {len(result.documents)} documents)"
        )


@click.command("eval")
@click.argument("queries", type=click.Path(dir_okay=False))
@store_options(many_collections=True)
@click.option("--all-collections", is_flag=True, help="Search every collection.")
@eval_options("all three")
@click.option("--source", "sources", multiple=True, help="Only this source (repeatable).")
@click.option(
    "--feedback",
    is_flag=True,
    help="Also measure hybrid with pseudo-relevance feedback (search --feedback).",
)
@click.option(
    "--rerank",
    "rerank_model",
    metavar="FOLDER",
    help="Also measure hybrid reranked by this local cross-encoder.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def eval_command(
    queries: str,
    all_collections: bool,
    k: int,
    modes: Sequence[str],
    sources: Sequence[str],
    feedback: bool,
    as_json: bool,
    quiet: bool,
    **flags: Any,
) -> None:
    """Measure retrieval on QUERIES.jsonl: {"query": ..., "relevant": [path or id, ...]}.

    Each query is searched as `search --per-doc --k K --no-rerank` searches it, in each
    mode (with --feedback, hybrid with --feedback too; with a reranker, hybrid reranked),
    and the documents it returns are scored: nDCG@k, recall@k and MRR@k side by side,
    graded nDCG@k too when lines carry "grades": {entry: gain}, and hybrid's per-query
    wins and losses against each single mode and each kind of hybrid's against hybrid
    (--json: each query's documents and outcome too). Documents match a judged entry by
    path, by file stem or by document_id.
    """
    with reported_errors():
        settings = settings_from_flags(**flags)
        request = EvalRequest(
            tuple(api.load_queries(queries)),
            modes=tuple(modes),
            k=k,
            sources=tuple(sources),
            collections=tuple(flags.get("collection") or ()),
            all_collections=all_collections,
            feedback=feedback,
        )
        show = not quiet and not as_json and sys.stderr.isatty()
        with progress_bar(show) as progress, open_index(settings) as index:
            report = index.evaluate(request, progress=progress)
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2))
        return
    graded = report.graded
    table = Table(title=f"chromasync eval: {report.queries} queries")
    table.add_column("mode")
    columns = [("ndcg", f"nDCG@{k}")]
    if graded:
        columns.append(("ndcg_graded", f"graded nDCG@{k}"))
    columns += [("recall", f"recall@{k}"), ("mrr", f"MRR@{k}")]
    for _, column in columns:
        table.add_column(column, justify="right")
    for mode, figures in report.modes.items():
        table.add_row(mode, *(f"{figures[m]:.3f}" for m, _ in columns))
    console = Console(highlight=False)
    print_table(console, table)
    measure = f"graded nDCG@{k}" if graded else f"nDCG@{k}"
    for pair, counts in report.versus().items():
        console.print(
            f"{pair} ({measure}, per query): {counts['wins']} wins, "
            f"{counts['losses']} losses, {counts['ties']} ties"
        )


__all__ = ["eval_command", "search", "similar"]
