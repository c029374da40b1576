"""The NATS surface (`chromasync nats`, docs/nats.md): change events in, retrieval replies out.

`payloads` (the trust boundary: requests, events, replies; no NATS client), `errors` (the
error table), `events` (which source each event's file belongs to), `runner` (the client:
connection and backoff, the JetStream durable consumer, request/reply). The `nats` extra
(`nats-py`) is needed by `runner` only; this package's `__init__` imports nothing.
"""
