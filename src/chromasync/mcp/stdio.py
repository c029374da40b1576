"""MCP over stdio (`chromasync mcp`): the SDK's loop, answering a line that is no message."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..config.settings import Settings
from .backend import Backend
from .tools import build_server

log = logging.getLogger(__name__)


def error_reply(exc: Exception) -> Any:
    """The JSON-RPC error answering a line that is not a message: -32700 when it is not
    JSON, -32600 when it is JSON but no JSON-RPC message (the id is unknown: null)."""
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    kinds = {e.get("type") for e in getattr(exc, "errors", lambda: [])()}
    if "json_invalid" in kinds or not kinds:
        error = ErrorData(code=-32700, message="Parse error: the line is not valid JSON")
    else:
        error = ErrorData(code=-32600, message="Invalid Request: not a JSON-RPC 2.0 message")
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))


async def _serve_stdio(server: Any) -> None:
    """The SDK's stdio loop, except that a line that is not a message gets an error reply
    (the SDK drops it silently): the transport's exceptions are answered on its own
    write stream, messages pass on to the server."""
    import anyio
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        log.debug("mcp: unparseable line: %s", item)
                        await write_stream.send(error_reply(item))
                    else:
                        await send.send(item)

        lowlevel = server._lowlevel_server
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pump)
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()


def run_stdio(settings: Settings, reload: Callable[[], Settings] | None = None) -> None:
    """Serve MCP over stdin/stdout until the client closes the stream."""
    import anyio

    backend = Backend(settings, reload)
    try:
        anyio.run(_serve_stdio, build_server(backend))
    finally:
        backend.close()
