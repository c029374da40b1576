"""The one rule for source labels, shared by the config file, the CLI, REST and MCP.

Light on purpose (no pydantic): the CLI checks a label on its fast path too.
"""

from __future__ import annotations

from ..errors import ConfigError

#: The longest label any surface accepts.
LABEL_MAX = 128


def label_problem(label: str) -> str | None:
    """Why `label` cannot name a source, or None: the one label rule of the config file,
    the CLI, REST and MCP.

    A label is 1 to 128 characters with no control character and no backslash, does not
    start or end with whitespace or `/`, and its `/`-separated parts are neither empty nor
    `.` nor `..`. So a folder's name (`notes`, `My Notes`), a discovered `hugo/content` and a
    repository's `org/repo@main` are all labels, and every label the config accepts can be
    reindexed, read and removed through REST and MCP.
    """
    if not label:
        return "is empty"
    if len(label) > LABEL_MAX:
        return f"is longer than {LABEL_MAX} characters"
    if any(ord(c) < 32 or ord(c) == 127 or c == "\\" for c in label):
        return "has a control character or a backslash"
    if label != label.strip() or label.startswith("/") or label.endswith("/"):
        return "starts or ends with whitespace or '/'"
    if any(part in ("", ".", "..") for part in label.split("/")):
        return "has an empty, '.' or '..' part"
    return None


def check_label(label: str) -> str:
    """`label` when it follows `label_problem`'s rule; else a `ConfigError`."""
    problem = label_problem(label)
    if problem is not None:
        raise ConfigError(
            f"source label {label!r} {problem}; give the source another label "
            "(--source LABEL, or `label:` in the config file)"
        )
    return label


__all__ = ["LABEL_MAX", "check_label", "label_problem"]
