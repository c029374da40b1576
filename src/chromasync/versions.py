"""Version stamps of what chromasync writes (constants only: the fast path imports this)."""

#: Bump when chunk boundaries or chunk text change for the same input: every file is then
#: re-chunked on the next run (vectors of unchanged chunk text still come from the cache).
CHUNKING_VERSION = 3  # 3: no heading in the context prefix of a chunk that starts with it
# 2: a heading takes the first piece of a long line after it
