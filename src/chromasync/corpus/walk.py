"""Discovery: walk one source root and list the files to consider, with stat, and the skips.

Design notes: docs/internals.md, `corpus/walk.py`.
"""

from __future__ import annotations

import errno
import logging
import os
import stat as stat_mod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..config.kinds import (
    BINARY_EXTENSIONS,
    CODE_LANGUAGES,
    DEFAULT_EXTENSIONS,
    DOCUMENT_EXTENSIONS,
    MARKDOWN_EXTENSIONS,
    OPT_IN_DOCUMENT_EXTENSIONS,
    TEXT_EXTENSIONS,
    TEXT_FILE_NAMES,
)
from ..datadir import STATE_FILE
from ..errors import SourceError
from ..records import Discovery, DocKind, FileStat, Skip, SourceSpec
from .listing import encode_listing, folder_facts, symlink_reason

log = logging.getLogger(__name__)

#: Reason codes for a skipped path.
REASONS = {
    "binary": "content is not text (NUL bytes, known binary magic)",
    "broken-symlink": "symlink whose target does not exist",
    "changed-during-read": "the file changed on every attempt to read it",
    "corrupt": "a document (PDF, DOCX...) that is broken, truncated or not its format",
    "empty": "no text left after removing BOM, front matter and whitespace (a file that "
    "had text keeps its records: caught mid-rewrite)",
    "encrypted": "a document that needs a password (or forbids extraction)",
    "frontmatter-invalid": "front matter present but unparseable or unsafe (fail closed)",
    "hidden": "dotfile or dot-directory",
    "no-text": "a document without a text layer (a scan, drawings) or without text",
    "ignored": "matched .gitignore or an exclude pattern",
    "not-regular-file": "FIFO, socket or device",
    "permission-denied": "EACCES on open or scandir",
    "private": "front matter marks it private (private: true, publish: false)",
    "symlink-duplicate": "symlink to a path inside the root, indexed under its real path",
    "symlink-loop": "symlink that cannot be resolved or points at its own ancestor",
    "symlink-outside-root": "symlink whose target is outside the root",
    "too-large": "over the maximum file size (listed or as read), or a document's budget",
    "too-slow": "chunking ran past the per-file time budget (earlier records are kept)",
    "undecodable": "not UTF-8, no BOM names another encoding, and no charset is detected "
    "with confidence",
    "undecodable-filename": "file name is not valid UTF-8",
    "unsupported-extension": "extension not on the text allow-list",
}

_KNOWN = frozenset((*DEFAULT_EXTENSIONS, ""))
#: Hidden names skipped even when a source includes hidden files (`include_hidden`): version
#: control internals and chromasync's own data dir.
NEVER_WALKED = frozenset({".git", ".hg", ".svn", ".chromasync", ".DS_Store"})
MAX_FILE_BYTES = 8 * 1024 * 1024


def classify_extension(rel_path: str) -> tuple[DocKind, str | None] | None:
    """The document kind and language for a path, or None when it is not text we index."""
    suffix = _suffix(rel_path)
    if suffix in MARKDOWN_EXTENSIONS:
        return "markdown", "markdown"
    if suffix in TEXT_EXTENSIONS or (not suffix and is_text_name(rel_path)):
        return "text", None
    if suffix in CODE_LANGUAGES:
        return "code", CODE_LANGUAGES[suffix]
    if suffix in DOCUMENT_EXTENSIONS or suffix in OPT_IN_DOCUMENT_EXTENSIONS:
        return "document", None
    return None


def is_text_name(rel_path: str) -> bool:
    """An extensionless name read as text (`README`, `LICENSE`: `kinds.TEXT_FILE_NAMES`)."""
    name = rel_path.rstrip().rsplit("/", 1)[-1]
    return "." not in name and name.lower() in TEXT_FILE_NAMES


