"""`chromasync ask QUESTION`: retrieve as `search` does, then answer with numbered citations.

The answer goes to stdout as it is written, then the numbered sources; `--json` prints the
answer's JSON. The search goes through the index seam, the answer is written here with
this command's chat settings (`api.ask(search=)`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from rich.markup import escape

from .. import api
from ..answer.records import (
    FLAG_INCOMPLETE,
    FLAG_LLM_UNREACHABLE,
    FLAG_NO_CITATIONS,
    FLAG_REMOVED_CITATIONS,
    FLAG_TRUNCATED,
    Answer,
)
from ..owner.index import open_index
from .common import (
    chat_options,
    daemon_flags,
    no_daemon_option,
    reported_errors,
    safe,
    search_args,
    search_options,
    setting_option,
    settings_from_flags,
    starting_notice,
    stderr_console,
    store_options,
)

_NOTES = {
    FLAG_LLM_UNREACHABLE: "the chat model was unreachable: this is the extractive answer",
    FLAG_NO_CITATIONS: "the answer cites no source: check it against the sources below",
    FLAG_TRUNCATED: "the model's answer was cut at the size limit",
    FLAG_INCOMPLETE: "the model's answer stopped before its end (the stream was cut off or "
    "passed llm_timeout): it is incomplete",
}


@click.command()
@click.argument("question")
@store_options(many_collections=True)
@search_options
@chat_options
@setting_option("answer_fallback", "--fallback", param="fallback")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print {question, answer, citations, sources, mode, model, usage, flags} as JSON.",
)
@no_daemon_option
def ask(question: str, fallback: str | None, as_json: bool, no_daemon: bool, **flags: Any) -> None:
    """Answer QUESTION from the index, every claim citing its source.

    Takes every filter of `search`. With a chat model (--llm-url, --llm-model) the answer
    streams in as it is written; without one it is extractive: the retrieved chunks'
    sentences that best answer the question, each with its citation. Exits 1 when the
    model's answer stopped before its end (flag `incomplete`), after printing it.
    """
    streamed: list[str] = []

    def on_token(piece: str) -> None:
        streamed.append(piece)
        sys.stdout.write(safe(piece, lines=True))
        sys.stdout.flush()

    with reported_errors():
        settings = settings_from_flags(**flags)
        llm = api.chat_client(settings)
        err = stderr_console()

        def search(args: api.SearchArgs) -> api.SearchResult:
            with open_index(
                settings, start=daemon_flags(flags), daemon=not no_daemon, on_start=starting_notice
            ) as index:
                result = index.search(args)
            if llm is not None and result.hits and not as_json:
                err.print(f"[dim]asking {escape(safe(repr(llm)))}...[/]")
            return result

        answer = api.ask(
            search_args(question, flags),
            settings,
            search=search,
            on_token=None if as_json else on_token,
            fallback=None if fallback is None else fallback == "extractive",
            llm=llm,
        )
    for warning in answer.warnings:
        err.print(f"[yellow]warning:[/] {escape(safe(warning))}")
    if as_json:
        click.echo(json.dumps(answer.as_json(), indent=2, ensure_ascii=False))
    else:
        _print_answer(answer, "".join(streamed))
    if FLAG_INCOMPLETE in answer.flags:
        sys.exit(1)  # the answer is printed, but it is not whole


def _print_answer(answer: Answer, streamed: str) -> None:
    err = stderr_console()
    if not streamed:
        click.echo(safe(answer.text, lines=True))
    else:
        click.echo()  # ends the streamed answer's line
        if answer.mode == "extractive":  # the model stalled mid-answer: the fallback
            click.echo(safe(answer.text, lines=True))
        elif streamed.strip() != answer.text.strip():  # citations were removed
            click.echo("\nchecked answer:")
            click.echo(safe(answer.text, lines=True))
    if answer.removed_citations:
        err.print(
            f"[yellow]note:[/] {answer.removed_citations} citation(s) naming no source were "
            "removed"
            + (" (flag removed-citations)" if FLAG_REMOVED_CITATIONS in answer.flags else "")
        )
    for flag in answer.flags:
        if flag in _NOTES:
            err.print(f"[yellow]note:[/] {_NOTES[flag]}")
    if not answer.citations:
        return
    click.echo("\nSources:")
    for citation in answer.citations:
        line = f"[{citation.n}] {citation.render()}"
        if citation.heading:
            line += f" ({citation.heading})"
        click.echo(safe(line))


__all__ = ["ask"]
