"""The search daemon's side in the full CLI: its settings key, its idle clock, its start.

docs/peers.md ("The search daemon") tells the design; its process is `cli.daemon`, its
stdlib parts `dial`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable, Mapping
from typing import Any

from .. import __version__
from ..config.settings import Settings
from .dial import ROLE, START_TIMEOUT, frozen, make_way, safe_socket, spawn, wait_listening
from .locate import OwnerInfo, find_owner

#: Settings a daemon's searches do not depend on (the chat model's: `ask` answers in its
#: own process, `IN_PROCESS`; the config file counts by its bytes).
_NOT_KEYED = frozenset(
    {"config_file", "origins", "llm_url", "llm_model", "llm_api_key", "llm_timeout"}
    | {"llm_retries", "answer_context_tokens", "answer_fallback"}
)
#: Settings an owner of another role (serve, watch, mcp, nats) leaves to its callers, who
#: apply them on their side (`owner.client`: chat model, editor links, date fields, token),
#: or that change no answer (where the data dir is, deadlines, caches, NATS).
_CALLERS = _NOT_KEYED | {
    *("data_dir", "editor_uri", "date_fields", "api_token", "chroma_timeout", "chroma_retries"),
    *("cache_max_entries", "cache_dir", "batch_size", "plan_ahead", "keyword_refresh_s"),
}
#: `Index` operations that use the chat settings: never sent to a daemon.
IN_PROCESS = frozenset({"ask", "summaries"})


def settings_key(settings: Settings, owner: bool = False) -> str:
    """What a daemon's answers depend on besides the request: every setting but
    `_NOT_KEYED`, the config files read, this code (a digest: secrets only hashed).
    `owner`: what another owner's answers depend on: every setting but `_CALLERS`, which
    config file it reads (it re-reads its sources when they change)."""
    free = _CALLERS if owner else _NOT_KEYED
    fields = {
        f.name: getattr(settings, f.name)
        for f in dataclasses.fields(settings)
        if f.name not in free and not (owner and f.name.startswith("nats_"))
    }
    inputs: object = settings.config_file.inputs if settings.config_file is not None else ()
    if owner:
        inputs = str(settings.config_file.path) if settings.config_file is not None else ""
    folders = [_files_of(settings.rerank_model), _files_of(settings.model)]
    material = repr((__version__, sorted((k, repr(v)) for k, v in fields.items()), inputs))
    return hashlib.sha256(f"{material}{folders}".encode("utf-8", "surrogatepass")).hexdigest()


def _files_of(folder: str | None) -> list[tuple[str, int, int]]:
    """(name, size, mtime) of the files of the model folder a setting names (none for a
    model's name): a model replaced in place is another model, as an edited config file."""
    import os

    try:
        with os.scandir(os.path.expanduser(folder or "")) as entries:
            stats = [(e.name, e.stat()) for e in entries if e.is_file()]
    except OSError:  # no folder: a model's name (or none)
        return []
    return sorted((name, st.st_size, st.st_mtime_ns) for name, st in stats)[:100]


def exit_when_idle(
    server: Any,
    timeout: float,
    leave: Callable[[], bool],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Stop the uvicorn `server` after `timeout` seconds without a request (counted from
    when it listens; never while one is in flight), or at once when `leave()` says so."""
    step = min(0.05, max(timeout / 10, 0.01))
    while not server.should_exit and not server.started:
        sleep(step)
    seen: tuple[int, int] | None = None
    last = clock()
    while not server.should_exit:
        state = server.server_state
        now = (state.total_requests, len(state.tasks))
        if now != seen or now[1]:
            seen, last = now, clock()
        if clock() - last >= timeout or leave():
            server.should_exit = True
            return
        sleep(step)


def answers(info: OwnerInfo) -> bool:
    """The owner can answer a request: not frozen (SIGSTOP), its socket safe to talk to."""
    return not frozen(info.pid) and safe_socket(info.socket)


def ensure(
    settings: Settings,
    flags: Mapping[str, Any],
    timeout: float = START_TIMEOUT,
    on_start: Callable[[], None] | None = None,
) -> OwnerInfo | None:
    """The owner to send this command's requests to: the running owner (serve, watch, mcp,
    or a daemon with these settings), else a new daemon (one of other settings leaves
    first); None when it did not come up in `timeout` seconds or cannot answer."""
    key = settings_key(settings)
    info = find_owner(settings.data_dir)
    if info is not None and not answers(info):
        return None  # frozen, or an unsafe socket: this command runs in its own process
    if info is not None and (info.role != ROLE or info.key == key):
        return info
    data_dir = str(settings.data_dir)
    if info is not None:
        make_way(data_dir)
    if on_start is not None:
        on_start()
    wait_listening(data_dir, spawn(data_dir, flags), timeout)
    info = find_owner(settings.data_dir)
    return info if info is not None and (info.role != ROLE or info.key == key) else None


__all__ = ["IN_PROCESS", "ROLE", "answers", "ensure", "exit_when_idle", "settings_key"]
