"""Reading a streamed answer's lines within bounds, as `retry.read_capped` reads a body.

`read_lines` takes the raw pieces of a body (`httpx.Response.iter_raw`) and holds at most
one line (plus one piece) at any time, so a line without an end costs no more than the cap.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

#: The most bytes of one line of a stream.
MAX_LINE_BYTES = 1_000_000


def read_lines(chunks: Iterable[bytes], max_line: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The LF-ended lines of a byte stream (CR before LF dropped), decoded as UTF-8; a line
    longer than `max_line` bytes raises `ValueError` as soon as that many bytes are held."""
    pending = bytearray()
    for chunk in chunks:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            if pending:
                pending += chunk[start:end]
                line = bytes(pending)
                pending.clear()
            else:
                line = chunk[start:end]
            if len(line) > max_line:
                raise ValueError(f"a line of the stream is over {max_line} bytes")
            yield line.removesuffix(b"\r").decode("utf-8", errors="replace")
            start = end + 1
        pending += chunk[start:]
        if len(pending) > max_line:
            raise ValueError(f"a line of the stream is over {max_line} bytes")
    if pending:
        yield bytes(pending).removesuffix(b"\r").decode("utf-8", errors="replace")


__all__ = ["MAX_LINE_BYTES", "read_lines"]
