"""Version stamps of what chromasync writes, and the one bound of what it writes that a
search shares (constants only: the fast path imports this)."""

#: Bump when chunk boundaries or chunk text change for the same input: every file is then
#: re-chunked on the next run (vectors of unchanged chunk text still come from the cache).
#: Also bumped when the metadata derived from chunk text changes: the re-read then only
#: rewrites metadata (same chunk hashes, same IDs, vectors from the cache or the collection).
#: Each bump and what it changed: docs/internals.md, `versions.py`.
CHUNKING_VERSION = 6
#: The contract of the repository indexer's fields on a record of a source with an identity
#: (`schema_version`, as the indexer writes its own).
RECORD_SCHEMA_VERSION = 1
#: Characters of a link target: a longer one is not recorded (`corpus.links`), nor may a
#: `links_to` filter or `links` ask for one (`retrieve.options`). Changing it changes the
#: records written: bump `CHUNKING_VERSION` with it.
MAX_TARGET_CHARS = 2_000
