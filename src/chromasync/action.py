"""The entry point of the GitHub Action (`action.yml`): sync the checked-out repository.

    python -m chromasync.action

Identity comes from the workflow: the namespace (source label) is
`$GITHUB_REPOSITORY@$GITHUB_REF_NAME` and every record written carries
`indexed_commit_sha=$GITHUB_SHA`. The tree is `$GITHUB_WORKSPACE` (or `INPUT_PATH` below
it). The action's inputs arrive as `INPUT_*` variables: `INPUT_PATH`, `INPUT_KIND`,
`INPUT_COLLECTION`, `INPUT_CHROMA_URL`, `INPUT_TENANT`, `INPUT_DATABASE`,
`INPUT_PROVIDER`, `INPUT_MODEL`, `INPUT_EXCLUDE` (patterns, one per line); the token comes
from `CHROMASYNC_CHROMA_TOKEN` only. The run's figures are written to `$GITHUB_OUTPUT`
(`files_seen`, `files_new`, ..., `chunks_embedded`, `embed_ms`) and a table to
`$GITHUB_STEP_SUMMARY`.

A runner starts with no local state: the first ingest of a run rebuilds its manifest from
the collection (no embedding), then reads every file once and embeds only what changed.
Writers of one namespace must not overlap: serialise them with a concurrency group keyed
by repository and branch (see action.yml).

Exit codes: 0 done, 1 the sync failed, 2 the workflow is misconfigured.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from . import api
from .cli.common import exit_code
from .errors import ChromasyncError, ConfigError
from .records import SUMMARY_COUNTS, IngestSummary, SourceSpec


def _input(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(f"INPUT_{name.upper().replace('-', '_')}", "").strip()
    return value or None


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
    flags = {
        "collection": _input(environ, "collection"),
        "chroma_url": _input(environ, "chroma-url"),
        "tenant": _input(environ, "tenant"),
        "database": _input(environ, "database"),
        "provider": _input(environ, "provider"),
        "model": _input(environ, "model"),
        "collections": "shared" if _input(environ, "collection") else None,
    }
    settings = api.resolve_settings(flags, environ)
    exclude = tuple(
        line.strip() for line in (_input(environ, "exclude") or "").splitlines() if line.strip()
    )
    spec = api.source_for(
        root,
        f"{repository}@{branch}",
        kind=_input(environ, "kind") or "repo",
        exclude=exclude,
    )
    return settings, spec, sha


def outputs(summary: IngestSummary) -> dict[str, str]:
    figures = summary.as_json()
    out = {name: str(figures[name]) for name in SUMMARY_COUNTS}
    out["files_skipped"] = str(sum(summary.files_skipped.values()))
    out["source"] = summary.source
    out["collection"] = summary.collection
    return out


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)


def main(environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    try:
        settings, spec, sha = action_settings(environ)
        options = api.default_options(settings, extra_metadata={"indexed_commit_sha": sha})
        [summary] = api.ingest([spec], settings, options, environ=environ, wait=True)
    except ChromasyncError as exc:
        print(f"::error title=chromasync::{exc}", file=sys.stderr)
        return exit_code(exc)
    values = outputs(summary)
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
