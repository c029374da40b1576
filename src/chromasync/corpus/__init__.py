"""The corpus: walking source trees, listings, reading and hashing files, front matter, git."""
