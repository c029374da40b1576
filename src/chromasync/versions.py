"""Version stamps of what chromasync writes (constants only: the fast path imports this)."""

#: Bump when chunk boundaries or chunk text change for the same input: every file is then
#: re-chunked on the next run (vectors of unchanged chunk text still come from the cache).
CHUNKING_VERSION = 2  # 2: a heading takes the first piece of a long line after it
