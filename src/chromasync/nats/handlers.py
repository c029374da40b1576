"""The answers to requests: parse the message, call the index seam once, render the reply.

Design notes: docs/internals.md, `nats/handlers.py`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from ..config.settings import Settings
from ..errors import ChromasyncError
from ..owner.index import Index
from .errors import BadMessage, reply_for
from .payloads import (
    AskRequest,
    NatsFields,
    RetrieveRequest,
    clients_of,
    hit_reply,
    parse,
    search_args,
)

log = logging.getLogger(__name__)


class Handlers:
    """Requests over one index (`owner.index.Index`: the owner's `Service`)."""

    def __init__(self, index: Index, settings: Settings, roots: Callable[[], Mapping[str, str]]):
        self.index = index
        self.settings = settings
        self.fields = NatsFields.of(settings.nats_fields)
        self.clients = clients_of(settings.nats_clients)
        self._roots = roots
        root = settings.nats_corpus_root
        self.corpus_root = os.path.realpath(root) if root else None

    def retrieve(self, data: bytes) -> dict[str, Any]:
        """`corpus.retrieve.requested`: the hits of a hybrid search."""
        try:
            request = parse(RetrieveRequest, data, self.settings.nats_max_message_bytes)
            args = search_args(request, self.fields, self.clients)
            result = self.index.search(args)
            roots, keep = self._roots(), request.include_chunks
            hits = [hit_reply(h, self.fields, keep, roots, self.corpus_root) for h in result.hits]
            return {"hits": hits}
        except (BadMessage, ChromasyncError) as exc:
            return reply_for(exc)
        except Exception as exc:  # a request must not take the service down
            log.exception("nats: a retrieve request failed")
            return reply_for(exc)

    def ask(self, data: bytes) -> dict[str, Any]:
        """The ask subject: an answer with its citations (`[n]` in the text)."""
        try:
            request = parse(AskRequest, data, self.settings.nats_max_message_bytes)
            args = search_args(request, self.fields, self.clients)
            fallback = None if request.fallback is None else request.fallback == "extractive"
            return self.index.ask(args, fallback=fallback).as_json()
        except (BadMessage, ChromasyncError) as exc:
            return reply_for(exc)
        except Exception as exc:  # a request must not take the service down
            log.exception("nats: an ask request failed")
            return reply_for(exc)


__all__ = ["Handlers"]
