"""Git repositories as sources: cloned or fetched into a cache in the data dir.

Design notes: docs/internals.md, `corpus/git.py`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..config.file import repo_namespace
from ..datadir import REPOS_DIR as REPOS_DIR
from ..datadir import make_private_dir
from ..errors import SourceError, shown_url


def cache_slug(repo: str, branch: str | None) -> str:
    """A folder name for one repository and branch in the cache."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", repo_namespace(repo, branch)).strip("-")[:60]
    digest = hashlib.sha256(f"{repo}\x00{branch}".encode()).hexdigest()[:12]
    return f"{readable}-{digest}"


@dataclass(frozen=True, slots=True)
class Checkout:
    """A repository's work tree in the cache, at `commit`."""

    namespace: str
    work_tree: Path
    commit: str
    branch: str | None


def sync_repository(
    repo: str,
    branch: str | None,
    data_dir: Path,
    *,
    environ: Mapping[str, str] | None = None,
    timeout_s: float = 600,
) -> Checkout:
    """Clone `repo` into the cache (or fetch it) and check out the head of `branch`.

    Only `git` runs here; its prompts are disabled, so a repository that needs credentials
    fails instead of waiting for input.
    """
    target = data_dir / REPOS_DIR / cache_slug(repo, branch)
    env = {**(environ if environ is not None else os.environ), "GIT_TERMINAL_PROMPT": "0"}
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    namespace = repo_namespace(repo, branch)
    run = _runner(namespace, env, timeout_s)
    if not (target / ".git").is_dir():
        make_private_dir(target.parent)
        partial = target.with_name(target.name + ".partial")
        if partial.exists():
            shutil.rmtree(partial)
        args = ["clone", "--no-tags", "--single-branch"]
        if branch:
            args += ["--branch", branch]
        run([*args, "--", repo, str(partial)], None)
        os.replace(partial, target)
    else:
        ref = branch or "HEAD"
        run(["fetch", "--no-tags", "--force", "origin", ref], target)
        run(["checkout", "--force", "-B", branch or "chromasync-head", "FETCH_HEAD"], target)
        run(["reset", "--hard", "FETCH_HEAD"], target)
        run(["clean", "-ffdx"], target)
    commit = run(["rev-parse", "HEAD"], target).strip()
    return Checkout(namespace, target, commit, branch)


def _runner(
    namespace: str, env: Mapping[str, str], timeout_s: float
) -> Callable[[list[str], Path | None], str]:
    def run(args: list[str], cwd: Path | None) -> str:
        try:
            done = subprocess.run(
                ["git", *args],
                cwd=cwd,
                env=dict(env),
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except FileNotFoundError as exc:
            raise SourceError(
                f"repository source {namespace!r}: the `git` command is not installed"
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise SourceError(
                f"repository source {namespace!r}: `git {args[0]}` took over {timeout_s:.0f}s"
            ) from exc
        if done.returncode != 0:
            detail = done.stderr.strip().splitlines()[-1:] or ["no output"]
            raise SourceError(
                f"repository source {namespace!r}: `git {args[0]}` failed: "
                f"{shown_url(detail[0])} "
                "(check the URL, the branch and your access)"
            )
        return done.stdout

    return run
