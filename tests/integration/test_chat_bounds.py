"""The chat client's bounds against a misbehaving real server on a loopback port: a huge
answer is refused while it is read, an endless stream stops at the answer cap, a dripping
stream and a server that holds the connection stop at the deadline (`timeout_s`, retries
included), a stream cut off before `[DONE]` is flagged (docs/reliability.md, "Outbound
calls")."""

from __future__ import annotations

import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator

import pytest

from chromasync.answer.ask import answer_question
from chromasync.answer.chat import (
    MAX_ANSWER_CHARS,
    MAX_BODY_BYTES,
    AnswerError,
    ChatClient,
    ChatUnreachable,
    read_lines,
)
from chromasync.answer.prompt import Message
from chromasync.retry import RetryPolicy, read_capped
from tests.chat_server import ChatServer, Reply
from tests.integration.test_answer_llm import HITS, QUESTION

HI = [Message("user", "hi")]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as chat:
        yield chat


def client(url: str, timeout_s: float = 10.0, attempts: int = 1) -> ChatClient:
    return ChatClient(
        url, "test-chat", timeout_s=timeout_s, retry=RetryPolicy(attempts=attempts, base_s=0.01)
    )


def test_a_huge_answer_is_refused_while_it_is_read(server: ChatServer) -> None:
    """256 MiB of answer, no Content-Length: the client stops after `MAX_BODY_BYTES` (it
    used to read the whole body first; tracemalloc's peak shows it holds about the cap)."""
    server.add(Reply("fine [1]", pad=256 * 1024 * 1024))
    tracemalloc.start()
    try:
        with pytest.raises(AnswerError, match=f"over {MAX_BODY_BYTES} B"):
            client(server.url).complete(HI)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_BODY_BYTES


def test_an_endless_stream_stops_at_the_answer_cap(server: ChatServer) -> None:
    words = " ".join(["word"] * 2000)
    server.add(Reply(words, endless=True))
    started = time.monotonic()
    result = client(server.url, timeout_s=60.0).stream(HI)
    assert time.monotonic() - started < 30  # the cap, not the deadline, stopped it
    assert len(result.text) == MAX_ANSWER_CHARS
    assert result.truncated and not result.cut_off


def test_a_dripping_stream_returns_by_the_deadline(server: ChatServer) -> None:
    """One token every 0.8 s, `timeout_s` 1.5: what came is kept, flagged `cut_off`, and the
    call returns at the deadline, not at the next token (a per-read timeout never fires)."""
    server.add(Reply("one two three four five six seven", chunk_delay=0.8))
    tokens: list[str] = []
    started = time.monotonic()
    result = client(server.url, timeout_s=1.5).stream(HI, tokens.append)
    elapsed = time.monotonic() - started
    assert 1.4 < elapsed < 3.5  # the whole stream takes 5.6 s; room for a loaded machine
    assert result.cut_off and result.text.startswith("one two")
    assert "seven" not in result.text and "".join(tokens) == result.text
    answer = answer_question(QUESTION, HITS, llm=client(server.url, timeout_s=1.5))
    assert answer.mode == "llm"  # the default reply came in time: no flag
    assert "incomplete" not in answer.flags


@pytest.fixture
def holding_port() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    listener.close()


@pytest.mark.parametrize("stream", [True, False])
def test_a_server_that_holds_the_connection_costs_one_deadline(
    holding_port: int, stream: bool
) -> None:
    """Four attempts allowed, `timeout_s` 1: the whole call gives up after about 1 s (it
    took one read timeout per attempt, 4 s and more, before)."""
    llm = client(f"http://127.0.0.1:{holding_port}/v1", timeout_s=1.0, attempts=4)
    started = time.monotonic()
    with pytest.raises(ChatUnreachable):
        llm.stream(HI) if stream else llm.complete(HI)
    assert time.monotonic() - started < 3.0  # 4 attempts took 4 s and more


def test_a_stream_cut_off_before_done_is_flagged(server: ChatServer) -> None:
    server.add(Reply("Hugo is one binary [1]. It also", no_done=True))
    answer = answer_question(QUESTION, HITS, llm=client(server.url))
    assert answer.text.startswith("Hugo is one binary [1].")
    assert "incomplete" in answer.flags and "incomplete" in answer.as_json()["flags"]
    server.add(Reply("Hugo is one binary [1]."))
    whole = answer_question(QUESTION, HITS, llm=client(server.url))
    assert "incomplete" not in whole.flags


def test_lines_and_bodies_are_capped_while_read() -> None:
    def endless() -> Iterator[bytes]:
        while True:
            yield b"x" * 65536

    with pytest.raises(ValueError, match="over 100000 bytes"):
        list(read_lines(endless(), max_line=100_000))
    assert read_capped(endless(), 1_000_000) is None
    lines = list(read_lines([b"data: a\r\ndata", b": b\n\nlast"]))
    assert lines == ["data: a", "data: b", "", "last"]
