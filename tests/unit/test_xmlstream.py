"""The Office XML stream parser (`corpus/xmlstream.py`): what it reports, in pieces of any
size; a DTD refused before anything is expanded; libxml2's bounds kept; no lxml."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chromasync.corpus.pages import Refused
from chromasync.corpus.xmlstream import MAX_DEPTH, MAX_TEXT, MAX_TOKEN, PullParser, children
from tests import bombs

from ..conftest import REPO
from .test_documents import sample_docx, sample_pptx

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
PART = (
    f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{W}"><w:body>'
    '<w:p><w:r><w:t xml:space="preserve">a &amp; b&#x21;</w:t></w:r></w:p>'
    '<!-- a comment --><?pi data?><w:tbl w:val="x" plain="y"/></w:body></w:document>'
).encode()


PIECE = 64 * 1024


def _events(data: bytes, size: int) -> Iterator[tuple[str, list[str]]]:
    parser = PullParser()
    pieces = [data[start : start + size] for start in range(0, len(data), size)]
    for piece in [*pieces, None]:
        if piece is None:
            parser.close()  # and what is left of the last piece
        else:
            parser.feed(piece)
        for element, ancestors in parser.read_events():
            yield element.tag, [a.tag for a in ancestors]


def _parse(data: bytes, size: int = PIECE) -> None:
    for _ in _events(data, size):
        pass


@pytest.mark.parametrize("size", [1, 7, 64 * 1024])
def test_each_element_ends_with_its_ancestors(size: int) -> None:
    body, doc = f"{{{W}}}body", f"{{{W}}}document"
    assert list(_events(PART, size)) == [
        (f"{{{W}}}t", [doc, body, f"{{{W}}}p", f"{{{W}}}r"]),
        (f"{{{W}}}r", [doc, body, f"{{{W}}}p"]),
        (f"{{{W}}}p", [doc, body]),
        (f"{{{W}}}tbl", [doc, body]),
        (body, [doc]),
        (doc, []),
    ]


def test_elements_read_as_element_tree_gives_them() -> None:
    parser = PullParser()
    parser.feed(PART)
    ended = {e.tag: e for e, _ in parser.read_events()}
    parser.close()
    text = ended[f"{{{W}}}t"]
    assert text.text == "a & b!"
    assert text.get("{http://www.w3.org/XML/1998/namespace}space") == "preserve"
    assert ended[f"{{{W}}}tbl"].attrib == {f"{{{W}}}val": "x", "plain": "y"}
    paragraph = ended[f"{{{W}}}p"]
    assert [c.tag for c in children(paragraph, f"{{{W}}}r", f"{{{W}}}x")] == [f"{{{W}}}r"]
    assert [c.tag for c in ended[f"{{{W}}}body"]] == [f"{{{W}}}p", f"{{{W}}}tbl"]  # no comment


@pytest.mark.parametrize(
    "data",
    [
        bombs.LAUGHS + b"<a>&lol9;</a>",
        b'<?xml version="1.0"?><!DOCTYPE a [<!ENTITY e SYSTEM "file:///etc/passwd">]><a>&e;</a>',
        b'<!DOCTYPE a SYSTEM "http://example.invalid/a.dtd"><a/>',
        b"<!DOCTYPE a><a/>",
    ],
)
def test_a_dtd_is_refused_before_anything_is_expanded(data: bytes) -> None:
    start = time.perf_counter()
    with pytest.raises(Refused) as refused:
        _parse(data, 1)
    assert refused.value.reason == "corrupt"
    assert "DTD" in refused.value.detail
    assert time.perf_counter() - start < 1


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        (b"<a>" * (MAX_DEPTH + 1), f"nested over {MAX_DEPTH} deep"),
        (b"<a>" + b"x" * (MAX_TEXT + 1) + b"</a>", f"over {MAX_TEXT} characters"),
        # checked as pieces come: a token may pass the bound by a piece (64 KiB here)
        (b'<a b="' + b"x" * (MAX_TOKEN + PIECE) + b'"/>', f"over {MAX_TOKEN} bytes"),
        (b"<a><!--" + b"x" * (MAX_TOKEN + PIECE) + b"--></a>", f"over {MAX_TOKEN} bytes"),
    ],
)
def test_libxml2s_bounds_are_kept(data: bytes, detail: str) -> None:
    start = time.perf_counter()
    with pytest.raises(Refused) as refused:
        _parse(data)
    assert (refused.value.reason, detail in refused.value.detail) == ("corrupt", True)
    assert time.perf_counter() - start < 5  # an open tag is not parsed again per piece


def test_within_the_bounds_is_read() -> None:
    _parse(b"<a>" * MAX_DEPTH + b"</a>" * MAX_DEPTH)
    _parse(b'<a b="' + b"x" * (MAX_TOKEN - PIECE) + b'">' + b"x" * MAX_TEXT + b"</a>")


@pytest.mark.parametrize("encoding", ["utf-16", "UTF-16LE", "UTF-16BE", "cp1252", "iso-8859-15"])
def test_a_part_is_read_in_its_encoding(encoding: str) -> None:
    parser = PullParser()
    parser.feed(f'<?xml version="1.0" encoding="{encoding}"?><a>\u00e9\u00e8</a>'.encode(encoding))
    parser.close()
    assert [e.text for e, _ in parser.read_events()] == ["\u00e9\u00e8"]


@pytest.mark.parametrize("encoding", ["foo", "shift_jis", "utf-32", "utf-7"])
def test_an_encoding_expat_cannot_read_is_corrupt(encoding: str) -> None:
    with pytest.raises(Refused) as refused:
        _parse(f'<?xml version="1.0" encoding="{encoding}"?><a/>'.encode())
    assert refused.value.reason == "corrupt"


def test_malformed_xml_is_expats_error() -> None:
    from xml.parsers.expat import ExpatError

    for data in (b"<a>", b"<a></b>", b"<a>&nope;</a>", b"<w:a/>", b"<a/><b/>"):
        with pytest.raises(ExpatError):
            _parse(data)


READ = """
import sys
from pathlib import Path
sys.modules["lxml"] = None  # any import of lxml fails
from chromasync.corpus.documents import read_document
for path in sys.argv[1:]:
    found = read_document(Path(path).read_bytes(), path.rsplit(".", 1)[1])
    assert found.pages, found
print(sorted(m for m in sys.modules if m.startswith(("lxml", "docx", "pptx"))))
"""


def test_documents_are_read_without_lxml(tmp_path: Path) -> None:
    docx, pptx = tmp_path / "a.docx", tmp_path / "a.pptx"
    docx.write_bytes(sample_docx())
    pptx.write_bytes(sample_pptx())
    done = subprocess.run(
        [sys.executable, "-c", READ, str(docx), str(pptx)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "['lxml']"  # only the blocked entry
