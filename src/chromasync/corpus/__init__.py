"""The corpus: walk sources, list them, read and hash files and documents, front matter, git."""
