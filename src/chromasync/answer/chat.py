"""A client for any OpenAI-compatible `/v1/chat/completions` endpoint.

Design notes: docs/internals.md, `answer/chat.py`.
"""

from __future__ import annotations

import json
import logging
import random as _random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from ..errors import AnswerError, ChatRefused, ChatUnreachable, ConfigError, shown_url
from ..retry import Deadline, GaveUp, Refused, RetryingTransport, RetryPolicy, read_capped
from .prompt import Message

if TYPE_CHECKING:
    from ..config.settings import Settings

log = logging.getLogger(__name__)

KEY_VARIABLES = ("CHROMASYNC_LLM_API_KEY", "OPENAI_API_KEY")
DEFAULT_TIMEOUT_S = 120.0
#: The most characters of answer read from a model (the rest is dropped, flagged).
MAX_ANSWER_CHARS = 100_000
#: The most bytes of a whole (non-streamed) answer, checked while it is read.
MAX_BODY_BYTES = 4_000_000
#: The most bytes of a streamed answer (events carry JSON around each token).
MAX_STREAM_BYTES = 32_000_000
#: The most bytes of an error response read for its message.
MAX_ERROR_BYTES = 64 * 1024


#: The most bytes of one line of a stream.
MAX_LINE_BYTES = 1_000_000


