"""The config file once read: each setting's value with the line it came from, the declared
sources and the places' descriptions (records only; `file.load_config_file` makes them, after
checking the file at the trust boundary, and `resolve.resolve_settings` takes them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class FileValue:
    """One setting read from the config file, with the line it came from."""

    value: Any
    line: int
    key: str = ""  # the dotted key it was read from (`search.duplicate_threshold`)


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """A parsed, validated config file (made by `file.load_config_file`).

    `settings` maps Settings field names to values; `sources` are the declared sources,
    already validated (`file.SourceEntry`), with paths resolved against the file's
    folder.
    """

    path: Path
    settings: Mapping[str, FileValue] = field(default_factory=dict)
    sources: tuple[Any, ...] = ()
    sources_file: Path | None = None
    found_by: str = ""  # "--config", "CHROMASYNC_CONFIG" or "current folder"
    allow_roots: tuple[Path, ...] = ()  # `serve.allow_roots`: where clients may add sources
    inputs: tuple[tuple[str, bytes], ...] = ()  # (path, bytes) of each file read to make it
    #: (place, description): `place` is a source label or `label/path/prefix`; from each
    #: source's `context` field and the top-level `context:` mapping (see `context_for`).
    contexts: tuple[tuple[str, str], ...] = ()

    def context_for(self, source: str, path: str) -> str | None:
        """The description of the most specific place holding `source`'s `path`, or None."""
        full = f"{source}/{path}"
        best: tuple[int, str] | None = None
        for place, text in self.contexts:
            stem = place.rstrip("/")
            inside = full == stem or full.startswith(stem + "/")
            if inside and (best is None or len(stem) > best[0]):
                best = (len(stem), text)
        return best[1] if best else None

    def origin(self, line: int) -> str:
        return f"file {self.path}:{line}"
