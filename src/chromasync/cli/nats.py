"""`chromasync nats`: own the data dir, apply change events from NATS, answer requests on it.

Like `watch`, it holds the data dir's lock while it runs and serves the REST API on the owner
socket, so the other commands reach the index through it; every sync runs on the owner's one
worker. The NATS side (`nats.runner.Bridge`) runs on an event loop of its own thread; Ctrl-C
(or SIGTERM) stops both. docs/nats.md has the subjects, the payloads and the settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from .. import api
from ..errors import ConfigError
from .bridge import BridgeThread, import_bridge
from .common import (
    reported_errors,
    setting_option,
    settings_from_flags,
    stderr_console,
    store_options,
)
from .service import _report


@click.command("nats")
@click.argument("paths", nargs=-1, type=click.Path(file_okay=False, exists=True))
@store_options
@click.option("--source", "labels", multiple=True, help="Only this known source (repeatable).")
@setting_option("nats_url", "--url")
def nats_command(paths: Sequence[str], labels: Sequence[str], **flags: Any) -> None:
    """Apply change events from NATS and answer retrieval requests over it, until Ctrl-C.

    Events (corpus.added, corpus.published_at_changed, corpus.removed by default) come
    through a JetStream durable consumer, so those published while this was not running
    are applied when it starts; each burst is one delta sync of the sources its files lie
    in (each PATH is a source; else the sources indexed before). Requests on
    corpus.retrieve.requested get hits; on corpus.ask.requested, a cited answer. The
    credentials: CHROMASYNC_NATS_TOKEN, or nats.user with CHROMASYNC_NATS_PASSWORD, or
    nats.creds_file (docs/nats.md).
    """
    from ..owner.service import Service

    with reported_errors():
        from .. import rest

        settings = settings_from_flags(**flags)
        import_bridge().connect_options(settings)  # a missing credentials file fails now
        with (
            rest.StopSignals() as stopping,
            Service(
                settings, "nats", on_finish=_report, reload=lambda: settings_from_flags(**flags)
            ) as service,
        ):
            specs = [api.source_for(p) for p in paths] or service.source_specs(labels)
            if not specs:
                raise ConfigError("no sources: give a PATH, or ingest a source first")
            unix = rest.bind_unix(service.socket)
            app = rest.create_app(service, token=settings.api_token)
            server = stopping.server(app)
            bridge = BridgeThread(service, specs)
            try:
                names = ", ".join(s.label for s in specs)
                stderr_console().print(f"chromasync nats: syncing {names}; Ctrl-C to stop")
                rest.run_server([unix], server)
            finally:
                bridge.stop()
    stderr_console().print("chromasync nats: stopped")


__all__ = ["BridgeThread", "nats_command"]
