"""Corpora for the comparison, and the edits that make scenarios S3-S5.

Everything here is deterministic (seeded), so two runs see the same files and the same edits.
Only Markdown files count for every tool; other files (hugo's images) are there to be skipped.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
SCIFACT_TOOL = SHARED / "tools" / "materialize_scifact.py"
HUGO = SHARED / "corpora" / "hugo-docs"
CORPORA = ("scifact", "hugo")
LONG_FILE = "long-guide.md"
LONG_SECTIONS = 40
EDITED_SECTION = 20
#: mtime the prepared tree gets: an old checkout (atime stays "now", see `prepare`).
OLD_MTIME_NS = 1_600_000_000 * 1_000_000_000

_VOCABULARY = (
    "index collection record vector chunk section heading source file path model batch "
    "query search store cache manifest update delete insert change edit merge review "
    "release install configure build deploy monitor measure compare result report error "
    "retry limit budget token window summary detail example option default setting value "
    "server client request response latency throughput memory disk network thread process "
    "schedule queue worker signal lock commit branch version history archive backup restore "
    "the a of to and in for with on by from at as that this is are was were be will can may "
    "should must often rarely always never quickly slowly carefully plainly"
)
_WORDS = _VOCABULARY.split()


def _sentence(rng: random.Random, words: int) -> str:
    body = " ".join(rng.choice(_WORDS) for _ in range(words))
    return body[0].upper() + body[1:] + "."


def _paragraph(rng: random.Random, words: int) -> str:
    out: list[str] = []
    while words > 0:
        n = min(words, rng.randint(8, 16))
        out.append(_sentence(rng, n))
        words -= n
    return " ".join(out)


def long_markdown(seed: int = 7) -> str:
    """A long multi-section guide: sections of 50-220 words (some need two chunks)."""
    rng = random.Random(seed)
    parts = ["# Operations handbook", "", _paragraph(rng, 40), ""]
    for number in range(1, LONG_SECTIONS + 1):
        title = " ".join(rng.choice(_WORDS) for _ in range(3)).capitalize()
        parts += [f"## {number}. {title}", ""]
        size = rng.randint(50, 220)
        first = size // 2
        parts += [_paragraph(rng, first), "", _paragraph(rng, size - first), ""]
    return "\n".join(parts)


def materialize(corpus: str, limit: int | None, cache: Path) -> Path:
    """The pristine corpus under `cache` (made once, reused by later runs)."""
    name = f"{corpus}-{limit}" if limit else corpus
    base = cache / name
    if (base / ".complete").is_file():
        return base
    if base.exists():
        shutil.rmtree(base)
    tree = base / "tree"
    if corpus == "scifact":
        if not SCIFACT_TOOL.is_file():
            raise SystemExit(f"{SCIFACT_TOOL} is missing: cannot build the SciFact corpus")
        args = [sys.executable, str(SCIFACT_TOOL), str(tree)]
        if limit:
            args += ["--limit", str(limit)]
        subprocess.run(args, check=True, capture_output=True)
    elif corpus == "hugo":
        if not HUGO.is_dir():
            raise SystemExit(f"{HUGO} is missing: cannot copy the hugo-docs corpus")
        shutil.copytree(HUGO, tree, symlinks=True)
        if limit:
            for path in markdown_files(tree)[limit:]:
                (tree / path).unlink()
    else:
        raise SystemExit(f"unknown corpus {corpus!r}; choose one of {', '.join(CORPORA)}")
    (base / ".complete").write_text("ok\n", encoding="utf-8")
    return base


def markdown_files(root: Path) -> list[str]:
    """Relative POSIX paths of the Markdown files under `root`, hidden folders left out."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if name.endswith(".md") and not name.startswith("."):
                found.append(Path(folder, name).relative_to(root).as_posix())
    return sorted(found)


