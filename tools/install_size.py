"""Measure what `pip install chromasync` brings: a fresh venv, the project installed from
this checkout with `-c requirements.lock` and the extras asked for (none by default).

    python tools/install_size.py [--extras pptx,serve] [--keep DIR]

Prints the venv's total size, the empty venv's own size (its pip and setuptools), what the
install added, and the largest installed distributions (files they own, byte-compiled
caches included, as `du` counts them). It downloads from the package index pip is set up
with: run it by hand (docs/peers.md records the figures), never from a test.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def tree_size(path: Path) -> int:
    """Bytes on disk under `path`, as `du` counts them: blocks, not lengths, of files and
    folders (hard links once; symlinks as themselves)."""
    total, seen = path.lstat().st_blocks * 512, set()
    for item in path.rglob("*"):
        info = item.lstat()
        if (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
    return total


def distribution_sizes(python: Path) -> list[tuple[int, str]]:
    """(bytes, name) of each distribution installed in the venv of `python`, largest first,
    from the files its RECORD lists plus the byte-compiled caches beside them."""
    script = (
        "import importlib.metadata as m, json, os\n"
        "out = {}\n"
        "for d in m.distributions():\n"
        "    total, seen = 0, set()\n"
        "    for f in d.files or ():\n"
        "        p = os.path.realpath(f.locate())\n"
        "        if p in seen or not os.path.isfile(p): continue\n"
        "        seen.add(p); total += os.stat(p).st_blocks * 512\n"
        "    out[d.metadata['Name']] = total\n"
        "print(json.dumps(out))\n"
    )
    import json

    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True, check=True)
    sizes: dict[str, int] = json.loads(done.stdout)
    return sorted(((size, name) for name, size in sizes.items()), reverse=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extras", default="", help="comma-separated extras to install")
    parser.add_argument("--keep", type=Path, help="build the venv here and keep it")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        venv = args.keep or Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        empty = tree_size(venv)
        python = venv / "bin" / "python"
        target = f"{REPO}[{args.extras}]" if args.extras else str(REPO)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-c", f"{REPO}/requirements.lock", target],
            check=True,
        )
        total = tree_size(venv)
        mb = 1 << 20
        extras = f"[{args.extras}]" if args.extras else ""
        print(f"a fresh venv with chromasync{extras}: {total / mb:.0f} MiB (as du -sh counts)")
        print(f"  the empty venv (its pip, setuptools): {empty / mb:.0f} MiB")
        print(f"  what the install added: {(total - empty) / mb:.0f} MiB")
        print(f"largest {args.top} distributions (MiB):")
        for size, name in distribution_sizes(python)[: args.top]:
            print(f"  {size / mb:7.1f}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
