"""The config file: `chromasync.yaml` (or TOML), validated at the trust boundary.

Design notes: docs/internals.md, `config/file.py`.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..errors import ConfigError
from .check import CONFIG_VERSION, LineMap, line_of, parse_toml, parse_yaml, validate
from .kinds import DEFAULT_EXTENSIONS
from .labels import label_problem
from .parsed import ConfigFile, FileValue
from .safeyaml import MAX_CHARS
from .settings import SETTINGS
from .spec import Setting

Scalar = str | int | float | bool


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


#: The most `metadata` keys a source gives each of its records (a record of more than about
#: 5,400 values breaks a Chroma collection for good).
MAX_SOURCE_KEYS = 64


class SourceModel(_Model):
    label: str | None = None
    path: str | None = None
    repo: str | None = None
    branch: str | None = None
    kind: str = "notes"
    include: bool = True
    subdirs: list[str] = Field(default_factory=list)
    include_patterns: list[str] = Field(default_factory=list)
    exclude_patterns: list[str] = Field(default_factory=list)
    include_extensions: list[str] | None = None
    exclude_extensions: list[str] = Field(default_factory=list)
    collection: str | None = None
    metadata: dict[str, Scalar] = Field(default_factory=dict, max_length=MAX_SOURCE_KEYS)
    identity_key: str | None = None
    use_gitignore: bool = True
    note: str | None = None
    context: str | None = Field(default=None, min_length=1, max_length=2000)
    encoding: str | None = Field(default=None, max_length=64)  # "detect" or a codec
    include_hidden: bool = False


class ServeModel(_Model):
    """`serve:`: folders under which clients of the REST service may add sources."""

    allow_roots: list[str] = Field(default_factory=list)


class _CompactBase(_Model):
    """The `[chromasync]` table: one source at `root`; its settings are added from the
    declaration (`collection`, `data_dir`, `embedding`, `chunking`)."""

    root: str | None = None
    label: str | None = None
    kind: str = "notes"
    subdirs: list[str] = Field(default_factory=list)
    include_patterns: list[str] = Field(default_factory=list)
    exclude_patterns: list[str] = Field(default_factory=list)
    include_extensions: list[str] | None = None
    exclude_extensions: list[str] = Field(default_factory=list)
    metadata: dict[str, Scalar] = Field(default_factory=dict, max_length=MAX_SOURCE_KEYS)
    identity_key: str | None = None


class _ConfigBase(_Model):
    """The file's keys that are not settings; the settings' sections (`store`, `server`,
    `embedding`, `chunking`, `search`, `answer`, ...) are added from the declaration."""

    version: int = CONFIG_VERSION
    sources: list[SourceModel] = Field(default_factory=list)
    sources_file: str | None = None
    serve: ServeModel | None = None
    #: A description per source label or `label/path/prefix`, returned with every hit there.
    context: dict[str, Annotated[str, Field(min_length=1, max_length=2000)]] = Field(
        default_factory=dict, max_length=1000
    )


#: The descriptive keys a sources file's front matter may carry besides `content_sources`
#: (the sources map as sketched); `config show` prints them, nothing else reads them.
ABOUT_KEYS = ("title", "description", "version", "schema_version", "date_created", "date_modified")


class SourcesFileModel(_Model):
    """The front matter of a `content-sources.md` file: its sources and a few descriptive
    keys (`ABOUT_KEYS`); any other key is an error, as everywhere in the config."""

    content_sources: list[SourceModel] | None = Field(default_factory=list)
    title: str | None = Field(default=None, max_length=2000)
    description: str | None = Field(default=None, max_length=2000)
    version: int | None = None
    schema_version: int | float | Annotated[str, Field(max_length=64)] | None = None
    date_created: dt.datetime | dt.date | Annotated[str, Field(max_length=64)] | None = None
    date_modified: dt.datetime | dt.date | Annotated[str, Field(max_length=64)] | None = None


def _schema_type(spec: Setting) -> Any:
    """What the file's schema accepts for a setting: its shape; `spec.check` checks the value
    itself, after precedence, as it checks the environment's."""
    if spec.kind == "strings":
        return list[str] | None
    if spec.kind == "options":
        return dict[str, Scalar | list[Scalar]] | None
    return Any


