"""The `openai` provider: any OpenAI-compatible `/v1/embeddings` endpoint.

Design notes: docs/internals.md, `embed/openai.py`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import EmbeddingError, shown_url
from ..retry import Deadline, GaveUp, Refused, RetryingTransport, RetryPolicy, read_capped
from . import Embedder

log = logging.getLogger(__name__)

DEFAULT_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"
_PROBE = "chromasync dimension probe"
#: The most bytes of one answer: a batch of 2,048 vectors of 3,072 floats written out.
MAX_ANSWER_BYTES = 256 * 1024 * 1024
_ERROR_BYTES = 64 * 1024


class OpenAIEmbedder(Embedder):
    name = "openai"
    model_id: str = "openai"  # set per model
    tokenizer_path: str | None = None

    def __init__(
        self,
        url: str = DEFAULT_URL,
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        dimension: int | None = None,
        batch_size: int = 64,
        max_tokens: int = 256,
        tokenizer_path: str | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        if batch_size < 1:
            raise EmbeddingError("openai provider: batch_size must be at least 1")
        url = url.rstrip("/")
        self.endpoint = url if url.endswith("/embeddings") else f"{url}/embeddings"
        self.model = model
        self.model_id = f"openai:{model}"
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self._api_key = api_key
        self._dimension = dimension
        self.tokenizer_path = tokenizer_path
        self._timeout_s = timeout_s
        self._retry = retry or RetryPolicy()
        self.requests = 0
        self.texts_embedded = 0

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> OpenAIEmbedder:
        def number(key: str, default: Any, kind: type = int) -> Any:
            value = options.get(key)
            if value in (None, ""):
                return default
            try:
                return kind(value)
            except (TypeError, ValueError):
                raise EmbeddingError(
                    f"openai provider: option {key} must be a number, got {value!r}"
                ) from None

        return cls(
            url=str(options.get("url") or DEFAULT_URL),
            model=str(options.get("model") or DEFAULT_MODEL),
            api_key=options.get("api_key") or None,
            dimension=number("dimension", None),
            batch_size=number("batch_size", 64),
            max_tokens=number("max_tokens", 256),
            tokenizer_path=options.get("tokenizer_path") or None,
            timeout_s=number("timeout", 60.0, float),
        )

    def __repr__(self) -> str:  # never the key
        return f"OpenAIEmbedder({shown_url(self.endpoint)!r}, model={self.model!r})"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            with self._http() as http:
                self._dimension = len(self._request(http, [_PROBE])[0])
            log.info(
                "%s at %s: dimension %d", self.model_id, shown_url(self.endpoint), self._dimension
            )
        return self._dimension

    def _http(self) -> Any:
        """A client for one call (its connections are closed when the call ends)."""
        import httpx

        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return httpx.Client(
            transport=RetryingTransport(
                httpx.HTTPTransport(verify=True), self._retry, total_s=self._timeout_s
            ),
            timeout=httpx.Timeout(self._timeout_s, connect=min(self._timeout_s, 10.0)),
            headers=headers,
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _fail(self, what: str) -> EmbeddingError:
        return EmbeddingError(
            f"openai provider ({self.model!r} at {shown_url(self.endpoint)}): {self._redact(what)}"
        )

    def _request(self, http: Any, texts: Sequence[str]) -> list[list[float]]:
        import httpx

        body = {"model": self.model, "input": list(texts), "encoding_format": "float"}
        started = time.monotonic()
        try:
            with http.stream("POST", self.endpoint, json=body) as response:
                cap = MAX_ANSWER_BYTES if response.status_code == 200 else _ERROR_BYTES
                left = self._timeout_s - (time.monotonic() - started)
                with Deadline(left) as watch:
                    watch.watch(response)
                    try:
                        data = read_capped(response.iter_raw(), cap)
                    except httpx.HTTPError:
                        if not watch.expired:
                            raise
                        data = None
                if watch.expired:
                    raise self._fail(f"no whole answer within the {self._timeout_s:g} s timeout")
        except Refused as exc:
            raise self._fail(
                f"the API key was refused (HTTP {exc.status}); set CHROMASYNC_OPENAI_API_KEY "
                "or OPENAI_API_KEY"
            ) from exc
        except GaveUp as exc:
            raise self._fail(f"{exc}; the endpoint is unreachable or overloaded") from exc
        except httpx.HTTPError as exc:
            raise self._fail(f"request failed: {type(exc).__name__}: {exc}") from exc
        self.requests += 1
        if response.status_code != 200:
            raise self._fail(f"HTTP {response.status_code}: {_error_text(data or b'')}")
        if data is None:
            raise self._fail(f"the answer is over {MAX_ANSWER_BYTES} bytes")
        try:
            rows = json.loads(data)["data"]
            ordered = sorted(rows, key=lambda row: int(row["index"]))
            vectors = [[float(x) for x in row["embedding"]] for row in ordered]
        except (ValueError, KeyError, TypeError) as exc:
            raise self._fail(f"the answer is not an embeddings list ({exc})") from exc
        if len(vectors) != len(texts):
            raise self._fail(f"asked for {len(texts)} vectors, got {len(vectors)}")
        return vectors

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        with self._http() as http:
            for start in range(0, len(texts), self.batch_size):
                vectors = self._request(http, texts[start : start + self.batch_size])
                for vector in vectors:
                    if self._dimension is None:
                        self._dimension = len(vector)
                    if len(vector) != self._dimension:
                        raise self._fail(
                            f"returned a vector of dimension {len(vector)}, expected "
                            f"{self._dimension}; set the dimension option to the model's"
                        )
                out.extend(vectors)
        self.texts_embedded += len(texts)
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _error_text(body: bytes) -> str:
    try:
        data = json.loads(body)
        error = data.get("error", data)
        message = error.get("message", error) if isinstance(error, dict) else error
        return str(message)[:300]
    except (ValueError, AttributeError):
        return body.decode("utf-8", errors="replace")[:300]
