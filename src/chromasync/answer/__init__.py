"""Answers with citations: extractive (no language model) or from an OpenAI-compatible chat
endpoint, with every `[n]` marker checked against the sources it was given.

Design notes: docs/internals.md, `answer/__init__.py`.
"""
