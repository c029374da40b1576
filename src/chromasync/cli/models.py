"""`chromasync model`: named model profiles and their side indexes (docs/models.md).

add (record a profile), build (its side index, resumable), list, eval (two indexes side by
side on the user's questions), use (switch searches over atomically), drop. Each command
resolves the data dir's own settings (`active_model=False`) and reaches a profile's through
`sync.models`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .. import api
from ..config.models import DEFAULT_NAME, ModelProfile, check_name, check_options, load_models
from ..embed import make_embedder
from ..errors import ConfigError
from ..owner.index import open_index
from ..owner.queries import EvalRequest
from ..retrieve.evaluate import versus
from ..sync import models as side
from .common import (
    embed_options,
    eval_options,
    print_table,
    progress_bar,
    reported_errors,
    safe,
    settings_from_flags,
    stderr_console,
    store_options,
)

_EMBEDDER_FLAGS = ("provider", "model", "embedding_url", "embed_options")


def _home(flags: dict[str, Any]) -> api.Settings:
    """The data dir's own settings (not the active profile's), without the embedder flags
    (`model add` reads those as the profile's)."""
    rest = {k: v for k, v in flags.items() if k not in _EMBEDDER_FLAGS}
    return settings_from_flags(active_model=False, **rest)


@click.group("model")
def model_group() -> None:
    """Try another embedding model side by side, then switch searches to it.

    A profile (provider, model, variant, URL) gets a side index of its own, built from the
    same files while searches go on answering from the current one.
    """


@model_group.command("add")
@click.argument("name")
@store_options
@click.option("--variant", help="A numeric variant of the local model: fp32, int8, bf16.")
@click.option(
    "--replace", "replace_existing", is_flag=True, help="Replace a profile and its index."
)
def model_add(name: str, variant: str | None, replace_existing: bool, **flags: Any) -> None:
    """Record model profile NAME: --provider, --model, --embedding-url, --embed-option.

    An API key is never recorded: it stays in CHROMASYNC_EMBEDDING_API_KEY.
    """
    with reported_errors():
        home = _home(flags)
        if not flags.get("provider"):
            raise ConfigError("model add needs --provider (local, openai, hash...)")
        if variant is not None and variant not in ("auto", "fp32", "int8", "bf16"):
            raise ConfigError(f"--variant {variant!r}: use fp32, int8, bf16 or auto")
        profile = ModelProfile(
            name=check_name(name),
            provider=str(flags["provider"]),
            model=flags.get("model"),
            variant=variant,
            url=flags.get("embedding_url"),
            options=check_options(embed_options(flags.get("embed_options") or ())),
        )
        make_embedder(profile.provider, {})  # an unknown provider fails now
        side.add_profile(home, profile, replace_existing=replace_existing)
    stderr_console().print(
        f"model profile [bold]{escape(name)}[/] recorded; build its index with "
        f"`chromasync model build {escape(name)}`"
    )


@model_group.command("build")
@click.argument("name")
@store_options
@click.option("--wait", is_flag=True, help="Wait for another build of this profile to finish.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def model_build(name: str, wait: bool, quiet: bool, **flags: Any) -> None:
    """Build (or bring up to date, or resume) NAME's side index from the same files."""
    with reported_errors():
        home = _home(flags)
        with progress_bar(not quiet and sys.stderr.isatty()) as progress:
            summaries = side.build_profile(home, name, progress=progress, wait=wait)
    embedded = sum(s.chunks_embedded for s in summaries)
    total = sum(s.chunks_total for s in summaries)
    click.echo(
        f"model {name}: {total} chunk(s) in {len(summaries)} source(s), {embedded} embedded now"
    )


@model_group.command("list")
@store_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def model_list(as_json: bool, **flags: Any) -> None:
    """The data dir's own index and each profile: model, build state, records."""
    with reported_errors():
        rows = side.profile_rows(_home(flags))
    if as_json:
        click.echo(json.dumps([_row_json(r) for r in rows], indent=2))
        return
    table = Table(title="chromasync models")
    for column in ("active", "name", "provider", "model", "state", "records", "chunker"):
        table.add_column(column)
    for r in rows:
        state = "incomplete: run `model build` again" if r.state == "building" else r.state
        table.add_row(
            "*" if r.active else "",
            safe(r.name),
            safe(r.provider),
            safe(r.model_id or r.model),
            state,
            str(r.records),
            str(r.chunking or ""),
        )
    print_table(Console(highlight=False), table)


def _row_json(row: side.ProfileRow) -> dict[str, Any]:
    return {
        "name": row.name,
        "provider": row.provider,
        "model": row.model,
        "active": row.active,
        "state": row.state,
        "records": row.records,
        "collections": list(row.collections),
        "model_id": row.model_id,
        "chunking_version": row.chunking,
    }


@model_group.command("eval")
@click.argument("name")
@click.argument("queries", type=click.Path(dir_okay=False))
@store_options
@click.option("--against", default=None, help="Compare with this index [default: the active one].")
@eval_options("dense and hybrid")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def model_eval(
    name: str,
    queries: str,
    against: str | None,
    k: int,
    modes: Sequence[str],
    as_json: bool,
    **flags: Any,
) -> None:
    """Measure profile NAME against the active index on QUERIES.jsonl (as `eval` does)."""
    with reported_errors():
        home = _home(flags)
        other = against or load_models(home.data_dir).active or DEFAULT_NAME
        judged = tuple(api.load_queries(queries))
        chosen = tuple(modes) or ("dense", "hybrid")
        request = EvalRequest(judged, modes=chosen, k=k, all_collections=side.store_is_own(home))
        reports = {}
        for label in dict.fromkeys((other, name)):
            with open_index(side.profile_settings(home, label)) as index:  # or its owner
                reports[label] = index.evaluate(request)
    base, new = reports[other], reports[name]
    metric = new.headline
    wins = {m: versus(new.per_query[m], base.per_query[m], metric) for m in chosen}
    if as_json:
        out = {label: r.as_json() for label, r in reports.items()}
        click.echo(json.dumps({"reports": out, "versus": wins, "metric": metric}, indent=2))
        return
    table = Table(title=f"chromasync model eval: {new.queries} queries")
    for column in ("index", "mode", f"nDCG@{k}", f"recall@{k}", "MRR"):
        table.add_column(column)
    for label, report in reports.items():
        for mode, figures in report.modes.items():
            row = (figures["ndcg"], figures["recall"], figures["mrr"])
            table.add_row(safe(label), mode, *(f"{x:.3f}" for x in row))
    console = Console(highlight=False)
    print_table(console, table)
    for mode, counts in wins.items():
        console.print(
            f"{safe(name)} vs {safe(other)} ({mode}, {metric}, per query): "
            f"{counts['wins']} wins, {counts['losses']} losses, {counts['ties']} ties"
        )


@model_group.command("use")
@click.argument("name")
@store_options
def model_use(name: str, **flags: Any) -> None:
    """Switch searches and ingests to NAME (`default`: the data dir's own index), after a
    catch-up build; the old index is kept (drop it with `model drop`)."""
    from ..owner.dial import make_way

    with reported_errors():
        home = _home(flags)
        left = side.use_profile(home, name)
        make_way(str(left))  # its search daemon would answer with the old model
    stderr_console().print(f"searches now use [bold]{escape(name)}[/]")


@model_group.command("drop")
@click.argument("name")
@store_options
def model_drop(name: str, **flags: Any) -> None:
    """Delete profile NAME and its side index (never the active one)."""
    with reported_errors():
        side.drop_profile(_home(flags), name)
    stderr_console().print(f"model profile [bold]{escape(name)}[/] dropped")


__all__ = ["model_group"]
