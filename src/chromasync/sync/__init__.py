"""The ingest shell: waves of writes, healing from the collection, verify, export, reports."""
