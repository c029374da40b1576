"""The local-or-owner seam: reach the process that owns a data dir, when one does.

While `chromasync serve`, `watch` or `mcp` owns a data dir, nothing else may open its store;
callers send their requests through the owner's socket instead (see `locate`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..config.settings import Settings
from .locate import find_owner

if TYPE_CHECKING:
    from .client import OwnerClient


def owner_client(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> OwnerClient | None:
    """A client of the process that owns the data dir (serve, watch, mcp), or None.

    While another process owns the data dir, nothing else may open its store: callers send
    their requests through this client instead (see `owner`).
    """
    info = find_owner(settings.data_dir)
    if info is None:
        return None
    from .client import OwnerClient  # httpx loads only when there is an owner to talk to

    environ = os.environ if environ is None else environ
    return OwnerClient(info, token=environ.get("CHROMASYNC_API_TOKEN") or None)