def _suffix(rel_path: str) -> str:
    """The extension, lower-cased, ignoring trailing spaces in the name ("a.md " is Markdown)."""
    name = rel_path.rstrip()
    dot = name.rfind(".")
    if dot <= name.rfind("/") + 1:  # no dot in the last part, or a dotfile
        return ""
    return name[dot:].lower()


def _spec(lines: Sequence[str]) -> Any:
    """A git-wildmatch spec (pathspec loads only when some pattern exists)."""
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


class _Ignores:
    """`.gitignore` files found on the way down, each applying below its own folder."""

    def __init__(self, include: tuple[str, ...], exclude: tuple[str, ...]) -> None:
        self._include = _spec(include) if include else None
        self._exclude = _spec(exclude) if exclude else None
        self._nested: dict[str, Any] = {}

    def add_gitignore(self, rel_dir: str, lines: list[str]) -> None:
        spec = _spec(lines)
        if spec.patterns:
            self._nested[rel_dir] = spec

    def ignored(self, rel_path: str, is_dir: bool) -> bool:
        probe = rel_path + "/" if is_dir else rel_path
        if self._exclude is not None and self._exclude.match_file(probe):
            return True
        for base, spec in self._nested.items():
            if base == "" or rel_path.startswith(base + "/"):
                sub = probe[len(base) + 1 :] if base else probe
                if spec.match_file(sub):
                    return True
        return False

    def included(self, rel_path: str) -> bool:
        return self._include is None or self._include.match_file(rel_path)


