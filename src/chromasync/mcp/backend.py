"""`Backend`: the index as an MCP server reaches it, through the data dir's owner or as the
owner (the same for stdio and HTTP)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..config.settings import Settings
from ..owner.index import Index, owner_client
from ..owner.service import Service

if TYPE_CHECKING:
    from ..rest.server import BackgroundServer


class Backend:
    """The index as this MCP server reaches it: through the owner, or as the owner."""

    def __init__(self, settings: Settings, reload: Callable[[], Settings] | None = None) -> None:
        self.settings = settings
        self._reload = reload
        self._lock = threading.Lock()
        self._service: Service | None = None
        self._server: BackgroundServer | None = None

    @contextlib.contextmanager
    def access(self) -> Iterator[Index]:
        """The index (`owner.index.Index`): this process's service when it owns the data
        dir (it becomes the owner at the first call when none runs), else the owner's
        client."""
        client = None
        with self._lock:
            if self._service is None:
                client = owner_client(self.settings)
                if client is None:
                    self._become_owner()
            service = self._service
        if client is None:
            assert service is not None
            yield service
            return
        with client:
            yield client

    def _become_owner(self) -> None:
        from .. import rest

        service = Service(self.settings, "mcp", reload=self._reload).open()
        try:
            listener = rest.bind_unix(str(service.socket))
            server = rest.BackgroundServer(
                rest.create_app(service, token=service.settings.api_token), [listener]
            )
            server.start()
        except BaseException:
            service.close()
            raise
        self._service, self._server = service, server

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
        if self._service is not None:
            self._service.close()
