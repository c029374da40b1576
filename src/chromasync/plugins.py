"""Named extensions: one small registry serves embedding providers, rerankers and chunkers.

A `Registry` holds one kind's built-in items by name (`embed.PROVIDERS`,
`retrieve.rerank.RERANKERS`, `chunk.CHUNKERS`). `register` adds or replaces one (a plugin
at import time, or a test); a package adds its own through the kind's entry point group
(`chromasync.providers`, `chromasync.rerankers`, `chromasync.chunkers`), which is read only
when a name is not registered, and once. An unknown name is a `ConfigError` that lists the
known ones. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Items of one kind by name: the built-in ones, registered ones, then entry points."""

    __slots__ = ("_items", "_plugins", "group", "kind")

    def __init__(self, kind: str, group: str, builtins: Mapping[str, T]) -> None:
        self.kind = kind  # for messages: "embedding provider"
        self.group = group  # the entry point group
        self._items: dict[str, T] = dict(builtins)
        self._plugins: dict[str, Any] | None = None

    def register(self, name: str, item: T) -> None:
        """Make `item` available as `name` (it replaces a built-in one of that name)."""
        self._items[name] = item

    def names(self) -> list[str]:
        return sorted(set(self._items) | set(self._entry_points()))

    def find(self, name: str) -> T | None:
        """The item named `name` (an entry point is loaded, and kept), or None."""
        item = self._items.get(name)
        if item is None:
            plugin = self._entry_points().get(name)
            if plugin is None:
                return None
            item = plugin.load()
            self._items[name] = item
        return item

    def get(self, name: str) -> T:
        """The item named `name`; a `ConfigError` naming the known ones when there is none."""
        item = self.find(name)
        if item is None:
            raise ConfigError(
                f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.names())}"
            )
        return item

    def _entry_points(self) -> dict[str, Any]:
        if self._plugins is None:
            from importlib.metadata import entry_points

            self._plugins = {ep.name: ep for ep in entry_points(group=self.group)}
        return self._plugins


__all__ = ["Registry"]
