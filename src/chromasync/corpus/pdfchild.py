"""An encrypted PDF read in a short-lived child process under an OS-enforced memory budget.

Design notes: docs/internals.md, `corpus/pdfchild.py`.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tempfile
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any

from .pages import Block, Heading, Meter, Page, PagedDocument, Refused

#: Seconds the child may take beyond the time budget left: its interpreter start and imports.
_START = 10.0
#: What the JSON around the text may add: page and block brackets, numbers, title, outline.
_SLACK = 1 << 20
_PIECE = 64 * 1024
_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding `chromasync`
# The child runs `pdf.child_main` (named here as text: this module imports nothing of `pdf`,
# which imports it).
_CHILD = (
    f"import sys; sys.path.insert(0, {_ROOT!r}); "
    "from chromasync.corpus.pdf import child_main; child_main()"
)
OUT_OF_MEMORY = 3  # the child's exit status after a MemoryError


def read_in_child(data: bytes, meter: Meter) -> PagedDocument:
    """Read the PDF `data` in a child process within `meter`'s budgets (see the module)."""
    limits = meter.limits
    deadline = max(meter.left(), 0.0) + _START
    # UTF-8 is at most 4 bytes a character; JSON adds a few bytes a page and bookmark.
    cap = 4 * limits.max_chars + 64 * (limits.max_pages + limits.max_outline) + _SLACK
    with tempfile.NamedTemporaryFile(prefix="chromasync-pdf-", suffix=".pdf") as f:
        f.write(data)
        f.flush()
        args = json.dumps(dataclasses.asdict(limits))
        with subprocess.Popen(
            [sys.executable, "-I", "-c", _CHILD, f.name, args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        ) as child:
            expired = threading.Event()

            def expire() -> None:
                expired.set()
                child.kill()

            timer = threading.Timer(deadline, expire)
            timer.start()
            try:
                out = _read_capped(child, cap)
                status = child.wait()
            finally:
                timer.cancel()
                if child.poll() is None:
                    child.kill()
    budget = f"the {limits.max_encrypted_memory} byte memory budget of an encrypted PDF"
    if expired.is_set():
        raise Refused("too-large", f"over the {limits.seconds:g} s time budget (encrypted PDF)")
    if out is None:
        raise Refused("too-large", f"over {limits.max_chars} characters of text")
    if status < 0 or status == OUT_OF_MEMORY:
        raise Refused("too-large", f"over {budget} (its reader was stopped)")
    try:
        reply = json.loads(out.decode("utf-8", "surrogatepass"))
    except ValueError as exc:
        raise Refused("corrupt", f"its reader failed (exit status {status})") from exc
    if "refused" in reply:
        reason, detail = reply["refused"]
        raise Refused(str(reason), str(detail))
    return _document(reply, meter)


def _read_capped(child: subprocess.Popen[bytes], cap: int) -> bytes | None:
    """The child's stdout, or None (and the child killed) when it passes `cap` bytes."""
    assert child.stdout is not None
    parts: list[bytes] = []
    size = 0
    while piece := child.stdout.read(_PIECE):
        size += len(piece)
        if size > cap:
            child.kill()
            return None
        parts.append(piece)
    return b"".join(parts)


def _document(reply: dict[str, Any], meter: Meter) -> PagedDocument:
    """The child's reply as a document, its text counted against `meter` again."""
    pages_in = reply["pages"]
    meter.pages(len(pages_in))
    pages = tuple(
        Page(int(number), tuple(Block(int(level), meter.take(str(text))) for level, text in blocks))
        for number, blocks in pages_in
    )
    outline = tuple(
        Heading(int(level), meter.take(str(title)), int(page))
        for level, title, page in reply["outline"]
    )
    return PagedDocument("pdf", pages, meter.take(str(reply["title"])), outline)


def virtual_size() -> int:
    """This process's address space in bytes (`VmSize`), or 0 where /proc does not say."""
    with suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0