def read_lines(chunks: Iterable[bytes], max_line: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The LF-ended lines of a byte stream (CR before LF dropped), decoded as UTF-8, holding
    at most one line (plus one piece, `httpx.Response.iter_raw`'s) at a time: a line longer
    than `max_line` bytes raises `ValueError` as soon as that many bytes are held."""
    pending = bytearray()
    for chunk in chunks:
        cut = chunk.rfind(b"\n")
        if cut < 0:
            pending += chunk
        else:
            lines = (bytes(pending) + chunk[:cut]).split(b"\n")
            pending = bytearray(chunk[cut + 1 :])
            for line in lines:
                if len(line) > max_line:
                    raise ValueError(f"a line of the stream is over {max_line} bytes")
                yield line.removesuffix(b"\r").decode("utf-8", errors="replace")
        if len(pending) > max_line:
            raise ValueError(f"a line of the stream is over {max_line} bytes")
    if pending:
        yield bytes(pending).removesuffix(b"\r").decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class ChatResult:
    text: str
    model: str
    usage: Mapping[str, int] = field(default_factory=dict)
    finish_reason: str | None = None
    truncated: bool = False
    first_token_s: float | None = None  # streaming: seconds until the first content
    cut_off: bool = False  # streaming: ended without [DONE], or stopped at the deadline


@dataclass(frozen=True, slots=True)
class Delta:
    """One parsed stream event: some content, and/or usage, the finish reason or the model."""

    content: str = ""
    usage: Mapping[str, int] | None = None
    finish_reason: str | None = None
    model: str | None = None


def _usage(data: Any) -> dict[str, int]:
    if not isinstance(data, dict):
        return {}
    return {k: int(v) for k, v in data.items() if isinstance(v, int) and not isinstance(v, bool)}


def parse_sse(lines: Iterable[str], done: list[bool] | None = None) -> Iterator[Delta]:
    """The events of a chat-completions stream: `data:` lines up to `[DONE]`.

    Comments (``:``), ``event:``/``id:`` lines and blank lines are skipped; a `data:` line
    that is not JSON raises `ValueError`; an ``{"error": ...}`` event raises `AnswerError`.
    `done`, when given, gets True appended when ``[DONE]`` is read.
    """
    for line in lines:
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            if done is not None:
                done.append(True)
            return
        if not payload:
            continue
        event = json.loads(payload)
        if not isinstance(event, dict):
            raise ValueError("a stream event is not an object")
        if "error" in event:
            error = event["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise AnswerError(f"the model stopped with an error: {str(message)[:300]}")
        choices = event.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        delta = choice.get("delta") or {}
        content = delta.get("content") if isinstance(delta, dict) else None
        yield Delta(
            content=content if isinstance(content, str) else "",
            usage=_usage(event["usage"]) if event.get("usage") else None,
            finish_reason=choice.get("finish_reason"),
            model=event.get("model") if isinstance(event.get("model"), str) else None,
        )


class ChatClient:
    """Chat completions at `url` (a base URL like ``http://localhost:11434/v1``, or the full
    ``.../chat/completions`` URL) with `model`."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        connect_timeout_s: float = 10.0,
        retry: RetryPolicy | None = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        random: Callable[[], float] = _random.random,
    ) -> None:
        url = url.rstrip("/")
        self.endpoint = url if url.endswith("/chat/completions") else f"{url}/chat/completions"
        self.model = model
        self._api_key = api_key
        self._timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, connect_timeout_s))
        self.timeout_s = timeout_s
        self._retry = retry or RetryPolicy(attempts=4, deadline_s=30.0)
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._transport = transport
        self._sleep = sleep
        self._clock = clock
        self._random = random

    def __repr__(self) -> str:  # never the key
        return f"ChatClient({shown_url(self.endpoint)!r}, model={self.model!r})"

    def _http(self, deadline: float) -> httpx.Client:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": "identity",
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        inner = self._transport or httpx.HTTPTransport(verify=True)
        transport = RetryingTransport(
            inner,
            self._retry,
            sleep=self._sleep,
            clock=time.time,
            random=self._random,
            deadline=deadline,
            monotonic=self._clock,
        )
        return httpx.Client(transport=transport, timeout=self._timeout, headers=headers)

    def _body(self, messages: Sequence[Message], stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.as_json() for m in messages],
            "stream": stream,
        }
        if self._temperature is not None:
            body["temperature"] = self._temperature
        if self._max_tokens is not None:
            body["max_tokens"] = self._max_tokens
        return body

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _where(self) -> str:
        return f"chat model {self.model!r} at {shown_url(self.endpoint)}"

    def _wrap(self, exc: Exception) -> AnswerError:
        where = self._where()
        if isinstance(exc, Refused):
            return ChatRefused(
                f"{where}: the API key was refused (HTTP {exc.status}); set "
                f"{' or '.join(KEY_VARIABLES)} to a key this endpoint accepts"
            )
        if isinstance(exc, GaveUp):
            return ChatUnreachable(
                f"{where}: {self._redact(str(exc))}; is the server running and reachable?"
            )
        if isinstance(exc, httpx.TimeoutException):
            return ChatUnreachable(f"{where}: timed out ({type(exc).__name__}); retry later")
        if isinstance(exc, httpx.TransportError):
            return ChatUnreachable(f"{where}: {type(exc).__name__}: {self._redact(str(exc))}")
        return AnswerError(f"{where}: {type(exc).__name__}: {self._redact(str(exc))}")

    def _check(self, response: httpx.Response) -> None:
        if response.status_code != 200:
            body = b""
            for chunk in response.iter_raw():
                body += chunk
                if len(body) >= MAX_ERROR_BYTES:
                    break
            text = _error_text(body[:MAX_ERROR_BYTES])
            raise AnswerError(f"{self._where()}: HTTP {response.status_code}: {self._redact(text)}")
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise AnswerError(
                f"{self._where()}: the answer is compressed ({encoding}) though identity was "
                "asked for; configure the server or proxy not to compress it"
            )

    @contextmanager
    def _post(
        self, messages: Sequence[Message], stream: bool, deadline: float, malformed: str
    ) -> Iterator[httpx.Response]:
        """The response to `messages`, checked; any failure an `AnswerError` (`malformed`)."""
        try:
            with (
                self._http(deadline) as http,
                http.stream("POST", self.endpoint, json=self._body(messages, stream)) as response,
            ):
                self._check(response)
                yield response
        except AnswerError:
            raise
        except (Refused, GaveUp, httpx.HTTPError) as exc:
            raise self._wrap(exc) from exc
        except ValueError as exc:
            raise AnswerError(f"{self._where()}: {malformed} ({exc})") from exc

    def complete(self, messages: Sequence[Message]) -> ChatResult:
        """The whole answer in one response (no streaming), read within `MAX_BODY_BYTES`
        and the deadline."""
        deadline = self._clock() + self.timeout_s
        too_big = AnswerError(f"{self._where()}: the answer is over {MAX_BODY_BYTES} B")
        with self._post(messages, False, deadline, "the answer is not JSON") as response:
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
                raise too_big
            with Deadline(deadline - self._clock()) as watch:
                watch.watch(response)
                try:
                    body = read_capped(response.iter_raw(), MAX_BODY_BYTES)
                except httpx.HTTPError:
                    if watch.expired:
                        raise self._late() from None
                    raise
            if watch.expired:
                raise self._late()
            if body is None:
                raise too_big
            data = json.loads(body)
        try:
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
            if not isinstance(content, str):
                raise TypeError("content is not a string")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise AnswerError(
                f"{self._where()}: the answer is not a chat completion ({exc!r})"
            ) from exc
        truncated = len(content) > MAX_ANSWER_CHARS
        return ChatResult(
            text=content[:MAX_ANSWER_CHARS],
            model=str(data.get("model") or self.model),
            usage=_usage(data.get("usage")),
            finish_reason=choice.get("finish_reason"),
            truncated=truncated,
        )

    def stream(
        self, messages: Sequence[Message], on_token: Callable[[str], None] | None = None
    ) -> ChatResult:
        """The answer streamed: each piece of content goes to `on_token` as it arrives.

        Reading stops at `MAX_ANSWER_CHARS` of content or `MAX_STREAM_BYTES` of stream
        (`truncated`) and at the deadline (`cut_off`); a stream that ends without
        ``[DONE]`` or a finish reason is `cut_off` too. One that fails or passes the
        deadline before any content raises `ChatUnreachable`."""
        began = self._clock()
        deadline = began + self.timeout_s
        parts: list[str] = []
        size = 0
        first: float | None = None
        usage: Mapping[str, int] = {}
        finish: str | None = None
        model = self.model
        truncated = False
        done: list[bool] = []
        seen = 0

        def counted(chunks: Iterable[bytes]) -> Iterator[bytes]:
            nonlocal seen, truncated
            for chunk in chunks:
                seen += len(chunk)
                if seen > MAX_STREAM_BYTES:
                    truncated = True
                    return
                yield chunk

        with self._post(messages, True, deadline, "a malformed stream") as response:
            with Deadline(deadline - self._clock()) as watch:
                watch.watch(response)
                try:
                    events = parse_sse(read_lines(counted(response.iter_raw())), done)
                    for delta in events:
                        if delta.model:
                            model = delta.model
                        if delta.usage is not None:
                            usage = delta.usage
                        if delta.finish_reason:
                            finish = delta.finish_reason
                        if delta.content:
                            piece = delta.content[: MAX_ANSWER_CHARS - size]
                            if first is None:
                                first = self._clock() - began
                            parts.append(piece)
                            size += len(piece)
                            if on_token is not None and piece:
                                on_token(piece)
                            if len(piece) < len(delta.content):
                                truncated = True
                        if truncated or watch.expired or self._clock() >= deadline:
                            break
                except httpx.HTTPError:
                    if not parts:
                        if watch.expired:
                            raise self._late() from None
                        raise
                expired = watch.expired or self._clock() >= deadline
            if expired and not parts:
                raise self._late()
        cut_off = not truncated and (expired or not (done or finish))
        return ChatResult("".join(parts), model, usage, finish, truncated, first, cut_off)

    def _late(self) -> ChatUnreachable:
        return ChatUnreachable(
            f"{self._where()}: no answer within the {self.timeout_s:g} s deadline "
            "(llm_timeout); retry later or raise it"
        )


