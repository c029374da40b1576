"""The sources registry: the sources a config file declares, selected and turned into specs.

Sources are declared in the config file (`sources:`), in its compact form (`[chromasync]`
`root`), or in a Markdown sources file (`content_sources:` in the front matter of the file
named by `sources_file`, usually `content-sources.md`). A source is indexed by a plain
`chromasync ingest` when its `include` is true; `--source LABEL` picks sources by label.
Adding and removing a declaration edits the declaring file as text (`sourcesfile`), so
comments and a Markdown body survive.

`configure` finds and loads the config file and a sources file, then resolves the settings
(`resolve.resolve_settings`); `source_for` makes a source of a folder given by hand.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, NotFound, SourceError
from ..records import SourceSpec
from .parsed import ConfigFile
from .resolve import CONFIG_ENV, find_config_file, resolve_settings
from .settings import Settings

if TYPE_CHECKING:
    from .file import SourceEntry


def configured_entries(settings: Settings) -> list[SourceEntry]:
    """Every source the loaded config file declares (in declaration order)."""
    return list(settings.config_file.sources) if settings.config_file is not None else []


def find_entry(entries: Sequence[SourceEntry], label: str) -> SourceEntry:
    for entry in entries:
        if entry.label == label:
            return entry
    labels = [e.label for e in entries]
    close = difflib.get_close_matches(label, labels, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    known = f"; configured: {', '.join(labels)}" if labels else "; no source is configured"
    raise NotFound(f"no source labelled {label!r}{hint}{known}")


def check_labels(labels: Sequence[str], known: Sequence[str]) -> None:
    """Refuse a label that names no known source (a typo), with the closest known label, as
    `ingest -s` does (`find_entry`); `known`: the labels configured or indexed."""
    names = sorted(set(known))
    for label in dict.fromkeys(labels):
        if label in names:
            continue
        close = difflib.get_close_matches(label, names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        listed = f"; known: {', '.join(names)}" if names else "; no source is indexed yet"
        raise NotFound(f"no source labelled {label!r}{hint}{listed}")


def select_entries(entries: Sequence[SourceEntry], labels: Sequence[str] = ()) -> list[SourceEntry]:
    """The `include: true` sources, or exactly those named by `labels` (which must be
    included too: a source marked `include: false` is not indexed by accident)."""
    if not labels:
        return [e for e in entries if e.include]
    chosen: list[SourceEntry] = []
    for label in dict.fromkeys(labels):
        entry = find_entry(entries, label)
        if not entry.include:
            raise ConfigError(
                f"source {label!r} is `include: false` ({entry.declared_in}: line "
                f"{entry.line}); set `include: true` there to index it"
            )
        chosen.append(entry)
    return chosen


def spec_for(entry: SourceEntry, settings: Settings, root: Path | None = None) -> SourceSpec:
    """The `SourceSpec` for an entry; `root` overrides its folder (a git work tree)."""
    folder = root if root is not None else entry.path
    if folder is None:
        raise ConfigError(f"source {entry.label!r} is a repository; sync it before ingesting")
    return SourceSpec(
        label=entry.label,
        root=folder,
        include=entry.include_patterns,
        exclude=entry.exclude_patterns,
        use_gitignore=entry.use_gitignore,
        kind=entry.kind,
        static_metadata=dict(entry.metadata),
        identity_key=entry.identity_key,
        encoding=entry.encoding,
        include_hidden=entry.include_hidden,
        extensions=entry.extensions,
        subdirs=entry.subdirs,
        skip_substrings=settings.skip_paths,
        collection=settings.collection_for(entry.kind, entry.collection),
    )


def declared_path(path: Path, base: Path) -> str:
    """How a folder is written into a file in `base`: relative when inside it."""
    resolved = path.expanduser().resolve()
    try:
        return resolved.relative_to(base.resolve()).as_posix() or "."
    except ValueError:
        return str(resolved)


def add_declaration(target: Path, item: Mapping[str, Any]) -> None:
    """Append one source declaration to a YAML config file or a Markdown sources file."""
    from .sourcesfile import add_to_markdown, add_to_yaml

    if target.suffix.lower() in (".md", ".markdown"):
        add_to_markdown(target, [item])
    elif target.suffix.lower() == ".toml":
        raise ConfigError(
            f"{target}: sources cannot be added to a TOML config; move to chromasync.yaml"
        )
    else:
        add_to_yaml(target, [item])


def remove_declaration(entry: SourceEntry) -> bool:
    """Delete the lines that declare `entry`; False when its form cannot be edited."""
    from .file import load_config_file, load_sources_file
    from .sourcesfile import remove_from_markdown, remove_from_yaml

    path = entry.declared_in
    if entry.form != "list" or path.suffix.lower() == ".toml":
        return False
    if path.suffix.lower() in (".md", ".markdown"):
        siblings: Sequence[SourceEntry] = load_sources_file(path, allow_root=True).entries
        remove = remove_from_markdown
    else:
        loaded = load_config_file(path, allow_root=True)
        siblings = [e for e in loaded.sources if e.declared_in == path and e.form == "list"]
        remove = remove_from_yaml
    for index, sibling in enumerate(siblings):
        if sibling.label == entry.label:
            remove(path, index)
            return True
    return False


def check_new_source(entries: Sequence[SourceEntry], label: str, path: Path) -> None:
    if any(e.label == label for e in entries):
        raise ConfigError(f"a source labelled {label!r} already exists; pass another --label")
    if not path.is_dir():
        raise ConfigError(f"source path {str(path)!r} is not a folder")
    if os.path.realpath(path) == "/":
        raise ConfigError("refusing to add '/' as a source; name a folder inside it")


def with_skips(spec: SourceSpec, settings: Settings) -> SourceSpec:
    """`spec` with the settings' `skip_paths` added to its own skipped substrings."""
    if not settings.skip_paths:
        return spec
    return replace(
        spec, skip_substrings=tuple(dict.fromkeys((*spec.skip_substrings, *settings.skip_paths)))
    )


