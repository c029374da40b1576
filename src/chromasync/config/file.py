"""The config file: `chromasync.yaml` (or TOML), validated at the trust boundary.

    version: 1
    store: {data_dir: .chromasync, collection: chromasync, collections: per-kind}
    embedding: {provider: local, model: null, options: {batch_size: 32}}
    chunking: {max_tokens: 256}
    answer: {llm_url: http://localhost:11434/v1, llm_model: llama3.2, context_tokens: 3000,
             timeout: 120, retries: 4, fallback: extractive}
    skip_paths: [/drafts/, .bak]
    privacy_keys: [private]
    sources_file: content-sources.md
    sources:
      - {label: docs, path: docs, kind: docs, include: true, subdirs: [content],
         exclude_patterns: ["*.tmp"], include_extensions: [.md], collection: null,
         metadata: {stability: mature}, identity_key: record_uuid}
      - {repo: https://github.com/org/repo.git, branch: main, kind: code}

The compact form (`[chromasync]` with `root`, `collection`...; `[server]` with `url`) is
accepted too. Paths are relative to the file's folder. Every problem is reported at once,
each naming the key and its line: unknown keys (with the closest known key), an unknown
`version`, and secrets (tokens, API keys), which belong in the environment; their values are
never echoed. A source whose path is `/` is refused unless the caller allows it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigError
from .check import (
    CONFIG_VERSION,
    LineMap,
    dotted,
    find_secrets,
    line_of,
    parse_toml,
    parse_yaml,
    validate,
)
from .kinds import DEFAULT_EXTENSIONS
from .labels import label_problem
from .natsfile import NatsModel, nats_settings
from .settings import ConfigFile, FileValue

Scalar = str | int | float | bool

__all__ = ["LineMap", "dotted", "find_secrets", "line_of", "parse_toml", "parse_yaml"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StoreModel(_Model):
    data_dir: str | None = None
    url: str | None = None
    tenant: str | None = None
    database: str | None = None
    collection: str | None = None
    collections: Literal["per-kind", "shared"] | None = None


class EmbeddingModel(_Model):
    provider: str | None = None
    model: str | None = None
    options: dict[str, Scalar | list[Scalar]] = Field(default_factory=dict)


class ChunkingModel(_Model):
    max_tokens: int | None = Field(default=None, gt=8)
    plan_ahead: Literal["auto", "on", "off"] | None = None  # read and chunk in a 2nd process


class SearchModel(_Model):
    """The `search:` section: retrieval settings."""

    date_fields: list[str] | None = None
    rerank_model: str | None = None
    duplicate_threshold: float | None = Field(default=None, ge=0, le=1)
    keyword_refresh_s: int | None = Field(default=None, ge=0)
    editor_uri: str | None = Field(default=None, max_length=2048)


class AnswerModel(_Model):
    """The `answer:` section: the chat model behind `chromasync ask` (its key: environment
    only, `CHROMASYNC_LLM_API_KEY` or `OPENAI_API_KEY`)."""

    llm_url: str | None = Field(default=None, max_length=2048)
    llm_model: str | None = Field(default=None, max_length=512)
    context_tokens: int | None = Field(default=None, ge=64, le=2_000_000)
    timeout: float | None = Field(default=None, gt=0, le=3600)
    retries: int | None = Field(default=None, ge=1, le=20)
    fallback: Literal["none", "extractive"] | None = None


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
    metadata: dict[str, Scalar] = Field(default_factory=dict)
    identity_key: str | None = None
    use_gitignore: bool = True
    note: str | None = None
    context: str | None = Field(default=None, min_length=1, max_length=2000)


class CompactModel(_Model):
    """The `[chromasync]` table: one source at `root`, plus a few settings."""

    root: str | None = None
    label: str | None = None
    kind: str = "notes"
    collection: str | None = None
    data_dir: str | None = None
    subdirs: list[str] = Field(default_factory=list)
    include_patterns: list[str] = Field(default_factory=list)
    exclude_patterns: list[str] = Field(default_factory=list)
    include_extensions: list[str] | None = None
    exclude_extensions: list[str] = Field(default_factory=list)
    metadata: dict[str, Scalar] = Field(default_factory=dict)
    identity_key: str | None = None
    embedding: EmbeddingModel | None = None
    chunking: ChunkingModel | None = None


class ServeModel(_Model):
    """`serve:`: folders under which clients of the REST service may add sources."""

    allow_roots: list[str] = Field(default_factory=list)


class ConfigModel(_Model):
    version: int = CONFIG_VERSION
    store: StoreModel | None = None
    server: StoreModel | None = None
    embedding: EmbeddingModel | None = None
    chunking: ChunkingModel | None = None
    search: SearchModel | None = None
    answer: AnswerModel | None = None
    sources: list[SourceModel] = Field(default_factory=list)
    sources_file: str | None = None
    skip_paths: list[str] = Field(default_factory=list)
    privacy_keys: list[str] = Field(default_factory=list)
    chromasync: CompactModel | None = None
    serve: ServeModel | None = None
    nats: NatsModel | None = None
    #: A description per source label or `label/path/prefix`, returned with every hit there.
    context: dict[str, Annotated[str, Field(min_length=1, max_length=2000)]] = Field(
        default_factory=dict, max_length=1000
    )


class SourcesFileModel(_Model):
    """The front matter of a `content-sources.md` file."""

    content_sources: list[SourceModel] | None = Field(default_factory=list)
    title: str | None = None
    description: str | None = None
    version: int | None = None


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
    raw_path: str = ""
    form: str = "list"  # "list" (sources:/content_sources:) or "compact" ([chromasync] root)


# -- loading --------------------------------------------------------------------------------


def load_config_file(
    path: Path, found_by: str = "--config", allow_root: bool = False
) -> ConfigFile:
    """Read, validate and resolve one config file (YAML, or TOML by its suffix)."""
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {str(path)!r}: {exc}") from exc
    where = str(path)
    if path.suffix.lower() == ".toml":
        data, lines = parse_toml(text, where)
    else:
        data, lines = parse_yaml(text, where)
    if data is None:
        data = {}
    model: ConfigModel = validate(ConfigModel, data, lines, where)
    base = path.parent.resolve()
    settings = _file_settings(model, lines, base)
    entries: list[SourceEntry] = []
    for index, source in enumerate(model.sources):
        entries.append(
            source_entry(source, path, line_of(lines, ("sources", index)), base, allow_root)
        )
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
    check_unique_labels(entries)
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


def _file_settings(model: ConfigModel, lines: LineMap, base: Path) -> dict[str, FileValue]:
    out: dict[str, FileValue] = {}

    def put(name: str, value: Any, path: tuple[str, ...]) -> None:
        if value is not None and not (isinstance(value, list | tuple | dict) and not value):
            out[name] = FileValue(value, line_of(lines, path))

    compact = model.chromasync
    if compact is not None:
        put("collection", compact.collection, ("chromasync", "collection"))
        if compact.data_dir:
            put("data_dir", str(_resolve(compact.data_dir, base)), ("chromasync", "data_dir"))
        _embedding_settings(compact.embedding, ("chromasync", "embedding"), put)
        if compact.chunking is not None:
            put("chunk_max_tokens", compact.chunking.max_tokens, ("chromasync", "chunking"))
            put("plan_ahead", compact.chunking.plan_ahead, ("chromasync", "chunking"))
    for section in ("server", "store"):
        store: StoreModel | None = getattr(model, section)
        if store is None:
            continue
        if store.data_dir:
            put("data_dir", str(_resolve(store.data_dir, base)), (section, "data_dir"))
        put("chroma_url", store.url, (section, "url"))
        put("tenant", store.tenant, (section, "tenant"))
        put("database", store.database, (section, "database"))
        put("collection", store.collection, (section, "collection"))
        put("collections", store.collections, (section, "collections"))
    _embedding_settings(model.embedding, ("embedding",), put)
    if model.chunking is not None:
        put("chunk_max_tokens", model.chunking.max_tokens, ("chunking", "max_tokens"))
        put("plan_ahead", model.chunking.plan_ahead, ("chunking", "plan_ahead"))
    if model.search is not None:
        search = model.search
        if search.date_fields:
            put("date_fields", ",".join(search.date_fields), ("search", "date_fields"))
        if search.rerank_model:
            folder = str(_resolve(search.rerank_model, base))
            put("rerank_model", folder, ("search", "rerank_model"))
        put("duplicate_threshold", search.duplicate_threshold, ("search", "duplicate_threshold"))
        put("keyword_refresh_s", search.keyword_refresh_s, ("search", "keyword_refresh_s"))
        put("editor_uri", search.editor_uri, ("search", "editor_uri"))
    if model.answer is not None:
        answer = model.answer
        put("llm_url", answer.llm_url, ("answer", "llm_url"))
        put("llm_model", answer.llm_model, ("answer", "llm_model"))
        put("answer_context_tokens", answer.context_tokens, ("answer", "context_tokens"))
        put("llm_timeout", answer.timeout, ("answer", "timeout"))
        put("llm_retries", answer.retries, ("answer", "retries"))
        put("answer_fallback", answer.fallback, ("answer", "fallback"))
    if model.nats is not None:
        nats_settings(model.nats, lambda raw: _resolve(raw, base), put)
    put("skip_paths", tuple(model.skip_paths), ("skip_paths",))
    put("privacy_keys", tuple(k.strip().lower() for k in model.privacy_keys), ("privacy_keys",))
    return out


def _embedding_settings(embedding: EmbeddingModel | None, path: tuple[str, ...], put: Any) -> None:
    if embedding is None:
        return
    put("provider", embedding.provider, (*path, "provider"))
    put("model", embedding.model, (*path, "model"))
    put("provider_options", dict(embedding.options), (*path, "options"))


def _resolve(raw: str, base: Path) -> Path:
    path = Path(raw).expanduser()
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def normalise_extension(ext: str) -> str:
    ext = ext.strip().lower()
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
            else list(DEFAULT_EXTENSIONS)
        )
        dropped = {normalise_extension(e) for e in model.exclude_extensions}
        extensions = tuple(e for e in allowed if e not in dropped)
    label = model.label or default_label(model.path, repo, model.branch)
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
        raw_path=model.path or model.repo or "",
    )


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


def load_sources_file(path: Path, allow_root: bool = False) -> SourcesFile:
    """The `content_sources:` list from the front matter of a Markdown file."""
    from .sourcesfile import split_sources_file

    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"sources file {str(path)!r} does not exist") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read sources file {str(path)!r}: {exc}") from exc
    inputs = ((str(path), raw),)
    parts = split_sources_file(text)
    if parts is None:
        return SourcesFile(path, (), inputs)
    data, lines = parse_yaml(parts.front, str(path))
    offset = 1  # the opening '---' is line 1
    if data is None:
        data = {}
    model: SourcesFileModel = validate(
        SourcesFileModel, data, lines, str(path), offset, check_version=False
    )
    base = path.parent.resolve()
    entries = tuple(
        source_entry(m, path, line_of(lines, ("content_sources", i)) + offset, base, allow_root)
        for i, m in enumerate(model.content_sources or [])
    )
    return SourcesFile(path, entries, inputs)
