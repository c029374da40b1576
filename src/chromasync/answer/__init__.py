"""Answers with citations: extractive (no language model) or from an OpenAI-compatible chat
endpoint, with every `[n]` marker checked against the sources it was given.

    records     Citation, Answer, Group: what an answer is and its JSON shape
    extractive  sentence selection (BM25 x rank prior, MMR) with `[n]` citations
    prompt      prompt assembly: sources as data in unclosable fences, within a token budget
    verify      `[n]` marker parsing, removal of unknown numbers, renumbering
    chat        the `/v1/chat/completions` client (streaming or not), with retries
    ask         `answer_question`: the seam the surfaces call
    summaries   one summary per group (model or extractive, TF-IDF terms), cached by chunk hashes

This `__init__` stays light: import the modules themselves.
"""