def configure(
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    *,
    config: str | Path | None = None,
    sources_file: str | Path | None = None,
    allow_root: bool = False,
    active_model: bool = True,
) -> Settings:
    """Settings from flags, the environment and the config file (found by `config`, else
    `CHROMASYNC_CONFIG`, else `chromasync.yaml` in `cwd`), then defaults; with
    `active_model`, the data dir's active model profile's (`config.models.apply_active`).

    `sources_file` adds the sources of a Markdown sources file (`content-sources.md`) to
    those of the config file, or stands in for a config file when there is none.
    """
    environ = os.environ if environ is None else environ
    folder = Path(cwd) if cwd is not None else Path.cwd()
    path = find_config_file(config, environ, folder)
    file = None
    if path is not None or sources_file is not None:  # pydantic loads only when needed
        from .file import distinct_labels, load_config_file, load_sources_file
    if path is not None:
        found_by = "--config" if config else (CONFIG_ENV if environ.get(CONFIG_ENV) else "cwd")
        file = load_config_file(path, found_by=found_by, allow_root=allow_root)
    if sources_file is not None:
        md = Path(sources_file)
        md = md if md.is_absolute() else folder / md
        listed = load_sources_file(md, allow_root=allow_root)
        extra = listed.entries
        if file is None:
            file = ConfigFile(
                path=md,
                sources=extra,
                sources_file=md,
                found_by="--sources-file",
                inputs=listed.inputs,
            )
        elif file.sources_file is None or file.sources_file.resolve() != md.resolve():
            entries = tuple(distinct_labels((*file.sources, *extra)))
            file = replace(
                file, sources=entries, sources_file=md, inputs=file.inputs + listed.inputs
            )
    settings = resolve_settings(flags, environ, file)
    if settings.rerank_model:  # a folder named from `cwd` (a daemon elsewhere reads it too)
        folder_of = str(folder / Path(settings.rerank_model).expanduser())
        settings = replace(settings, rerank_model=folder_of)
    if not active_model:
        return settings
    from .models import apply_active

    return apply_active(settings)


def source_for(path: str | Path, label: str | None = None, **fields: Any) -> SourceSpec:
    """A source for a folder; its label defaults to the folder's name."""
    root = Path(path).expanduser()
    resolved = root.resolve()
    allow_root = bool(fields.pop("allow_root", False))
    if str(resolved) == "/" and not allow_root:
        raise SourceError("refusing to index '/' as a source; name a folder inside it")
    from .labels import check_label

    name = check_label(label or resolved.name or "root")
    return SourceSpec(label=name, root=resolved, **fields)


def collection_of(spec: SourceSpec, settings: Settings) -> str:
    """The collection a source's records live in (see `config` for the naming)."""
    return settings.collection_for(spec.kind, spec.collection)


def selected_sources(settings: Settings, labels: Sequence[str] = ()) -> list[SourceEntry]:
    """The configured sources a plain ingest would run (or those named by `labels`)."""
    return select_entries(configured_entries(settings), labels)