def _schema(specs: Sequence[Setting]) -> type[BaseModel]:
    """The config file's model: `_ConfigBase` plus a section per declared file key."""
    tree: dict[str, Any] = {}
    for spec in specs:
        for key in spec.file:
            *sections, name = key.split(".")
            node = tree
            for section in sections:
                node = node.setdefault(section, {})
            node[name] = spec
    bases: dict[tuple[str, ...], type[BaseModel]] = {(): _ConfigBase, ("chromasync",): _CompactBase}

    def build(path: tuple[str, ...], node: dict[str, Any]) -> type[BaseModel]:
        made: dict[str, Any] = {}
        for key, item in node.items():
            if isinstance(item, Setting):
                made[key] = (_schema_type(item), None)
            else:
                made[key] = (build((*path, key), item) | None, None)
        name = "".join(p.title() for p in path) + "Model" if path else "ConfigModel"
        return create_model(name, __base__=bases.get(path, _Model), **made)

    return build((), tree)


ConfigModel = _schema(SETTINGS)


@dataclass(frozen=True, slots=True)
class SourceEntry:
    """A declared source, validated, with its path resolved; `line` is where it starts."""

    label: str
    kind: str
    include: bool
    declared_in: Path
    line: int
    path: Path | None = None
    repo: str | None = None
    branch: str | None = None
    subdirs: tuple[str, ...] = ()
    include_patterns: tuple[str, ...] = ()
    exclude_patterns: tuple[str, ...] = ()
    extensions: tuple[str, ...] | None = None
    collection: str | None = None
    metadata: Mapping[str, Scalar] = field(default_factory=dict)
    identity_key: str | None = None
    use_gitignore: bool = True
    note: str | None = None
    context: str | None = None
    encoding: str = "detect"
    include_hidden: bool = False
    raw_path: str = ""
    form: str = "list"  # "list" (sources:/content_sources:) or "compact" ([chromasync] root)
    #: How a label no `label:` names was made ("" when named): `config show` says it.
    label_from: str = ""


# -- loading --------------------------------------------------------------------------------


#: The most bytes of a sources file read (a Markdown note: the corpus's file bound).
MAX_SOURCES_FILE_BYTES = 8 << 20


def read_bounded(path: Path, limit: int) -> bytes:
    """A file's bytes, at most `limit`; a bigger file or a FIFO (whose reading waited for a
    writer for ever) is refused unread (OSError)."""
    with open(path, "rb", opener=lambda at, flags: os.open(at, flags | os.O_NONBLOCK)) as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise OSError("not a regular file")
        raw = file.read(limit + 1)
    if len(raw) > limit:
        raise OSError(f"over {limit // 1024:,} KiB")
    return raw


def load_config_file(
    path: Path, found_by: str = "--config", allow_root: bool = False
) -> ConfigFile:
    """Read, validate and resolve one config file (YAML, or TOML by its suffix)."""
    try:
        raw = read_bounded(path, MAX_CHARS)
        text = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {str(path)!r}: {exc}") from exc
    where = str(path)
    data, lines = (parse_toml if path.suffix.lower() == ".toml" else parse_yaml)(text, where)
    model: Any = validate(ConfigModel, {} if data is None else data, lines, where)
    base = path.parent.resolve()
    settings = _file_settings(model, lines, base)
    entries = [
        source_entry(source, path, line_of(lines, ("sources", index)), base, allow_root)
        for index, source in enumerate(model.sources)
    ]
    compact = model.chromasync
    if compact is not None and compact.root is not None:
        fields = compact.model_dump(
            include={
                "label",
                "kind",
                "collection",
                "subdirs",
                "include_patterns",
                "exclude_patterns",
                "include_extensions",
                "exclude_extensions",
                "metadata",
                "identity_key",
            }
        )
        entry = SourceModel(path=compact.root, **fields)
        line = line_of(lines, ("chromasync", "root"))
        entries.append(replace(source_entry(entry, path, line, base, allow_root), form="compact"))
    sources_file = None
    inputs = [(str(path), raw)]
    if model.sources_file:
        sources_file = _resolve(model.sources_file, base)
        listed = load_sources_file(sources_file, allow_root)
        entries.extend(listed.entries)
        inputs.extend(listed.inputs)
    entries = distinct_labels(entries)
    contexts = [(e.label, e.context) for e in entries if e.context]
    for place in model.context:
        if not place.strip("/") or place.startswith("/") or ".." in place.split("/"):
            raise ConfigError(
                f"{where}:{line_of(lines, ('context',))}: context key {place!r} must be a source "
                "label or label/path/prefix"
            )
    contexts += [(place.strip("/"), text) for place, text in model.context.items()]
    allow_roots = tuple(_resolve(r, base) for r in (model.serve.allow_roots if model.serve else []))
    return ConfigFile(
        path=path,
        settings=settings,
        sources=tuple(entries),
        sources_file=sources_file,
        found_by=found_by,
        allow_roots=allow_roots,
        inputs=tuple(inputs),
        contexts=tuple(contexts),
    )


