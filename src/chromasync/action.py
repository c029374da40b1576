"""The entry point of the GitHub Action (`action.yml`): sync the checked-out repository.

Design notes: docs/internals.md, `action.py`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from . import api
from .cli.common import exit_code
from .errors import ChromasyncError, ConfigError
from .plan.triage import namespace_id
from .records import SUMMARY_COUNTS, IngestSummary, SourceSpec

#: The repository indexer's input names, accepted for chromasync's (its workflow works
#: with only its `uses:` line changed); the token's alias is joined in action.yml.
ALIASES = {
    "chroma-url": "server-url",
    "collection": "collection-name",
    "exclude": "exclude-paths",
}
#: Skip reasons as the repository indexer counts files: left out by the filters (not
#: eligible), binary or undecodable, symlinks and entries that are not regular files.
FILTERED = frozenset({"ignored", "hidden", "unsupported-extension"})
BINARY = frozenset({"binary", "undecodable"})
OTHER = frozenset(
    {
        "broken-symlink",
        "not-regular-file",
        "symlink-duplicate",
        "symlink-loop",
        "symlink-outside-root",
    }
)


def _env(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(f"INPUT_{name.upper().replace('-', '_')}", "").strip()
    return value or None


def _input(environ: Mapping[str, str], name: str) -> str | None:
    """An input's value under chromasync's name or the repository indexer's (`ALIASES`);
    both given with different values is a `ConfigError`."""
    value = _env(environ, name)
    alias = ALIASES.get(name)
    other = _env(environ, alias) if alias else None
    if value and other and value != other:
        raise ConfigError(f"inputs {name} and {alias} name the same thing; give one of them")
    return value or other


def _number(environ: Mapping[str, str], name: str, low: int) -> int | None:
    text = _input(environ, name)
    if text is None:
        return None
    if not text.isdigit() or int(text) < low:
        raise ConfigError(f"input {name}: {text!r} is not a whole number of at least {low}")
    return int(text)


def _flag(environ: Mapping[str, str], name: str) -> bool:
    text = (_input(environ, name) or "false").lower()
    if text not in ("true", "false"):
        raise ConfigError(f"input {name}: {text!r} is neither true nor false")
    return text == "true"


def _items(environ: Mapping[str, str], name: str) -> tuple[str, ...]:
    text = (_input(environ, name) or "").replace(",", "\n")
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def action_settings(environ: Mapping[str, str]) -> tuple[api.Settings, SourceSpec, str]:
    """The settings, the source and the commit of this workflow run."""
    repository = environ.get("GITHUB_REPOSITORY", "").strip()
    branch = environ.get("GITHUB_REF_NAME", "").strip()
    sha = environ.get("GITHUB_SHA", "").strip()
    missing = [
        name
        for name, value in (
            ("GITHUB_REPOSITORY", repository),
            ("GITHUB_REF_NAME", branch),
            ("GITHUB_SHA", sha),
        )
        if not value
    ]
    if missing:
        raise ConfigError(
            f"{', '.join(missing)} not set: run this inside a GitHub Actions job (or set them)"
        )
    workspace = Path(environ.get("GITHUB_WORKSPACE") or os.getcwd())
    root = workspace / (_input(environ, "path") or ".")
    overlap = _number(environ, "chunk-overlap", 0)
    if overlap:
        raise ConfigError(
            f"input chunk-overlap: {overlap}: chromasync does not overlap chunks (only the "
            "pieces of one oversized unit overlap, see docs/how-it-works.md); leave it empty"
        )
    api_url = _input(environ, "embedding-api-url")
    flags = {
        "collection": _input(environ, "collection"),
        "chroma_url": _input(environ, "chroma-url"),
        "tenant": _input(environ, "tenant"),
        "database": _input(environ, "database"),
        "provider": _input(environ, "provider") or ("openai" if api_url else None),
        "model": _input(environ, "embedding-model") or _input(environ, "model"),
        "embedding_url": api_url,
        "collections": "shared" if _input(environ, "collection") else None,
        "chunk_max_tokens": _number(environ, "chunk-size", 9),
        "batch_size": _number(environ, "batch-size", 1),
    }
    flags = {k: v for k, v in flags.items() if v is not None}
    config = _input(environ, "config-file")
    settings = api.configure(
        flags, environ, workspace, config=workspace / config if config else None
    )
    if not settings.chroma_url and (environ.get("CI") or environ.get("GITHUB_ACTIONS")):
        raise ConfigError(
            "no Chroma server named: set the input chroma-url (or server-url), "
            "CHROMASYNC_CHROMA_URL or the config file's chroma_url; in CI an embedded store "
            "would be thrown away with the runner"
        )
    from .cli.fileflags import file_fields

    fields = file_fields(
        {
            "include": _items(environ, "include-paths"),
            "exclude": tuple(
                line.strip()
                for line in (_input(environ, "exclude") or "").splitlines()
                if line.strip()
            ),
            "include_extensions": _items(environ, "include-extensions"),
            "exclude_extensions": _items(environ, "exclude-extensions"),
        }
    )
    organization, _, name = repository.partition("/")
    spec = api.source_for(
        root,
        f"{repository}@{branch}",
        kind=_input(environ, "kind") or "repo",
        identity=(organization, name, branch),
        **fields,
    )
    return settings, spec, sha


def outputs(summary: IngestSummary, spec: SourceSpec | None = None) -> dict[str, str]:
    """The step's outputs: every figure of the summary, `source`, `collection`, and the
    repository indexer's outputs under its names (docs/configuration.md, "The GitHub
    Action"): `namespace_id` (of the spec's identity), `files_scanned`, `files_eligible`,
    `files_indexed`, `files_binary_skipped`, `files_other_skipped`, `chunks_desired`,
    `chunks_added_or_updated`, `chunks_unchanged`, `chunks_deleted`, `dry_run`,
    `duration_ms` and `summary` (the run's `ingest --json` row on one line)."""
    figures = summary.as_json()
    out = {name: str(figures[name]) for name in SUMMARY_COUNTS}
    skips = summary.files_skipped
    skipped = sum(skips.values())

    def count(reasons: frozenset[str]) -> int:
        return sum(n for reason, n in skips.items() if reason in reasons)

    written = summary.chunks_embedded + summary.chunks_reused
    identity = spec.identity if spec is not None else None
    out |= {
        "files_skipped": str(skipped),
        "source": summary.source,
        "collection": summary.collection,
        "namespace_id": namespace_id(*identity) if identity else "",
        "files_scanned": str(summary.files_seen),
        "files_eligible": str(max(summary.files_seen - count(FILTERED | OTHER), 0)),
        "files_indexed": str(max(summary.files_seen - skipped, 0)),
        "files_binary_skipped": str(count(BINARY)),
        "files_other_skipped": str(count(OTHER)),
        "chunks_desired": str(summary.chunks_total),
        "chunks_added_or_updated": str(written),
        "chunks_unchanged": str(max(summary.chunks_total - written, 0)),
        "dry_run": "true" if summary.dry_run else "false",
        "summary": json.dumps(figures, sort_keys=True, separators=(",", ":")),
    }
    return out


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)


def main(environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    try:
        settings, spec, sha = action_settings(environ)
        options = api.default_options(
            settings,
            extra_metadata={"indexed_commit_sha": sha},
            dry_run=_flag(environ, "dry-run"),
        )
        [summary] = api.ingest([spec], settings, options, environ=environ, wait=True)
    except ChromasyncError as exc:
        print(f"::error title=chromasync::{exc}", file=sys.stderr)
        return exit_code(exc)
    values = outputs(summary, spec)
    _append(environ.get("GITHUB_OUTPUT"), "".join(f"{k}={v}\n" for k, v in values.items()))
    rows = "".join(f"| {k} | {v} |\n" for k, v in values.items())
    _append(
        environ.get("GITHUB_STEP_SUMMARY"),
        f"### chromasync: {spec.label} at {sha[:12]}\n\n| figure | value |\n|---|---|\n{rows}\n",
    )
    print(
        f"chromasync: {summary.source} -> {summary.collection}: {summary.files_new} new, "
        f"{summary.files_updated} updated, {summary.files_deleted} deleted, "
        f"{summary.chunks_embedded} chunks embedded"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
