"""The NATS client of `chromasync nats`: one connection at a time, rebuilt with backoff.

Design notes: docs/internals.md, `nats/runner.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nats
import nats.js.errors
from nats.errors import MaxPayloadError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType
from nats.js.errors import NotFoundError

from ..config.settings import Settings
from ..errors import ConfigError, shown_url
from ..owner.service import Service
from ..records import SourceSpec
from .errors import BadMessage, error_reply
from .events import place, reconnect_delay, redeliver_delay, subject_matches
from .handlers import Handlers
from .payloads import ChangeEvent, encode, parse

log = logging.getLogger(__name__)

#: Requests answered at once; more wait in the subscription's queue.
MAX_IN_FLIGHT = 64
WORKERS = 8


def connect_options(settings: Settings) -> dict[str, Any]:
    """nats-py's `connect` arguments from the settings (reconnecting is `Bridge`'s job)."""
    servers = [u.strip() for u in settings.nats_url.split(",") if u.strip()]
    options: dict[str, Any] = {
        "servers": servers,
        "name": "chromasync",
        "allow_reconnect": False,
        "connect_timeout": 5,
        # nats-py tries each server this many times more before it gives up (0 would
        # mean forever); the waits between connections are `Bridge.run`'s backoff
        "max_reconnect_attempts": 1,
        "reconnect_time_wait": 0,
    }
    if settings.nats_token:
        options["token"] = settings.nats_token
    if settings.nats_user:
        options["user"] = settings.nats_user
        options["password"] = settings.nats_password or ""
    if settings.nats_creds:
        creds = Path(settings.nats_creds).expanduser()
        if not creds.is_file():
            raise ConfigError(
                f"nats_creds {str(creds)!r} is not a file; give a NATS credentials file"
            )
        options["user_credentials"] = str(creds)
    return options


class JetStreamMissing(Exception):
    """The server answers, but not with JetStream (off, or the stream refused)."""


class Bridge:
    """Change events and requests between one NATS server and the owner's `Service`."""

    def __init__(
        self,
        service: Service,
        specs: Sequence[SourceSpec],
        *,
        say: Callable[[str], None] = lambda line: None,
        rand: Callable[[], float] = random.random,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.service = service
        self.settings = service.settings
        self.specs = {s.label: s for s in specs}
        self.subjects = tuple(
            s.strip() for s in self.settings.nats_event_subjects.split(",") if s.strip()
        )
        self.handlers = Handlers(service, self.settings, self.roots)
        self.counts: Counter[str] = Counter()
        self._say = say
        self._rand = rand
        self._sleep = sleep
        self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="chromasync-nats")
        self._tasks: set[asyncio.Task[None]] = set()
        service.source_listeners.append(self.add)
        service.removal_listeners.append(self.remove)

    # -- sources -------------------------------------------------------------------------

    def add(self, spec: SourceSpec) -> None:
        self.specs[spec.label] = spec

    def remove(self, label: str) -> None:
        self.specs.pop(label, None)

    def roots(self) -> Mapping[str, str]:
        return {label: os.path.realpath(s.root) for label, s in self.specs.items()}

    # -- life ----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Connect, work, and connect again after a failure, until `stop` is set."""
        attempt = 0
        url = shown_url(self.settings.nats_url)

        def connected() -> None:
            nonlocal attempt
            attempt = 0
            self._say(
                f"chromasync nats: connected to {url}; events from {', '.join(self.subjects)} "
                f"(stream {self.settings.nats_stream}, durable {self.settings.nats_durable}); "
                f"requests on {self.settings.nats_retrieve_subject} and "
                f"{self.settings.nats_ask_subject}"
            )

        try:
            while not stop.is_set():
                try:
                    await self._session(stop, connected)
                except (TimeoutError, OSError, nats.errors.Error, JetStreamMissing) as exc:
                    attempt += 1
                    wait = reconnect_delay(attempt, self._rand())
                    self.counts["reconnects"] += 1
                    why = str(exc) if isinstance(exc, JetStreamMissing) else _what(exc)
                    self._say(
                        f"chromasync nats: no session with {url} ({why}); "
                        f"retrying in {wait:.2f} s (attempt {attempt})"
                    )
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), wait)
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)

    async def _session(self, stop: asyncio.Event, connected: Callable[[], None]) -> None:
        closed = asyncio.Event()

        async def on_closed() -> None:
            closed.set()

        async def on_error(exc: Exception) -> None:
            # a refused connection is `run`'s line (with its backoff); anything else here
            log.log(
                logging.DEBUG if isinstance(exc, OSError) else logging.WARNING,
                "nats: %s",
                _what(exc),
            )

        nc = await nats.connect(
            **connect_options(self.settings),
            closed_cb=on_closed,
            disconnected_cb=on_closed,
            error_cb=on_error,
        )
        try:
            js = nc.jetstream(timeout=5)
            try:
                await self._ensure_consumer(js)
                pull = await js.pull_subscribe_bind(
                    durable=self.settings.nats_durable, stream=self.settings.nats_stream
                )
            except nats.js.errors.Error as exc:
                raise JetStreamMissing(
                    f"JetStream refused the stream {self.settings.nats_stream} or its consumer: "
                    f"{_what(exc)}; is JetStream on (nats-server -js)?"
                ) from exc
            queue = self.settings.nats_queue
            for subject, handler in (
                (self.settings.nats_retrieve_subject, self.handlers.retrieve),
                (self.settings.nats_ask_subject, self.handlers.ask),
            ):
                await nc.subscribe(subject, queue=queue, cb=self._request_cb(handler))
            await nc.flush(timeout=5)
            connected()
            await self._consume(pull, stop, closed)
        finally:
            if self._tasks:
                await asyncio.wait(set(self._tasks), timeout=30)
            if not nc.is_closed:
                with contextlib.suppress(Exception):
                    await nc.close()
        if not stop.is_set():
            raise nats.errors.ConnectionClosedError()

    async def _ensure_consumer(self, js: Any) -> None:
        """The stream of change events (created with the event subjects when missing) and
        the durable consumer (created when missing; its position is the server's)."""
        stream, durable = self.settings.nats_stream, self.settings.nats_durable
        try:
            info = await js.stream_info(stream)
        except NotFoundError:
            await js.add_stream(name=stream, subjects=list(self.subjects), storage=StorageType.FILE)
            self._say(f"chromasync nats: created stream {stream} for {', '.join(self.subjects)}")
        else:
            taken = list(info.config.subjects or [])
            missing = [s for s in self.subjects if not any(subject_matches(p, s) for p in taken)]
            if missing:
                log.warning(
                    "nats: stream %s does not hold %s; events there are not seen",
                    stream,
                    ", ".join(missing),
                )
            asked = (self.settings.nats_retrieve_subject, self.settings.nats_ask_subject)
            captured = [s for s in asked if any(subject_matches(p, s) for p in taken)]
            if captured:  # JetStream would answer each request with its PubAck, first
                self._say(
                    f"chromasync nats: warning: stream {stream} also stores "
                    f"{', '.join(captured)}; its acknowledgements would answer requests "
                    "before chromasync does: give the stream only the event subjects"
                )
        try:
            await js.consumer_info(stream, durable)
        except NotFoundError:
            config = ConsumerConfig(
                durable_name=durable,
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=self.settings.nats_ack_wait_s,
                max_ack_pending=max(1000, self.settings.nats_batch_max * 4),
            )
            await js.add_consumer(stream, config)

    # -- events --------------------------------------------------------------------------

    async def _consume(self, pull: Any, stop: asyncio.Event, closed: asyncio.Event) -> None:
        most = self.settings.nats_batch_max
        while not stop.is_set() and not closed.is_set():
            try:
                msgs = await pull.fetch(most, timeout=1.0)
            except (TimeoutError, NatsTimeout):
                continue
            if len(msgs) < most and self.settings.nats_batch_s > 0:
                await asyncio.sleep(self.settings.nats_batch_s)  # the rest of a burst
                with contextlib.suppress(TimeoutError, NatsTimeout):
                    msgs += await pull.fetch(most - len(msgs), timeout=0.05)
            await self._apply(msgs)

    def _skip(self, subject: str, kind: str, message: str) -> None:
        self.counts[f"skipped_{kind}"] += 1
        self._say(f"chromasync nats: skipped an event on {subject}: {kind}: {message}")

    async def _apply(self, msgs: Sequence[Any]) -> None:
        """One batch: one sync of the sources its files lie in, then the acks."""
        wanted: list[Any] = []
        labels: set[str] = set()
        roots = self.roots()
        for msg in msgs:
            if msg.subject not in self.subjects:
                self.counts["skipped_other_subject"] += 1
                await msg.ack()
                continue
            try:
                event = parse(ChangeEvent, msg.data, self.settings.nats_max_message_bytes)
            except BadMessage as exc:
                self._skip(msg.subject, exc.kind, exc.message)
                await msg.term()
                continue
            placed = place(event.paths, roots, self.handlers.corpus_root, os.path.realpath)
            for path in placed.outside:
                self._skip(
                    msg.subject,
                    "outside_sources",
                    f"{path!r} lies in no source (sources: {', '.join(sorted(roots)) or 'none'})",
                )
            if not placed.labels:
                await msg.ack()  # nothing of it to apply: skipped (and counted) above
                continue
            labels.update(placed.labels)
            wanted.append(msg)
        if not wanted:
            return
        specs = [self.specs[label] for label in sorted(labels) if label in self.specs]
        loop = asyncio.get_running_loop()
        job_id = await loop.run_in_executor(self._pool, self.service.submit, specs, "nats")
        job = await self._wait(job_id, wanted)
        if job["status"] == "done":
            for msg in wanted:
                await msg.ack()
            self.counts["events_applied"] += len(wanted)
            return
        self.counts["syncs_failed"] += 1
        for msg in wanted:
            await msg.nak(delay=redeliver_delay(msg.metadata.num_delivered))
        self._say(
            f"chromasync nats: the sync of {', '.join(s.label for s in specs)} failed "
            f"({job.get('error')}); its {len(wanted)} event(s) come again"
        )

    async def _wait(self, job_id: str, msgs: Sequence[Any]) -> dict[str, Any]:
        """The finished job, keeping its messages in progress meanwhile."""
        loop = asyncio.get_running_loop()
        beat = max(1.0, self.settings.nats_ack_wait_s / 3)
        while True:
            state = await loop.run_in_executor(self._pool, self.service.wait, job_id, beat)
            job = state.as_json()
            if job["status"] in ("done", "failed"):
                return job
            for msg in msgs:
                await msg.in_progress()

    # -- requests ------------------------------------------------------------------------

    def _request_cb(
        self, handler: Callable[[bytes], dict[str, Any]]
    ) -> Callable[[Any], Awaitable[None]]:
        slots = asyncio.Semaphore(MAX_IN_FLIGHT)

        async def received(msg: Any) -> None:
            await slots.acquire()  # the subscription waits while every slot is taken
            task = asyncio.create_task(self._answer(msg, handler, slots))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        return received

    async def _answer(
        self, msg: Any, handler: Callable[[bytes], dict[str, Any]], slots: asyncio.Semaphore
    ) -> None:
        try:
            if not msg.reply:
                self.counts["requests_without_reply"] += 1
                return
            reply = await asyncio.get_running_loop().run_in_executor(self._pool, handler, msg.data)
            self.counts["errors" if "error" in reply else "requests"] += 1
            try:
                await msg.respond(encode(reply))
            except MaxPayloadError:
                refused = error_reply(
                    "too_large",
                    "the reply is larger than the server accepts; ask for fewer hits (top_k) "
                    "or leave the text out (include_chunks: false)",
                )
                await msg.respond(encode(refused))
        except (OSError, nats.errors.Error) as exc:
            log.warning("nats: could not answer on %s: %s", msg.subject, _what(exc))
        finally:
            slots.release()


def _what(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


__all__ = ["Bridge", "JetStreamMissing", "connect_options", "shown_url"]