def _error_text(body: bytes) -> str:
    try:
        data = json.loads(body)
        error = data.get("error", data) if isinstance(data, dict) else data
        message = error.get("message", error) if isinstance(error, dict) else error
        return str(message)[:300]
    except ValueError:
        return body.decode("utf-8", errors="replace")[:300]


def chat_client(settings: Settings) -> ChatClient | None:
    """The chat model of the settings (`llm_url`, `llm_model`, key from the environment via
    `llm_api_key`), or None when no `llm_url` is set (answers are then extractive)."""
    if not settings.llm_url:
        return None
    if not settings.llm_model:
        raise ConfigError(
            f"llm_url is set ({settings.origins.get('llm_url', 'flag')}) but no llm_model; "
            "pass --llm-model or set CHROMASYNC_LLM_MODEL (or answer.llm_model)"
        )
    return ChatClient(
        settings.llm_url,
        settings.llm_model,
        api_key=settings.llm_api_key,
        timeout_s=settings.llm_timeout,
        retry=RetryPolicy(attempts=settings.llm_retries, deadline_s=settings.llm_timeout),
    )


__all__ = [
    "KEY_VARIABLES",
    "MAX_LINE_BYTES",
    "AnswerError",
    "ChatClient",
    "ChatRefused",
    "ChatResult",
    "ChatUnreachable",
    "Delta",
    "chat_client",
    "parse_sse",
    "read_lines",
]
