"""The long-running commands: `chromasync serve`, `chromasync watch`, `chromasync mcp`.

Each of them owns the data dir while it runs (see `owner`): it holds the lock, serves the
REST API on the owner socket for the other local processes, and runs every ingest on one
worker. `serve` also listens on TCP (127.0.0.1:8765 by default) and serves the search page;
`serve --watch` keeps the sources in sync as `watch` does. `mcp` serves over stdio, or with
`--http` over streamable HTTP (127.0.0.1:8766 by default); it becomes the owner at its first
tool call unless another process owns the data dir (then it goes through that one).
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from .. import api
from ..datadir import TOKEN_FILE
from ..errors import ConfigError, LockError
from ..owner.daemon import ROLE as DAEMON_ROLE
from ..owner.locate import find_owner, service_token
from ..records import SourceSpec
from .common import (
    import_extra,
    reported_errors,
    settings_from_flags,
    stderr_console,
    store_options,
)

DEFAULT_PORT = 8765
#: `chromasync mcp --http` (mcp.DEFAULT_HTTP_PORT; not imported here: the mcp extra is lazy)
DEFAULT_MCP_PORT = 8766


def _refuse_exposed(host: str, settings: api.Settings, allow_no_token: bool) -> None:
    """A usage error when other machines reach `host` and no CHROMASYNC_API_TOKEN is set."""
    if host == "localhost" or settings.api_token or allow_no_token:
        return
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host.strip("[]")).is_loopback:
            return
    raise click.UsageError(
        f"--host {host} is reachable from other machines; set CHROMASYNC_API_TOKEN "
        "(or pass --allow-no-token)"
    )


def _allowed_hosts(host: str) -> list[str] | None:
    if host in ("0.0.0.0", "::", "[::]"):  # noqa: S104 - the user asked for every interface
        return None
    return list(dict.fromkeys([host, "127.0.0.1", "localhost", "::1", "[::1]"]))


def _service_token(settings: api.Settings, no_auth: bool) -> tuple[str | None, bool]:
    """The token a service requires, and whether it is the data dir's own (made or kept in
    `api-token`) rather than CHROMASYNC_API_TOKEN; (None, False) with --no-auth."""
    if no_auth:
        return None, False
    if settings.api_token:
        return settings.api_token, False
    return service_token(settings.data_dir, create=True), True


def _token_words(token: str | None, made: bool, settings: api.Settings) -> str:
    if not token:
        return "no token required (--no-auth)"
    if made:
        return f"token required (in {settings.data_dir / TOKEN_FILE}, which the CLI reads)"
    return "token required"


def _report(job: dict[str, Any]) -> None:
    """One line per finished job on stderr."""
    if job["status"] == "failed":
        click.echo(f"sync of {', '.join(job['sources'])} failed: {job['error']}", err=True)
        return
    for s in job["summaries"]:
        took = (s["duration_ms"] or 0) / 1000
        click.echo(
            f"synced {s['source']}: {s['files_new']} new, {s['files_updated']} updated, "
            f"{s['files_deleted']} deleted, {s['files_unchanged']} unchanged; "
            f"{s['chunks_embedded']} chunk(s) embedded ({took:.2f}s) [{job['trigger']}]",
            err=True,
        )


def _start_watcher(
    service: Any, specs: Sequence[SourceSpec], debounce: float, max_delay: float
) -> Any:
    watcher = import_extra("watch", "the file watcher", "serve", "watchdog").Watcher(
        specs,
        lambda changed: service.submit(changed, "watch"),
        debounce=debounce,
        max_delay=max_delay,
        ignore=[service.settings.data_dir],
    )
    service.source_listeners.append(watcher.add)
    service.removal_listeners.append(watcher.remove)
    watcher.start()
    for spec in specs:  # catch up with what changed while nobody watched
        service.submit([spec], "watch")
    return watcher


debounce_option = click.option(
    "--debounce",
    default=0.3,
    show_default=True,
    type=click.FloatRange(0.01, 60),
    help="Seconds a source must be quiet before it is synced.",
)
max_delay_option = click.option(
    "--max-delay",
    default=2.0,
    show_default=True,
    type=click.FloatRange(0.05, 600),
    help="Sync a busy source at least this often (seconds).",
)
allow_no_token_option = click.option(
    "--allow-no-token",
    is_flag=True,
    help="Allow a non-loopback --host without CHROMASYNC_API_TOKEN (not recommended).",
)


@click.command()
@store_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option(
    "--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535), help="Port."
)
@click.option(
    "--allow-root",
    "allow_roots",
    multiple=True,
    type=click.Path(file_okay=False, exists=True),
    help="A folder under which POST /sources may add sources (repeatable; also the config "
    "file's serve.allow_roots).",
)
@click.option("--watch", "watch_sources", is_flag=True, help="Keep the sources in sync as well.")
@debounce_option
@max_delay_option
@click.option(
    "--nats",
    "nats_bridge",
    is_flag=True,
    help="Also apply change events from NATS and answer requests there, as `chromasync nats`.",
)
@allow_no_token_option
@click.option(
    "--no-auth",
    is_flag=True,
    help="Require no token (any local user may read the index). Without it and without "
    "CHROMASYNC_API_TOKEN, a token is made on first start and kept in the data dir.",
)
def serve(
    host: str,
    port: int,
    allow_roots: Sequence[str],
    watch_sources: bool,
    debounce: float,
    max_delay: float,
    nats_bridge: bool,
    allow_no_token: bool,
    no_auth: bool,
    **flags: Any,
) -> None:
    """Serve the REST API and the search page (and own the data dir while running).

    Every route but /health and the page shell needs `Authorization: Bearer <token>`: the
    CHROMASYNC_API_TOKEN, else the token made on first start and kept in the data dir's
    `api-token` (the CLI reads it; the printed page URL carries it), unless --no-auth.
    """
    from ..owner.service import Service

    with reported_errors():
        settings = settings_from_flags(**flags)
        token, made = _service_token(settings, no_auth)
        if nats_bridge:
            from .bridge import import_bridge

            import_bridge().connect_options(settings)  # a missing credentials file fails now
    _refuse_exposed(host, settings, allow_no_token)
    with reported_errors():
        from .. import rest
    # SIGINT or SIGTERM at any moment (before uvicorn takes over its signals too) leaves cleanly
    with reported_errors(), rest.StopSignals() as stop:
        owner = find_owner(settings.data_dir)
        if owner is not None and owner.role != DAEMON_ROLE:  # the daemon makes way (lock)
            raise LockError(
                f"the data dir {str(settings.data_dir)!r} is owned by {owner.describe()}; "
                "use that one (or stop it first)"
            )
        tcp = rest.bind_tcp(host, port)
        shown_host = f"[{host}]" if ":" in host and not host.startswith("[") else host
        url = f"http://{shown_host}:{tcp.getsockname()[1]}"
        roots = [Path(r) for r in allow_roots]
        if settings.config_file is not None:
            roots += list(settings.config_file.allow_roots)
        with Service(settings, "serve", url=url, allow_roots=roots, on_finish=_report) as service:
            unix = rest.bind_unix(service.socket)
            watcher = bridge = None
            if watch_sources:
                watcher = _start_watcher(service, service.source_specs(), debounce, max_delay)
            if nats_bridge:
                from .bridge import BridgeThread

                bridge = BridgeThread(service, service.source_specs())
            app = rest.create_app(service, token=token, allowed_hosts=_allowed_hosts(host))
            page = f"{url}/#token={token}" if made else url
            stderr_console().print(
                f"chromasync serve: {page} (search page at /, API docs at /docs); "
                f"owns {settings.data_dir}; {_token_words(token, made, settings)}"
                + ("; watching sources" if watcher else "")
                + ("; on NATS" if bridge else ""),
                soft_wrap=True,
            )
            try:
                rest.run_server([tcp, unix], stop.server(app))
            finally:
                if watcher is not None:
                    watcher.stop()
                if bridge is not None:
                    bridge.stop()
    stderr_console().print("chromasync serve: stopped")


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(file_okay=False, exists=True))
@store_options
@click.option("--source", "labels", multiple=True, help="Watch only this known source.")
@debounce_option
@max_delay_option
def watch(
    paths: Sequence[str], labels: Sequence[str], debounce: float, max_delay: float, **flags: Any
) -> None:
    """Keep sources in sync as their files change, until Ctrl-C.

    Watches each PATH (one source per folder), or the sources indexed before. Other
    commands reach the index through this process while it runs.
    """
    from ..owner.service import Service

    with reported_errors():
        from .. import rest

        settings = settings_from_flags(**flags)
        with (
            rest.StopSignals() as stop,
            Service(
                settings, "watch", on_finish=_report, reload=lambda: settings_from_flags(**flags)
            ) as service,
        ):
            specs = [api.source_for(p) for p in paths] or service.source_specs(labels)
            if not specs:
                raise ConfigError("nothing to watch: give a PATH, or ingest a source first")
            unix = rest.bind_unix(service.socket)
            watcher = _start_watcher(service, specs, debounce, max_delay)
            app = rest.create_app(service, token=settings.api_token)
            names = ", ".join(s.label for s in specs)
            stderr_console().print(f"chromasync watch: watching {names}; Ctrl-C to stop")
            try:
                rest.run_server([unix], stop.server(app))
            finally:
                watcher.stop()
    stderr_console().print("chromasync watch: stopped")


@click.command("mcp")
@store_options
@click.option("--http", "http", is_flag=True, help="Serve over streamable HTTP, not stdio.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on (with --http).",
)
@click.option(
    "--port",
    default=DEFAULT_MCP_PORT,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port (with --http).",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    help="An Origin (scheme://host[:port]) allowed besides loopback pages (with --http; "
    "repeatable).",
)
@allow_no_token_option
@click.option(
    "--no-auth",
    is_flag=True,
    help="Require no token (with --http). Without it and without CHROMASYNC_API_TOKEN, the "
    "data dir's token is required (made on first start, in its `api-token`).",
)
@click.pass_context
def mcp_command(
    ctx: click.Context,
    /,
    http: bool,
    host: str,
    port: int,
    allow_origins: Sequence[str],
    allow_no_token: bool,
    no_auth: bool,
    **flags: Any,
) -> None:
    """Serve the Model Context Protocol over stdio, or with --http over streamable HTTP at
    http://HOST:PORT/mcp (tools: search, ask, list_sources, get_document, get, multi_get,
    links, suggest, summaries, reindex).

    Over HTTP, a request whose Origin is neither a loopback page nor an --allow-origin is
    refused, as is one whose Host is not HOST or a loopback name, and every request needs
    `Authorization: Bearer <token>`: CHROMASYNC_API_TOKEN, else the data dir's own token
    (made on first start, in its `api-token`), unless --no-auth.
    """
    http_only = ("host", "port", "allow_origins", "allow_no_token", "no_auth")
    given = [
        name
        for name in http_only
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
    ]
    if given and not http:
        option = "--" + given[0].removesuffix("s").replace("_", "-")
        raise click.UsageError(f"{option} only applies with --http")
    with reported_errors():
        settings = settings_from_flags(**flags)
        token, made = _service_token(settings, no_auth) if http else (None, False)
    if http:
        _refuse_exposed(host, settings, allow_no_token)
    with reported_errors():
        server = import_extra("mcp", "the MCP server", "serve", "mcp")
        if not http:
            server.run_stdio(settings, reload=lambda: settings_from_flags(**flags))
            return

        def listening(url: str) -> None:
            click.echo(
                f"chromasync mcp: {url} (streamable HTTP); {_token_words(token, made, settings)}",
                err=True,
            )

        with contextlib.suppress(KeyboardInterrupt):
            server.run_http(
                settings,
                host,
                port,
                allowed_hosts=_allowed_hosts(host),
                allowed_origins=allow_origins,
                reload=lambda: settings_from_flags(**flags),
                on_listen=listening,
                token=token,
            )
    click.echo("chromasync mcp: stopped", err=True)


__all__ = ["mcp_command", "serve", "watch"]
