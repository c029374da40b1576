"""Every file and folder chromasync keeps under a data dir, named once.

    <data dir>/
      chroma/                   the embedded Chroma store (when no server is configured)
      state.sqlite3             manifest and keyword index (`state.manifest`)
      embeddings.sqlite3        vectors cached by content hash (`embed.cache`)
      keyword-mirror.sqlite3    keyword index rebuilt from a shared collection (`retrieve.mirror`)
      lock                      the one-writer kernel lock (`state.lock`)
      fastpath/                 snapshots of unchanged re-runs (`state.snapshots`)
      owner.json, owner.sock    the long-lived owner and its socket (`owner.locate`)
      repos/                    clones of git sources (`corpus.git`)

Constants, and `guess`: where a command line's data dir most likely is, read without the
config file's parser. The console script's fast paths import this module.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

CHROMA_DIR = "chroma"
STATE_FILE = "state.sqlite3"
CACHE_FILE = "embeddings.sqlite3"
MIRROR_FILE = "keyword-mirror.sqlite3"
LOCK_FILE = "lock"
SNAPSHOT_DIR = "fastpath"
OWNER_FILE = "owner.json"
SOCKET_FILE = "owner.sock"
REPOS_DIR = "repos"


def guess(options: Mapping[str, str], environ: Mapping[str, str], cwd: str) -> str | None:
    """Where the data dir of a command line with these `options` most likely is, without
    parsing the config file (`--data-dir`, `CHROMASYNC_DATA_DIR`, the config's `data_dir`)."""
    value = options.get("--data-dir") or environ.get("CHROMASYNC_DATA_DIR")
    if value:
        return os.path.join(cwd, os.path.expanduser(value))
    named = options.get("--config") or environ.get("CHROMASYNC_CONFIG")
    config = os.path.join(cwd, os.path.expanduser(named or "chromasync.yaml"))
    try:
        with open(config, "rb") as handle:
            text = handle.read()
    except OSError:
        return None if named else os.path.join(cwd, ".chromasync")
    if b"data_dir" not in text:
        return os.path.join(cwd, ".chromasync")
    for line in text.decode("utf-8", "replace").splitlines():
        _, found, after = line.partition("data_dir")
        if found and after.lstrip()[:1] in (":", "="):
            raw = after.lstrip()[1:]
            for stop in ",}#":
                raw = raw.split(stop, 1)[0]
            raw = raw.strip().strip("'\"")
            base = os.path.dirname(os.path.realpath(config))
            return os.path.normpath(os.path.join(base, os.path.expanduser(raw))) if raw else None
    return None
