"""The corpus stage: walk the sources, list them, read and hash files, read documents."""