def _file_settings(model: BaseModel, lines: LineMap, base: Path) -> dict[str, FileValue]:
    """Each declared setting the file gives, from the first of its keys that is present."""
    out: dict[str, FileValue] = {}
    for spec in SETTINGS:
        for key in spec.file:
            value: Any = model
            for part in key.split("."):
                value = getattr(value, part, None)
            if value is None or (isinstance(value, list | tuple | dict | str) and not value):
                continue
            if (spec.kind == "path" or spec.relative) and isinstance(value, str):
                value = str(_resolve(value, base))
            elif isinstance(value, dict):
                value = dict(value)
            out[spec.name] = FileValue(value, line_of(lines, tuple(key.split("."))), key)
            break
    return out


def _resolve(raw: str, base: Path) -> Path:
    path = Path(raw).expanduser()
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def normalise_extension(ext: str) -> str:
    """`.MD` -> `.md`, `md` -> `.md`; `""`, `.` or `(none)`: extensionless files (`README`)."""
    ext = ext.strip().lower()
    if ext in ("", ".", "(none)"):
        return ""
    return ext if ext.startswith(".") else f".{ext}"


def source_entry(
    model: SourceModel, declared_in: Path, line: int, base: Path, allow_root: bool
) -> SourceEntry:
    """A validated `SourceEntry` from one declared source."""
    where = f"{declared_in}: line {line}"
    if bool(model.path) == bool(model.repo):
        raise ConfigError(f"{where}: a source needs exactly one of `path` or `repo`")
    path = _resolve(model.path, base) if model.path else None
    if path is not None and str(path.resolve()) == "/" and not allow_root:
        raise ConfigError(
            f"{where}: source path {model.path!r} is the filesystem root '/'; that is almost "
            "surely a mistake. Name a folder, or pass --allow-root-slash if you mean it"
        )
    repo = model.repo
    if repo and not re.match(r"^[a-z][a-z0-9+.-]*://|^git@", repo):
        repo = str(_resolve(repo, base))
    if model.branch is not None and not repo:
        raise ConfigError(f"{where}: `branch` is only for a `repo` source")
    extensions: tuple[str, ...] | None = None
    if model.include_extensions is not None or model.exclude_extensions:
        allowed = (
            [normalise_extension(e) for e in model.include_extensions]
            if model.include_extensions is not None
            else [*DEFAULT_EXTENSIONS, ""]
        )
        dropped = {normalise_extension(e) for e in model.exclude_extensions}
        extensions = tuple(e for e in allowed if e not in dropped)
    encoding = model.encoding or "detect"
    problem = encoding_problem(encoding)
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")
    label = model.label or default_label(model.path, repo, model.branch)
    label_from = "" if model.label else ("the repository" if repo else "the folder's name")
    problem = label_problem(label)
    if problem is not None:
        raise ConfigError(f"{where}: source label {label!r} {problem}; give it another `label`")
    return SourceEntry(
        label=label,
        kind=model.kind,
        include=model.include,
        declared_in=declared_in,
        line=line,
        path=path,
        repo=repo,
        branch=model.branch,
        subdirs=tuple(s.strip("/") for s in model.subdirs),
        include_patterns=tuple(model.include_patterns),
        exclude_patterns=tuple(model.exclude_patterns),
        extensions=extensions,
        collection=model.collection,
        metadata=dict(model.metadata),
        identity_key=model.identity_key,
        use_gitignore=model.use_gitignore,
        note=model.note,
        context=model.context,
        encoding=encoding,
        include_hidden=model.include_hidden,
        raw_path=model.path or model.repo or "",
        label_from=label_from,
    )


def encoding_problem(encoding: str) -> str | None:
    """What is wrong with a source's `encoding` (`utf-8`, `detect` or a codec), or None."""
    if encoding in ("utf-8", "detect"):
        return None
    import codecs

    try:
        codecs.lookup(encoding)
    except LookupError:
        return (
            f"encoding {encoding!r} is not a known codec; use `detect` or a codec name "
            "such as cp1252, latin-1 or shift_jis"
        )
    return None


