"""The search daemon's own routes, beside the REST API on its socket (`cli.daemon`).

`POST /daemon/keys`: the full CLI registers the command-line key of the console script's
stdlib client (`fastsearch.daemon_search`), after the daemon checked that the CLI's settings
are its own. `GET /daemon/search`: a search rendered as `chromasync search` prints it, for
that client: `/search`'s parameters, how to render, and a registered key. A key names the
config file's bytes but not those of a sources file it names (finding that one needs the
YAML parser the client has not loaded), so the daemon checks, as the snapshot fast paths do
(`state.snapshots.consulted_unchanged`), that every file its settings were read from is
as it read it; else it refuses, and the CLI, whose settings key differs now, replaces it.
"""

from __future__ import annotations

import inspect
import io
from typing import Annotated, Any, Literal

from fastapi import Body, Depends, FastAPI, Header, Query, Request

from .. import api
from ..errors import ConfigError
from ..owner.daemon import KeyRing
from ..owner.service import Service
from ..rest import search_query
from ..retrieve.editor import open_urls
from ..state.snapshots import consulted_unchanged
from .search import render_search

#: `/daemon/search`'s own parameters, besides `/search`'s.
_OWN = frozenset({"render", "explain", "tty", "width", "color"})


def add_daemon_routes(app: FastAPI, service: Service, keys: KeyRing, key: str) -> None:
    """The daemon's own routes (see the module docstring) on its REST app."""

    @app.post("/daemon/keys", include_in_schema=False)
    def register(
        client_key: Annotated[str, Body(alias="key", min_length=1, max_length=128)],
        settings: Annotated[str, Body(min_length=1, max_length=128)],
    ) -> dict[str, bool]:
        if settings != key:
            raise ConfigError("this daemon runs with other settings")
        keys.add(client_key)
        return {"ok": True}

    # what `/daemon/search` takes: `/search`'s parameters and its own (a parameter it would
    # ignore is refused instead, so the client leaves that command line to the CLI)
    known = set(inspect.signature(search_query).parameters) | _OWN

    @app.get("/daemon/search", include_in_schema=False)
    def search(
        request: Request,
        args: Annotated[api.SearchArgs, Depends(search_query)],
        render: Annotated[Literal["json", "plain", "files", "files0", "rich"], Query()] = "plain",
        explain: Annotated[bool, Query()] = False,
        tty: Annotated[bool, Query()] = False,
        width: Annotated[int, Query(ge=20, le=1000)] = 80,
        color: Annotated[Literal["none", "standard", "256", "truecolor"] | None, Query()] = None,
        x_chromasync_key: Annotated[str, Header(max_length=128)] = "",
    ) -> dict[str, Any]:
        if x_chromasync_key not in keys:
            raise ConfigError("unknown command-line key: the full CLI registers it first")
        unknown = sorted(set(request.query_params) - known)
        if unknown:
            raise ConfigError(f"the daemon does not take {', '.join(unknown)}: the CLI runs it")
        settings = service.settings
        read = settings.config_file.inputs if settings.config_file is not None else ()
        if not consulted_unchanged(read):
            raise ConfigError("a file these settings were read from changed: the CLI runs it")
        result = service.search(args)
        out = io.StringIO()
        render_search(
            result,
            render,
            explain=explain,
            links=open_urls(settings, result.hits) if settings.editor_uri else None,
            out=out,
            tty=tty,
            width=width,
            color=None if color in (None, "none") else color,
        )
        return {"stdout": out.getvalue(), "warnings": list(result.warnings)}


__all__ = ["add_daemon_routes"]
