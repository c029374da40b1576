"""Local state: the manifest and keyword index, the data dir's lock, the fast path's snapshots."""
