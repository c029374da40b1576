"""The file and chunk flags `ingest PATH` and `chunk-report` share, in one place.

They are the repository indexer's flags in chromasync's words: which files (`--include`,
`--exclude`, `--no-gitignore`, `--include-hidden`, `--include-extension`,
`--exclude-extension`), how to read them (`--encoding`), and the chunk budget
(`--chunk-size`, the `chunk_max_tokens` setting's flag). `file_fields` turns the file flags
into the fields of a `SourceSpec` (`api.source_for`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from ..errors import ConfigError
from .common import setting_option, stacked

#: The flags `file_options` adds, as the command receives them.
FILE_PARAMS = (
    "include",
    "exclude",
    "no_gitignore",
    "include_hidden",
    "encoding",
    "include_extensions",
    "exclude_extensions",
)


#: The shared file and chunk flags, for a command.
file_options = stacked(
    click.option(
        "--include", multiple=True, help="Only paths matching this git-wildmatch pattern."
    ),
    click.option(
        "--exclude", multiple=True, help="Skip paths matching this git-wildmatch pattern."
    ),
    click.option("--no-gitignore", is_flag=True, help="Do not honour .gitignore files."),
    click.option(
        "--include-hidden",
        is_flag=True,
        help="Walk dotfiles and dot-folders too (never .git or the data dir).",
    ),
    click.option(
        "--include-extension",
        "include_extensions",
        multiple=True,
        metavar="EXT",
        help="Only files with this extension (repeatable; '(none)': README, LICENSE...).",
    ),
    click.option(
        "--exclude-extension",
        "exclude_extensions",
        multiple=True,
        metavar="EXT",
        help="Skip files with this extension (repeatable).",
    ),
    click.option(
        "--encoding",
        help="How to read text that is not UTF-8: detect (Western text, else a "
        "high-confidence charset), utf-8 (none: a counted undecodable skip) or a codec "
        "such as cp1252 [default: detect].",
    ),
    setting_option("chunk_max_tokens", "--chunk-size", metavar="TOKENS"),
)


def take_file_flags(flags: dict[str, Any]) -> dict[str, Any]:
    """The shared flags, taken out of a command's keyword arguments."""
    return {name: flags.pop(name) for name in FILE_PARAMS if name in flags}


def given(file_flags: dict[str, Any]) -> list[str]:
    """The flags among `file_flags` given to the running command, as it spells them (for a
    usage error where no PATH is given)."""
    flag = {p.name: p.opts[0] for p in click.get_current_context().command.params}
    return [flag[name] for name, value in file_flags.items() if value]


def file_fields(file_flags: dict[str, Any]) -> dict[str, Any]:
    """`SourceSpec` fields of the shared flags (`ConfigError` for an unknown encoding)."""
    fields: dict[str, Any] = {
        "include": tuple(file_flags.get("include") or ()),
        "exclude": tuple(file_flags.get("exclude") or ()),
        "use_gitignore": not file_flags.get("no_gitignore"),
        "include_hidden": bool(file_flags.get("include_hidden")),
    }
    encoding = file_flags.get("encoding")
    if encoding:
        from ..config.file import encoding_problem  # pydantic loads only when needed

        problem = encoding_problem(encoding)
        if problem is not None:
            raise ConfigError(f"--encoding: {problem}")
        fields["encoding"] = encoding
    extensions = _extensions(
        file_flags.get("include_extensions") or (), file_flags.get("exclude_extensions") or ()
    )
    if extensions is not None:
        fields["extensions"] = extensions
    return fields


def _extensions(include: Sequence[str], exclude: Sequence[str]) -> tuple[str, ...] | None:
    if not include and not exclude:
        return None
    from ..config.file import normalise_extension
    from ..config.kinds import DEFAULT_EXTENSIONS

    allowed = [normalise_extension(e) for e in include] or [*DEFAULT_EXTENSIONS, ""]
    dropped = {normalise_extension(e) for e in exclude}
    return tuple(e for e in dict.fromkeys(allowed) if e not in dropped)
