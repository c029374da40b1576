"""`answer_question`: the one seam every surface calls to answer a question from hits.

Design notes: docs/internals.md, `answer/ask.py`.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import ChromasyncError, ConfigError
from ..records import Hit
from ..retrieve.options import MAX_QUESTION_CHARS
from .chat import ChatClient, ChatUnreachable, chat_client
from .examples import MAX_PAGE_CHUNKS, Page
from .extractive import answer_extractive, score_sentences, split_sentences
from .prompt import DEFAULT_CONTEXT_TOKENS, approx_tokens, build_prompt
from .records import (
    FLAG_INCOMPLETE,
    FLAG_LLM_UNREACHABLE,
    FLAG_NO_SOURCES,
    FLAG_TRUNCATED,
    FLAG_UNSUPPORTED,
    Answer,
    Unsupported,
)
from .support import CommonNames, check_support
from .verify import check_citations

if TYPE_CHECKING:
    from ..config.settings import Settings
    from ..embed import Embedder
    from ..retrieve.request import SearchArgs
    from ..retrieve.results import SearchResult

log = logging.getLogger(__name__)

NO_SOURCES_TEXT = "No sources matched the question."
#: The answer when filters were given and nothing passed them.
NO_MATCH_TEXT = "No sources matched these filters."


def check_question(question: str) -> str:
    """The question stripped; `ConfigError` when it is empty or too long."""
    text = question.strip()
    if not text:
        raise ConfigError("the question is empty; ask something, e.g. 'how do I install it?'")
    if len(question) > MAX_QUESTION_CHARS:
        raise ConfigError(
            f"the question is {len(question)} characters long, over the limit of "
            f"{MAX_QUESTION_CHARS}; shorten it"
        )
    return text


def _best_sentence(question: str) -> Callable[[Hit], str]:
    """The quote of a cited hit: its sentence that best matches the question."""

    def quote(hit: Hit) -> str:
        sentences = split_sentences(hit, 0)
        scored = score_sentences(question, sentences)
        if scored:
            return max(scored, key=lambda s: s.relevance).sentence.text
        return sentences[0].text if sentences else ""

    return quote


def answer_question(
    question: str,
    hits: Sequence[Hit],
    *,
    llm: ChatClient | None = None,
    group_by: str | None = None,
    context_tokens: int = DEFAULT_CONTEXT_TOKENS,
    on_token: Callable[[str], None] | None = None,
    fallback: bool = True,
    stream: bool = True,
    count_tokens: Callable[[str], int] = approx_tokens,
    max_sentences: int = 4,
    max_chars: int = 600,
    no_sources_text: str = NO_SOURCES_TEXT,
    page: Page | None = None,
    common: CommonNames | None = None,
    per_document: bool = False,
) -> Answer:
    """Answer `question` from `hits` (best first), with checked citations; `page` reads a
    hit's other chunks for the extractive answer's example (`examples.find_example`);
    `common` says which names the documents hold throughout (`support.check_support`);
    `per_document`: the extractive answer speaks for every document of the hits (the N
    newest documents of a `latest` search)."""
    question = check_question(question)
    if not hits:
        return Answer(question, no_sources_text, (), "extractive", flags=(FLAG_NO_SOURCES,))

    def extractive() -> Answer:
        return answer_extractive(
            question,
            hits,
            group_by=group_by,
            max_sentences=max_sentences,
            max_chars=max_chars,
            page=page,
            per_document=per_document,
        )

    if llm is None:
        return extractive()
    prompt = build_prompt(
        question, hits, context_tokens=context_tokens, count_tokens=count_tokens, group_by=group_by
    )
    try:
        result = llm.stream(prompt.messages, on_token) if stream else llm.complete(prompt.messages)
    except ChatUnreachable as exc:
        if not fallback:
            raise
        log.warning("%s; answering extractively instead", exc)
        fallen_back = extractive()
        return replace(fallen_back, flags=(*fallen_back.flags, FLAG_LLM_UNREACHABLE))
    supported = check_support(result.text, prompt.sources, question, common)
    checked = check_citations(supported.text, prompt.sources, _best_sentence(question))
    unsupported = tuple(
        Unsupported(d.claim, prompt.sources[d.n - 1].path, d.support) for d in supported.unsupported
    )
    flags = checked.flags + ((FLAG_UNSUPPORTED,) if unsupported else ())
    flags += (FLAG_TRUNCATED,) if result.truncated else ()
    flags += (FLAG_INCOMPLETE,) if result.cut_off else ()
    return Answer(
        question,
        checked.text,
        checked.citations,
        "llm",
        model=result.model,
        usage=result.usage,
        flags=flags,
        removed_citations=checked.removed,
        unsupported=unsupported,
        group_by=group_by,
    )


def answer(
    question: str,
    result: SearchResult,
    settings: Settings,
    *,
    on_token: Callable[[str], None] | None = None,
    fallback: bool | None = None,
    llm: ChatClient | None = None,
    stream: bool = True,
) -> Answer:
    """Answer `question` from a search result (see `answer_question`).

    `llm`: the chat model (default: `chat_client(settings)`; None there: extractive).
    `fallback`: answer extractively when the model is unreachable (default: the settings'
    `answer_fallback`). No hits: "No sources matched these filters." (or "... the
    question." without filters), flagged `no-sources`.
    """
    client = llm if llm is not None else chat_client(settings)
    if fallback is None:
        fallback = settings.answer_fallback == "extractive"
    found = answer_question(
        question,
        result.hits,
        llm=client,
        group_by=result.group_field,
        context_tokens=settings.answer_context_tokens,
        on_token=on_token,
        fallback=fallback,
        stream=stream,
        no_sources_text=NO_SOURCES_TEXT if result.filters.is_empty else NO_MATCH_TEXT,
        page=page_reader(settings),
        common=common_names(settings),
        per_document=result.order == "latest",
    )
    return replace(found, warnings=result.warnings) if result.warnings else found


def page_reader(settings: Settings) -> Page:
    """A hit's page as the local state indexed it: the file's chunks in the hit's collection
    and source, in line order (at most `MAX_PAGE_CHUNKS`); [] when the state does not hold
    them (another machine's records on a shared Chroma server, no state yet)."""

    def read(hit: Hit) -> Sequence[Hit]:
        from ..retrieve.access import get_document

        try:
            return get_document(
                settings, hit.path, hit.source, MAX_PAGE_CHUNKS, hit.collection or None
            )
        except ChromasyncError as exc:
            log.debug("no page for %s's example: %s", hit.path, exc)
            return []

    return read


#: A name in at least this share of the indexed chunks is what the documents are about
#: ("Hugo" in 37% of Hugo's docs' chunks; "Vatican" in 1 of 3,233): an answer may name it
#: where its sources do not.
COMMON_NAME_SHARE = 0.05


def common_names(settings: Settings) -> CommonNames:
    """Of some names (lower-case words), those the local keyword index holds in at least
    `COMMON_NAME_SHARE` of its chunks (and two); none when the state cannot be read."""

    def common(names: Sequence[str]) -> set[str]:
        from ..retrieve.bm25 import KeywordIndex
        from ..state.manifest import State

        try:
            with State.open(settings.data_dir, readonly=True) as state:
                index = KeywordIndex(state.db)
                floor = max(2.0, COMMON_NAME_SHARE * index.size())
                counts = index.document_counts(names)
        except (ChromasyncError, sqlite3.Error) as exc:
            log.debug("no common names: %s", exc)
            return set()
        return {name for name, count in counts.items() if count >= floor}

    return common


def ask(
    args: SearchArgs,
    settings: Settings,
    *,
    on_token: Callable[[str], None] | None = None,
    fallback: bool | None = None,
    llm: ChatClient | None = None,
    embedder: Embedder | None = None,
    search: Callable[[SearchArgs], SearchResult] | None = None,
) -> Answer:
    """Search with `args` (its query is the question), then answer with citations (see
    `answer`) by `settings`' chat model (or `llm`): the caller's, wherever `search` runs (an
    index's, `owner.index.Index`; else in process). The question is checked here, once,
    before anything is searched (every `ask` surface comes through here)."""
    from ..retrieve.request import search_request
    from ..retrieve.session import retrieve

    check_question(args.query)
    if args.feedback is None:  # ask's default, chosen on SciFact and NFCorpus (retrieval.md)
        args = replace(args, feedback=args.mode == "hybrid")
    if search is not None:
        result = search(args)
    else:
        result = retrieve(search_request(args, settings), settings, embedder=embedder)
    return answer(args.query, result, settings, on_token=on_token, fallback=fallback, llm=llm)


__all__ = [
    "MAX_QUESTION_CHARS",
    "NO_MATCH_TEXT",
    "NO_SOURCES_TEXT",
    "answer",
    "answer_question",
    "ask",
    "check_question",
    "common_names",
    "page_reader",
]