def repo_namespace(repo: str, branch: str | None) -> str:
    """`organisation/repository@branch` for a URL or path (branch `HEAD` when not given)."""
    text = repo.rstrip("/")
    if text.endswith(".git"):
        text = text[:-4]
    text = re.sub(r"^[a-z][a-z0-9+.-]*://", "", text)
    text = re.sub(r"^git@([^:]+):", r"\1/", text)
    parts = [p for p in PurePosixPath(text.replace("\\", "/")).parts if p not in ("/", "")]
    name = "/".join(parts[-2:]) if len(parts) >= 2 else (parts[-1] if parts else "repo")
    return f"{name}@{branch or 'HEAD'}"


def default_label(path: str | None, repo: str | None, branch: str | None) -> str:
    """A folder's name; for a repository `organisation/repository@branch`."""
    if repo:
        return repo_namespace(repo, branch)
    name = Path(path or "").expanduser().name
    if not name:
        name = Path(path or ".").expanduser().resolve().name or "root"
    return name


def distinct_labels(entries: Sequence[SourceEntry]) -> list[SourceEntry]:
    """`entries` with a distinct label each: folders no `label:` names whose names clash
    (two roots ending in `content`) are labelled by their last two path parts
    (`site/content`), or more until they differ; a clash of named labels is an error
    (`check_unique_labels`)."""
    taken: dict[str, int] = {}
    for entry in entries:
        taken[entry.label] = taken.get(entry.label, 0) + 1
    clashing = [e for e in entries if e.label_from and e.path is not None and taken[e.label] > 1]
    named = {e.label for e in entries if not (e.label_from and e.path is not None)}
    fixed: dict[int, SourceEntry] = {}
    for entry in clashing:
        assert entry.path is not None
        parts = entry.path.parts
        for depth in range(2, len(parts) + 1):
            label = "/".join(p for p in parts[-depth:] if p != "/")
            tail = parts[-depth:]
            same = [e for e in clashing if e.path is not None and e.path.parts[-depth:] == tail]
            if len(same) == 1 and label not in named and label_problem(label) is None:
                how = (
                    f"the path's last {depth} parts: {taken[entry.label]} roots end "
                    f"in {entry.label!r}"
                )
                fixed[id(entry)] = replace(entry, label=label, label_from=how)
                break
    result = [fixed.get(id(e), e) for e in entries]
    check_unique_labels(result)
    return result


def check_unique_labels(entries: Sequence[SourceEntry]) -> None:
    seen: dict[str, SourceEntry] = {}
    for entry in entries:
        if entry.label in seen:
            first = seen[entry.label]
            raise ConfigError(
                f"{entry.declared_in}: line {entry.line}: source label {entry.label!r} is "
                f"already used at {first.declared_in}: line {first.line}; give one of them "
                "another `label`"
            )
        seen[entry.label] = entry


@dataclass(frozen=True, slots=True)
class SourcesFile:
    """A parsed `content-sources.md`: its entries and where its front matter ends."""

    path: Path
    entries: tuple[SourceEntry, ...]
    inputs: tuple[tuple[str, bytes], ...] = ()  # (path, bytes) of the file as read
    #: (key, value as text) of the descriptive keys its front matter sets (`ABOUT_KEYS`).
    about: tuple[tuple[str, str], ...] = ()


def load_sources_file(path: Path, allow_root: bool = False) -> SourcesFile:
    """The `content_sources:` list from the front matter of a Markdown file."""
    from .sourcesfile import split_sources_file

    try:
        raw = read_bounded(path, MAX_SOURCES_FILE_BYTES)
        text = raw.decode("utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"sources file {str(path)!r} does not exist") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read sources file {str(path)!r}: {exc}") from exc
    inputs = ((str(path), raw),)
    parts = split_sources_file(text, path)
    if parts is None:
        return SourcesFile(path, (), inputs)
    offset = 1  # the opening '---' is line 1
    data, lines = parse_yaml(parts.front, str(path), offset)
    if data is None:
        data = {}
    model: SourcesFileModel = validate(
        SourcesFileModel, data, lines, str(path), offset, check_version=False
    )
    base = path.parent.resolve()
    declared = [
        source_entry(m, path, line_of(lines, ("content_sources", i)) + offset, base, allow_root)
        for i, m in enumerate(model.content_sources or [])
    ]
    entries = tuple(distinct_labels(declared))
    about = tuple(
        (key, str(getattr(model, key))) for key in ABOUT_KEYS if getattr(model, key) is not None
    )
    return SourcesFile(path, entries, inputs, about)