def prepare(base: Path, work: Path) -> Path:
    """A working copy with the long file added and every mtime set to an old date.

    atime is set to now: reading a file then leaves its atime alone (relatime), so no
    tool sees an access date that its own or another tool's reads moved.
    """
    root = work / "corpus"
    shutil.copytree(base / "tree", root, symlinks=True)
    (root / LONG_FILE).write_text(long_markdown(), encoding="utf-8")
    now = time.time_ns()
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path, ns=(now, OLD_MTIME_NS))
    return root


@dataclass
class Mutation:
    """What one scenario changed on disk."""

    touched: int = 0
    edited: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {
            "touched": self.touched,
            "edited": len(self.edited),
            "deleted": len(self.deleted),
            "added": len(self.added),
        }


def touch_all(root: Path) -> Mutation:
    """S3: every file gets a new mtime (now); no content changes."""
    count = 0
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path)
            count += 1
    return Mutation(touched=count)


def age_access(root: Path) -> Mutation:
    """S2a (optional): nothing changed, but every access time is a day older.

    What a re-run the next day finds on a relatime filesystem (the Linux default): the
    previous run's reads moved each file's atime to that day.
    """
    count = 0
    day_ago = time.time_ns() - 86_400 * 1_000_000_000
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path, ns=(day_ago, path.stat().st_mtime_ns))
            count += 1
    return Mutation(touched=count)


def _edit_text(text: str, rng: random.Random) -> str:
    """Add a sentence to the middle prose paragraph (or a new paragraph at the end)."""
    blocks = text.split("\n\n")
    prose = [i for i, b in enumerate(blocks) if b[:1].isalpha()]
    sentence = _sentence(rng, 12)
    if not prose:
        return text.rstrip("\n") + "\n\n" + sentence + "\n"
    index = prose[len(prose) // 2]
    blocks[index] = blocks[index].rstrip("\n") + " " + sentence
    return "\n\n".join(blocks)


def _share(total: int, share: float) -> int:
    return max(1, round(total * share))


def churn(root: Path, seed: int = 11) -> Mutation:
    """S4: edit 1% of the Markdown files, delete 0.5%, add 0.5% new ones."""
    rng = random.Random(seed)
    files = [p for p in markdown_files(root) if p != LONG_FILE]
    picked = rng.sample(files, _share(len(files), 0.01) + _share(len(files), 0.005))
    edited, deleted = picked[: _share(len(files), 0.01)], picked[_share(len(files), 0.01) :]
    for rel in edited:
        path = root / rel
        path.write_text(_edit_text(path.read_text(encoding="utf-8"), rng), encoding="utf-8")
    for rel in deleted:
        (root / rel).unlink()
    added = []
    for number in range(_share(len(files), 0.005)):
        rel = f"added-{number:04d}.md"
        title = " ".join(rng.choice(_WORDS) for _ in range(4)).capitalize()
        body = f"# {title}\n\n{_paragraph(rng, 90)}\n\n{_paragraph(rng, 60)}\n"
        (root / rel).write_text(body, encoding="utf-8")
        added.append(rel)
    return Mutation(edited=edited, deleted=deleted, added=added)


def edit_long_section(root: Path, seed: int = 13) -> Mutation:
    """S5: rewrite the first sentence of one section of the long file."""
    rng = random.Random(seed)
    path = root / LONG_FILE
    lines = path.read_text(encoding="utf-8").split("\n")
    heading = next(i for i, line in enumerate(lines) if line.startswith(f"## {EDITED_SECTION}. "))
    first = heading + 2
    sentences = lines[first].split(". ")
    sentences[0] = _sentence(rng, 14).rstrip(".")
    lines[first] = ". ".join(sentences)
    path.write_text("\n".join(lines), encoding="utf-8")
    return Mutation(edited=[LONG_FILE])


def front_matter_end(text: str) -> int:
    """Offset where a YAML front matter block ends (0 when there is none)."""
    if not text.startswith("---\n"):
        return 0
    end = text.find("\n---", 4)
    if end < 0:
        return 0
    newline = text.find("\n", end + 4)
    return len(text) if newline < 0 else newline + 1
