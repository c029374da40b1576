"""The `editor_uri` setting's template check (rendered by `retrieve.editor.open_url`)."""

from __future__ import annotations

import re
import string

#: The placeholders of `editor_uri` (rendered by `retrieve.editor.open_url`): `{path}` the
#: file's absolute path, `{relpath}` its path in its source, both URL-quoted; `{line}` the
#: hit's first line (1 when unknown); `{source}` the source's label, URL-quoted.
EDITOR_PLACEHOLDERS = ("path", "line", "source", "relpath")
#: Schemes an editor link may not use: a link that runs code where it is clicked.
_REFUSED_SCHEMES = ("javascript", "data", "vbscript")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
EDITOR_URI_MAX = 2048


def editor_uri_problem(text: str) -> str | None:
    """What is wrong with the `editor_uri` template `text` (to follow its name), or None.

    It must start with a URI scheme (`vscode:`, `idea:`, `file:`...; not `javascript:`,
    `data:` or `vbscript:`), hold no whitespace or control characters, and use
    only the `EDITOR_PLACEHOLDERS`, without format specs (`{{` and `}}` are literal braces).
    """
    if len(text) > EDITOR_URI_MAX:
        return f"is longer than {EDITOR_URI_MAX} characters"
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in text):
        return f"{text!r} holds whitespace or a control character; URL-quote it"
    scheme = _SCHEME.match(text)
    if scheme is None or scheme.group(1).lower() in _REFUSED_SCHEMES:
        return (
            f"{text!r} must start with an editor's URI scheme such as "
            "vscode://file{path}:{line} (not javascript:, data: or vbscript:)"
        )
    known = ", ".join("{" + name + "}" for name in EDITOR_PLACEHOLDERS)
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError as exc:
        return f"{text!r} is not a valid template ({exc}); write a literal brace as {{{{ or }}}}"
    for _literal, name, spec, conversion in fields:
        if name is None:
            continue
        if name not in EDITOR_PLACEHOLDERS or spec or conversion:
            shown = "{" + name + ("!" + conversion if conversion else "")
            shown += (":" + spec if spec else "") + "}"
            return f"{text!r} uses the unknown placeholder {shown}; the placeholders are {known}"
    return None
