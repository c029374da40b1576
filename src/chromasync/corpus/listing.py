"""The tree listing: what a walk of a source saw, as bytes two walks can compare.

Discovery records it while it walks (from the same stat calls that change detection uses),
and the fast path of an unchanged re-run walks again and compares (`fastpath`). Only the
standard library's built-in modules are imported here: the fast path pays for every import.
"""

from __future__ import annotations

import errno
import marshal
import os
import stat as stat_mod

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence


def symlink_reason(path: str, real_root: str) -> str:
    """Why a symlink is skipped: its target is a loop, missing, outside, or walked anyway."""
    try:
        target = os.path.realpath(path, strict=True)
    except OSError as exc:
        return "symlink-loop" if exc.errno == errno.ELOOP else "broken-symlink"
    except RuntimeError:
        return "symlink-loop"
    if target != real_root and not target.startswith(real_root + os.sep):
        return "symlink-outside-root"
    parent = os.path.realpath(os.path.dirname(path))
    if parent == target or parent.startswith(target + os.sep):
        return "symlink-loop"
    return "symlink-duplicate"


def folder_facts(
    entries: Iterable[os.DirEntry[str]],
    real_root: str,
    gitignore: bool,
    subfolders: list[str] | None = None,
) -> list[object]:
    """One folder's entries as discovery sees them, in the order the folder lists them
    (the names of its walked sub-folders appended to `subfolders` when given).

    A hidden name is its name (never read, except `.gitignore`), a folder is `(name,)`, a
    symlink `(name, verdict)`, anything else `(name, inode, size, mtime_ns, ctime_ns)`: any
    write, chmod or replacement moves ctime, which cannot be set back. A failed stat raises
    OSError.
    """
    facts: list[object] = []
    append = facts.append
    ifmt, ifdir, iflnk = 0o170000, stat_mod.S_IFDIR, stat_mod.S_IFLNK  # locals: per entry
    for entry in entries:
        name = entry.name
        if name[0] == "." and not (gitignore and name == ".gitignore"):
            append(name)
            continue
        st = entry.stat(follow_symlinks=False)
        kind = st.st_mode & ifmt
        if kind == ifdir:
            if name[0] == ".":
                append((name, st.st_ino, st.st_ctime_ns))
            else:
                append((name,))
                if subfolders is not None:
                    subfolders.append(name)
        elif kind == iflnk:
            append((name, symlink_reason(entry.path, real_root)))
        else:
            append((name, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return facts


def encode_listing(folders: list[tuple[str, list[object]]]) -> bytes:
    """The walk's folders, in walk order, as comparable bytes (marshal 2: no references)."""
    return marshal.dumps(folders, 2)


def tree_listing(
    root: str, starts: Sequence[str], pruned: frozenset[str], gitignore: bool
) -> bytes | None:
    """Walk a source as discovery does, given the folders it pruned; None on any error.

    Discovery walks depth first, sub-folders in name order, hidden ones and pruned ones
    left out; this walk takes the same route.
    """
    real_root = os.path.realpath(root)
    folders: list[tuple[str, list[object]]] = []
    for start in starts:
        stack = [start]
        while stack:
            rel_dir = stack.pop()
            names: list[str] = []
            try:
                with os.scandir(os.path.join(root, rel_dir) if rel_dir else root) as it:
                    folders.append((rel_dir, folder_facts(it, real_root, gitignore, names)))
            except OSError:
                return None
            names.sort()
            subdirs = [f"{rel_dir}/{n}" if rel_dir else n for n in names]
            stack.extend(reversed([d for d in subdirs if d not in pruned]))
    return encode_listing(folders)


def printable(text: str, lines: bool = False) -> str:
    """Control characters escaped, so that a file name cannot drive the terminal, and a
    newline too (a path or label stays on its line: `\\n`) unless `lines` (an answer's or
    an error's own lines)."""
    return "".join(c if c.isprintable() or (lines and c == "\n") else repr(c)[1:-1] for c in text)
