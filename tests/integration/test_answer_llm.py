"""The real chat client against a real OpenAI-compatible server on a loopback port.

Covers streaming and not, retries (429 then OK, 500), the timeout, a refused key, a citation
of a source that does not exist, an empty answer and the fallback to the extractive answer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chromasync import api
from chromasync.answer.ask import answer_question, common_names
from chromasync.answer.chat import (
    AnswerError,
    ChatClient,
    ChatRefused,
    ChatUnreachable,
)
from chromasync.answer.prompt import Message
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.records import Hit
from chromasync.retry import RetryPolicy
from tests.chat_server import ChatServer, Reply
from tests.citations import labelled_cases
from tests.servers import free_port

KEY = "sk-test-0123456789"
HITS = [
    Hit(
        "a",
        "docs/install.md",
        "docs",
        "Install",
        10,
        14,
        1.0,
        "Hugo ships as one binary. Install Hugo with your package manager.",
    ),
    Hit(
        "b",
        "docs/themes.md",
        "docs",
        "Themes",
        1,
        3,
        0.9,
        "Themes live in the themes folder. A theme is a Hugo module.",
    ),
    Hit(
        "c",
        "docs/deploy.md",
        "docs",
        "Deploy",
        5,
        5,
        0.8,
        "Hugo writes the site to the public folder.",
    ),
]
QUESTION = "How do I install Hugo?"
FAST_RETRY = RetryPolicy(attempts=3, base_s=0.01, deadline_s=1.0)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(api_key=KEY) as chat:
        yield chat


def client(
    url: str,
    sleeps: list[float] | None = None,
    *,
    timeout_s: float = 2.0,
    retry: RetryPolicy = FAST_RETRY,
) -> ChatClient:
    """The real client, its key from an environment; retry waits recorded, not slept."""
    waits = sleeps if sleeps is not None else []
    return ChatClient(
        url,
        "test-chat",
        api_key=KEY,
        timeout_s=timeout_s,
        retry=retry,
        sleep=waits.append,
    )


def test_non_streaming_answer_with_checked_citations(server: ChatServer) -> None:
    server.add(Reply("Install Hugo with your package manager [2]. It is one binary [2][1]."))
    answer = answer_question(QUESTION, HITS, llm=client(server.url), stream=False)
    assert answer.mode == "llm" and answer.model == "test-chat"
    # Source 2 of the prompt is the themes page: it says nothing of package managers, so that
    # citation is dropped; the short "It is one binary" is not judged. Renumbered by first
    # use: the themes page is [1].
    assert answer.text == "Install Hugo with your package manager. It is one binary [1][2]."
    assert [c.id for c in answer.citations] == ["b", "a"]
    assert [(u.path, u.claim) for u in answer.unsupported] == [
        ("docs/themes.md", "Install Hugo with your package manager")
    ]
    assert answer.usage == {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
    assert answer.flags == ("unsupported-citations",)
    assert answer.as_json()["unsupported_citations"] == 1
    [request] = server.requests
    assert request["stream"] is False and request["model"] == "test-chat"
    assert request["messages"][0]["role"] == "system"
    assert "[1] docs/install.md:10-14 (Install)" in request["messages"][1]["content"]
    assert server.auth_headers == [f"Bearer {KEY}"]


def test_issue_41_a_paraphrase_keeps_its_true_citation(
    server: ChatServer, tmp_path: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    """A chat model's answer over Hugo's strings pages: the paraphrase citing
    strings.Replace keeps [1], though it names Hugo, which no source does but the indexed
    documents hold throughout; the invented year and name lose [2]; [97] names no source."""
    root = tmp_path / "docs"
    root.mkdir()
    for n in range(3):
        (root / f"page{n}.md").write_text(f"# Page {n}\n\nHugo renders page {n} with a template.\n")
    api.ingest([api.source_for(root)], settings, embedder=embedder)
    [(_, _, hits), *_] = labelled_cases()  # strings.Replace, ReplaceRE, ReplacePairs, ...
    text = (
        "In Hugo, use strings.Replace with a count of -1 to replace every occurrence [1]. "
        "It was added to Hugo in 1923 by the Vatican [2]. See also [97]."
    )
    question = "How do I replace text in a string?"
    server.add(Reply(text), Reply(text))
    answer = answer_question(
        question, hits, llm=client(server.url), stream=False, common=common_names(settings)
    )
    assert answer.text == text.replace(" Vatican [2]", " Vatican").replace(" [97]", "")
    assert answer.flags == ("removed-citations", "unsupported-citations")
    assert [c.path for c in answer.citations] == ["functions/strings/Replace.md"]
    assert [u.path for u in answer.unsupported] == ["functions/strings/ReplaceRE.md"]
    assert "no-citations" not in answer.flags
    # without the documents' common names, "Hugo" is a name nothing given holds
    plain = answer_question(question, hits, llm=client(server.url), stream=False)
    assert plain.citations == () and len(plain.unsupported) == 2


def test_streaming_passes_each_token_on(server: ChatServer) -> None:
    text = "Hugo installs from your package manager [1]. Sites deploy from public [3]."
    server.add(Reply(text))
    tokens: list[str] = []
    answer = answer_question(QUESTION, HITS, llm=client(server.url), on_token=tokens.append)
    assert len(tokens) == len(text.split(" ")) and "".join(tokens) == text
    assert (
        answer.text == "Hugo installs from your package manager [1]. Sites deploy from public [2]."
    )
    assert [c.id for c in answer.citations] == ["a", "c"]
    assert answer.citations[0].quote == "Install Hugo with your package manager."
    assert answer.usage["total_tokens"] == 49
    assert server.requests[0]["stream"] is True


def test_429_then_ok_is_retried(server: ChatServer) -> None:
    sleeps: list[float] = []
    server.add(Reply(status=429, headers={"Retry-After": "0"}), Reply("Fine [1]."))
    result = client(server.url, sleeps).complete([Message("user", "hi")])
    assert result.text == "Fine [1]."
    assert len(server.requests) == 2 and len(sleeps) == 1


def test_429_then_ok_while_streaming(server: ChatServer) -> None:
    server.add(Reply(status=429), Reply("Streamed [1]."))
    tokens: list[str] = []
    result = client(server.url).stream([Message("user", "hi")], tokens.append)
    assert "".join(tokens) == result.text == "Streamed [1]."
    assert result.first_token_s is not None


def test_500_until_the_policy_gives_up(server: ChatServer) -> None:
    sleeps: list[float] = []
    server.default = Reply(status=500)
    with pytest.raises(ChatUnreachable, match=r"gave up after 3 attempt.*HTTP 500") as info:
        client(server.url, sleeps).complete([Message("user", "hi")])
    assert len(server.requests) == 3 and len(sleeps) == 2
    assert "127.0.0.1" in str(info.value)


def test_timeout(server: ChatServer) -> None:
    server.add(Reply("late", delay=1.0))
    llm = client(server.url, timeout_s=0.2, retry=RetryPolicy(attempts=1))
    with pytest.raises(ChatUnreachable, match="ReadTimeout"):
        llm.stream([Message("user", "hi")])


def test_a_wrong_key_fails_at_once_without_showing_it() -> None:
    wrong = "sk-wrong-key-abcdef"
    with ChatServer(api_key=KEY) as server:
        llm = ChatClient(server.url, "test-chat", api_key=wrong, sleep=lambda s: None)
        with pytest.raises(ChatRefused) as info:
            llm.stream([Message("user", "hi")])
    message = str(info.value)
    assert "HTTP 401" in message and server.url in message
    assert wrong not in message and KEY not in message
    assert server.auth_headers == [f"Bearer {wrong}"]  # one try, no retry
    # Refused is not "unreachable": answer_question does not hide it behind a fallback.
    with ChatServer(api_key=KEY) as again:
        llm = ChatClient(again.url, "test-chat", api_key=wrong)
        with pytest.raises(ChatRefused):
            answer_question(QUESTION, HITS, llm=llm)


def test_a_citation_of_a_missing_source_is_removed(server: ChatServer) -> None:
    server.add(Reply("Hugo is one binary [1]. It was written on Mars [9]."))
    answer = answer_question(QUESTION, HITS, llm=client(server.url))
    assert answer.text == "Hugo is one binary [1]. It was written on Mars."
    assert answer.removed_citations == 1
    assert answer.flags == ("removed-citations",)
    assert answer.as_json()["removed_citations"] == 1


@pytest.mark.parametrize("stream", [True, False])
def test_an_empty_answer_is_flagged(server: ChatServer, stream: bool) -> None:
    server.add(Reply(""))
    answer = answer_question(QUESTION, HITS, llm=client(server.url), stream=stream)
    assert answer.text == "" and answer.flags == ("empty",) and answer.citations == ()


def test_an_answer_without_citations_is_flagged(server: ChatServer) -> None:
    server.add(Reply("The sources do not cover this."))
    answer = answer_question(QUESTION, HITS, llm=client(server.url))
    assert answer.flags == ("no-citations",)


def test_other_http_errors_are_answer_errors(server: ChatServer) -> None:
    server.add(Reply(status=400))
    with pytest.raises(AnswerError, match="HTTP 400: injected"):
        client(server.url).complete([Message("user", "hi")])


def test_unreachable_falls_back_to_the_extractive_answer() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    llm = client(url, retry=RetryPolicy(attempts=2, base_s=0.01))
    answer = answer_question(QUESTION, HITS, llm=llm)
    assert answer.mode == "extractive"
    assert answer.flags == ("llm-unreachable",)
    assert "Install Hugo with your package manager. [1]" in answer.text
    with pytest.raises(ChatUnreachable, match="ConnectError"):
        answer_question(QUESTION, HITS, llm=llm, fallback=False)


def test_time_to_first_token_is_measured(server: ChatServer) -> None:
    """The first token is timed when it arrives, not when the stream ends: the server sleeps
    0.05 s before each of the later words, so at least 0.15 s separate the two (no absolute
    bound on the first token itself: this machine is shared)."""
    server.add(Reply("one two three four", chunk_delay=0.05))
    started = time.monotonic()
    result = client(server.url).stream([Message("user", "hi")])
    elapsed = time.monotonic() - started
    assert result.first_token_s is not None
    assert elapsed - result.first_token_s >= 0.14
    assert result.text == "one two three four"
