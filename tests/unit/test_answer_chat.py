"""Pure parts of the chat client and the answer seam: SSE parsing, keys, validation."""

from __future__ import annotations

import pytest

from chromasync import api
from chromasync.answer.ask import MAX_QUESTION_CHARS, answer_question
from chromasync.answer.chat import ChatClient, parse_sse
from chromasync.errors import AnswerError, ChromasyncError, ConfigError
from chromasync.records import Hit


def test_parse_sse_reads_data_lines_until_done() -> None:
    lines = [
        ": comment",
        "event: message",
        'data: {"model": "m", "choices": [{"delta": {"role": "assistant"}}]}',
        "",
        'data: {"choices": [{"delta": {"content": "Hel"}}]}',
        'data:{"choices": [{"delta": {"content": "lo [1]"}}]}',
        'data: {"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": {"total_tokens": 5}}',
        "data: [DONE]",
        'data: {"choices": [{"delta": {"content": "after done"}}]}',
    ]
    deltas = list(parse_sse(lines))
    assert "".join(d.content for d in deltas) == "Hello [1]"
    assert deltas[0].model == "m"
    assert deltas[-1].finish_reason == "stop" and deltas[-1].usage == {"total_tokens": 5}


def test_parse_sse_errors() -> None:
    with pytest.raises(ValueError):
        list(parse_sse(["data: {not json"]))
    with pytest.raises(AnswerError, match="overloaded"):
        list(parse_sse(['data: {"error": {"message": "overloaded"}}']))


@pytest.mark.parametrize(
    ("environ", "key"),
    [
        ({}, None),
        ({"OPENAI_API_KEY": "o"}, "o"),
        ({"OPENAI_API_KEY": "o", "CHROMASYNC_LLM_API_KEY": "c"}, "c"),
        ({"OPENAI_API_KEY": "o", "CHROMASYNC_LLM_API_KEY": "  "}, "o"),
    ],
)
def test_key_from_environ(environ: dict[str, str], key: str | None) -> None:
    """The chat key as the settings resolve it (first variable set wins; blanks are unset)."""
    assert api.resolve_settings({}, environ).llm_api_key == key


def test_repr_and_endpoint_never_show_the_key() -> None:
    client = ChatClient("http://localhost:11434/v1/", "llama3", api_key="sk-secret")
    assert client.endpoint == "http://localhost:11434/v1/chat/completions"
    assert "sk-secret" not in repr(client)
    full = ChatClient("http://h:1/v1/chat/completions", "m")
    assert full.endpoint == "http://h:1/v1/chat/completions"


@pytest.mark.parametrize("question", ["", "   \n"])
def test_an_empty_question_is_refused(question: str) -> None:
    with pytest.raises(ConfigError, match="empty"):
        answer_question(question, [])


def test_a_long_question_is_refused() -> None:
    with pytest.raises(ConfigError, match="over the limit"):
        answer_question("x" * (MAX_QUESTION_CHARS + 1), [])
    assert issubclass(AnswerError, ChromasyncError)


def test_no_hits_says_so_without_citations() -> None:
    answer = answer_question("  what is hugo? ", [])
    assert answer.question == "what is hugo?"
    assert answer.text == "No sources matched the question."
    assert answer.citations == () and answer.flags == ("no-sources",)


def test_without_a_model_the_answer_is_extractive() -> None:
    hits = [Hit("a", "a.md", "s", "", 1, 1, 1.0, "Hugo is a static site generator.")]
    answer = answer_question("what is hugo", hits)
    assert answer.mode == "extractive"
    assert answer.text == "Hugo is a static site generator. [1]"
    assert answer.sources == ("a.md:1",)
