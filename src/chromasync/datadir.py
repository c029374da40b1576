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

Constants only: the console script's fast path imports this module.
"""

from __future__ import annotations

CHROMA_DIR = "chroma"
STATE_FILE = "state.sqlite3"
CACHE_FILE = "embeddings.sqlite3"
MIRROR_FILE = "keyword-mirror.sqlite3"
LOCK_FILE = "lock"
SNAPSHOT_DIR = "fastpath"
OWNER_FILE = "owner.json"
SOCKET_FILE = "owner.sock"
REPOS_DIR = "repos"
