"""The NATS side of a long-running owner (`chromasync nats`, `serve --nats`): the bridge on
an event loop of its own thread. Both commands import it from here (neither from the other).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import click

from .common import import_extra


def import_bridge() -> Any:
    """`nats.runner` (the `nats` extra's client)."""
    return import_extra("nats.runner", "the NATS client", "nats", "nats")


class BridgeThread:
    """The NATS side of an owner (`chromasync nats`, `serve --nats`): `nats.runner.Bridge`
    on an event loop of its own thread, started at once; `stop` waits for it."""

    def __init__(self, service: Any, specs: Sequence[Any]) -> None:
        runner = import_bridge()
        self.bridge = runner.Bridge(service, specs, say=lambda line: click.echo(line, err=True))
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._thread = threading.Thread(
            target=self._loop.run_until_complete,
            args=(self.bridge.run(self._stop),),
            name="chromasync-nats-loop",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop, then print what was done (the counts of events, requests and skips)."""
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=60)
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.bridge.counts.items()))
        click.echo(f"chromasync nats: {counts or 'no events'}", err=True)