def discover_source(
    spec: SourceSpec, max_file_bytes: int = MAX_FILE_BYTES, listing: bool = False
) -> Discovery:
    """Walk `spec.root` and return the candidate files and every skip with its reason; with
    `listing`, also what the walk saw, for the fast path of an unchanged re-run."""
    root = spec.root
    try:
        root_stat = os.stat(root)
    except FileNotFoundError as exc:
        raise SourceError(f"source {spec.label!r}: root {str(root)!r} does not exist") from exc
    except OSError as exc:
        raise SourceError(f"source {spec.label!r}: cannot open root {str(root)!r}: {exc}") from exc
    if not stat_mod.S_ISDIR(root_stat.st_mode):
        raise SourceError(f"source {spec.label!r}: root {str(root)!r} is not a folder")
    real_root = os.path.realpath(root)
    extensions = {e.lower() for e in spec.extensions} if spec.extensions else None
    ignores = _Ignores(spec.include, spec.exclude)
    files: list[FileStat] = []
    skipped: list[Skip] = []
    unreadable: list[str] = []
    # a listing records hidden names without their stat: with hidden files walked, no
    # listing (and no fast path for this source: a hidden file's edit must be seen)
    seen = _Seen(real_root, spec.use_gitignore, listing and not spec.include_hidden)
    for start in spec.starts:
        for rel, entry_path, entry in _walk(root, start, ignores, spec, skipped, unreadable, seen):
            if _undecodable(rel):
                skipped.append(Skip(_printable(rel), "undecodable-filename"))
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                skipped.append(Skip(rel, _os_reason(exc), str(exc.strerror)))
                continue
            if stat_mod.S_ISLNK(st.st_mode):
                skipped.append(Skip(rel, symlink_reason(entry_path, real_root)))
                continue
            if not stat_mod.S_ISREG(st.st_mode):
                skipped.append(Skip(rel, "not-regular-file"))
                continue
            if spec.skip_substrings and any(s and s in rel for s in spec.skip_substrings):
                skipped.append(Skip(rel, "ignored"))
                continue
            if ignores.ignored(rel, is_dir=False) or not ignores.included(rel):
                skipped.append(Skip(rel, "ignored"))
                continue
            suffix = _suffix(rel)
            if (suffix not in _KNOWN if extensions is None else suffix not in extensions) or (
                not suffix and not is_text_name(rel)
            ):
                reason = "binary" if suffix in BINARY_EXTENSIONS else "unsupported-extension"
                skipped.append(Skip(rel, reason))
                continue
            if st.st_size > max_file_bytes:
                skipped.append(Skip(rel, "too-large", f"{st.st_size} bytes"))
                continue
            files.append(
                FileStat(rel, entry_path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            )
    files.sort(key=lambda f: f.rel_path)
    return Discovery(
        tuple(files),
        tuple(skipped),
        tuple(unreadable),
        listing=encode_listing(seen.folders) if seen.complete else None,
        pruned_dirs=tuple(seen.pruned),
    )


class _Seen:
    """What the walk saw, folder by folder, for the fast path of an unchanged re-run."""

    def __init__(self, real_root: str, gitignore: bool, wanted: bool) -> None:
        self.real_root = real_root
        self.gitignore = gitignore
        self.folders: list[tuple[str, list[object]]] = []
        self.pruned: list[str] = []
        self.complete = wanted  # nobody asked: no listing, and no stat spent on one

    def folder(self, rel_dir: str, entries: list[os.DirEntry[str]]) -> None:
        if not self.complete:
            return
        try:
            self.folders.append((rel_dir, folder_facts(entries, self.real_root, self.gitignore)))
        except OSError:
            self.complete = False


def _walk(
    root: Path,
    start: str,
    ignores: _Ignores,
    spec: SourceSpec,
    skipped: list[Skip],
    unreadable: list[str],
    seen: _Seen,
) -> Iterator[tuple[str, str, os.DirEntry[str]]]:
    """Yield (relative path, absolute path, entry) of every non-directory under `start`."""
    stack = [start]
    while stack:
        rel_dir = stack.pop()
        abs_dir = os.path.join(root, rel_dir) if rel_dir else str(root)
        try:
            with os.scandir(abs_dir) as it:
                listed = list(it)
        except FileNotFoundError:
            seen.complete = False
            if rel_dir == start and start:
                log.warning(
                    "source %r: sub-folder %r does not exist; its records are kept",
                    spec.label,
                    start,
                )
            unreadable.append(rel_dir)  # a vanished folder deletes nothing
            continue
        except OSError as exc:
            seen.complete = False
            skipped.append(Skip(rel_dir or ".", _os_reason(exc), str(exc.strerror)))
            unreadable.append(rel_dir)
            continue
        seen.folder(rel_dir, listed)  # stats each entry once; the stat calls below reuse it
        entries = sorted(listed, key=lambda e: e.name)
        if spec.use_gitignore:
            for entry in entries:
                if entry.name == ".gitignore":
                    _read_gitignore(entry.path, rel_dir, ignores)
        subdirs: list[str] = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.name.startswith(".") and (
                not spec.include_hidden or entry.name in NEVER_WALKED
            ):
                skipped.append(Skip(_printable(rel), "hidden"))
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if ignores.ignored(rel, is_dir=True) or any(
                    s and s in rel + "/" for s in spec.skip_substrings
                ):
                    skipped.append(Skip(_printable(rel), "ignored"))
                    seen.pruned.append(rel)
                elif os.path.isfile(os.path.join(entry.path, STATE_FILE)):
                    # A chromasync data dir (its own, or another's): state, not notes.
                    skipped.append(Skip(_printable(rel), "ignored", "a chromasync data dir"))
                    seen.pruned.append(rel)
                else:
                    subdirs.append(rel)
                continue
            yield rel, entry.path, entry
        stack.extend(reversed(subdirs))


def _read_gitignore(path: str, rel_dir: str, ignores: _Ignores) -> None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            ignores.add_gitignore(rel_dir, handle.read().splitlines())
    except OSError as exc:
        log.warning("cannot read %s: %s", _printable(path), exc.strerror)


def _os_reason(exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission-denied"
    if exc.errno == errno.ELOOP:
        return "symlink-loop"
    return "not-regular-file"


def _undecodable(rel: str) -> bool:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _printable(rel: str) -> str:
    """A path safe to log and store: undecodable bytes shown as \\xNN escapes."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
