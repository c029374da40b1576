"""The NATS surface (`chromasync nats`, docs/nats.md): change events in, retrieval replies out.

Design notes: docs/internals.md, `nats/__init__.py`.
"""
