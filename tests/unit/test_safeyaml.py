"""The one bounded YAML loader, and every YAML entry point fed random and adversarial YAML.

Each entry point (a note's front matter, the config file, a sources file, the text edits of
`sources add/remove`) answers with a result, a counted skip or a `ConfigError` that names the
file: never a traceback (`RecursionError` from 1,000 nested lists, a billion laughs that
grows without end, a `ValueError` from `2001-02-30`). The JSON files chromasync reads back
(a model folder's, the data dir's own) nested past the decoder's recursion: refused or
ignored, never a `RecursionError`.
"""

from __future__ import annotations

import datetime as dt
import re
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chromasync.config.file import load_config_file, load_sources_file
from chromasync.config.safeyaml import MAX_CHARS, MAX_DEPTH, load_yaml
from chromasync.config.sourcesfile import append_items, remove_item
from chromasync.corpus.read import decode_document
from chromasync.errors import ConfigError
from chromasync.records import FileStat
from tests.bombs import block_lists, block_mappings, laughs

SRC = Path(__file__).resolve().parents[2] / "src" / "chromasync"


@pytest.mark.parametrize(
    ("text", "why", "line"),
    [
        ("x: " + "[" * 1000 + "]" * 1000, "nested deeper than 64", 1),
        ("x: " + "{a: " * 5000 + "}" * 5000, "nested deeper than 64", 1),
        ("top: 1\n" + block_mappings(200), "nested deeper than 64", 65),
        (block_lists(200), "nested deeper than 64", 65),
        (laughs(9), "over 100,000 values, aliases expanded", 6),
        ("a: " + "x" * MAX_CHARS, "over 256 KiB of YAML", None),
        ("n: " + "1" * 5000, "not a readable int value", 1),
        ("f: !!float abc", "not a readable float value", 1),
        ("\n\nt: !!timestamp", "not a readable timestamp value", 3),
        ("\ns: !!set 0", "expected a mapping node", 2),
        ("? [a, b]\n: 1\n", "a key is not a scalar", 1),
        ("!!set a: 1\n", "a key is not a scalar", 1),
        ("a: 1\nb:\n  k: 1\n  k: 2\n", "duplicate key 'k'", 4),
        ("a: 1\n1: x\ntrue: y\n1: z\n", "duplicate key 1", 4),
        ("x: !!python/object/apply:os.system ['true']", "could not determine a constructor", 1),
        # a ValueError traceback from the scanner's chr(); a lone surrogate, which no record
        # holds (Chroma refused the whole write); a NUL, which named no line
        ('a: 1\nx: "\\U00110000"', "an escape names no character", 2),
        ('x: "\\ud800"', "an escape names half a character", 1),
        ('"\\udc80": 1', "an escape names half a character", 1),
        ("a: 1\nb: 2\nc: \x00", "a control character", 3),
    ],
)
def test_bounds_refused_with_their_line(text: str, why: str, line: int | None) -> None:
    with pytest.raises(yaml.MarkedYAMLError, match=why) as caught:
        load_yaml(text)
    mark = caught.value.problem_mark
    assert (mark.line + 1 if mark is not None else None) == line


def test_within_the_bounds_all_is_read() -> None:
    levels = MAX_DEPTH - 2  # the top mapping, these lists, the scalar in the last one
    value = load_yaml("x: " + "[" * levels + "1" + "]" * levels)[0]["x"]
    for _ in range(levels):
        value = value[0]
    assert value == 1
    data, node = load_yaml(laughs(4))  # 10 + 91 + 820 + 7,381 values
    assert len(data["l3"]) == 9 and data["l3"][0] is data["l2"]  # one list, never copied
    assert node.value[0][0].value == "l0"
    assert load_yaml("a: &x 1\nb: *x\n")[0] == {"a": 1, "b": 1}
    assert load_yaml("d: 2001-02-30\nok: 2001-02-28")[0] == {
        "d": "2001-02-30",
        "ok": dt.date(2001, 2, 28),
    }
    assert load_yaml("") == (None, None) and load_yaml("# nothing\n") == (None, None)
    assert load_yaml('x: "\\ud83d\\ude00"')[0] == {"x": "\U0001f600"}  # a pair: one character
    with pytest.raises(yaml.MarkedYAMLError, match="aliases are not allowed"):
        load_yaml("a: &x 1\nb: *x\n", aliases=False)


def test_one_loader_reads_all_yaml() -> None:
    """No module but `config/safeyaml.py` builds a YAML loader of its own."""
    loaders = re.compile(r"yaml\.(safe_load|load|compose|full_load|unsafe_load)\b|Loader\b")
    found = [
        f"{path.relative_to(SRC)}:{number}"
        for path in SRC.rglob("*.py")
        if path.name != "safeyaml.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if loaders.search(line)
    ]
    assert found == []


# -- every entry point, fed random and adversarial YAML ------------------------------------

FRAGMENTS = [
    *"[]{},:-?!&*|>'\"#%@`\t\n ",
    "  ",
    "\n  ",
    "- ",
    ": ",
    "? ",
    "&a ",
    "*a",
    "&b ",
    "*b",
    "<<: ",
    "!!set ",
    "!!omap ",
    "!!binary ",
    "!!timestamp ",
    "!!python/name:os.system ",
    "!local ",
    "---\n",
    "...\n",
    "%YAML 1.1\n",
    "key",
    "private: true\n",
    "sources:\n",
    "content_sources:\n",
    "path: n\n",
    "version: 1\n",
    "2001-02-30",
    "2001-12-14t21:59:43.10-05:00",
    "1:2:3:4",
    "0x" + "f" * 40,
    "0b1" + "1" * 300,
    "9" * 5000,
    "1e9999",
    ".nan",
    "~",
    "\x00",
    "\x85",
    "\ufeff",
    "\u2028",
    "\U0001f600",
    "é",
    '"\\ud800"',
    '"\\U00110000"',
]
deep = st.integers(0, 1500).flatmap(
    lambda n: st.sampled_from(
        ["x: " + "[" * n + "]" * n, "x: " + "{a: " * n + "}" * n, block_mappings(min(n, 100))]
    )
)
bombs = st.builds(laughs, st.integers(1, 8), st.integers(1, 12))
soup = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=60).map("".join)
ADVERSARIAL = st.one_of(soup, st.text(max_size=200), deep, bombs)
PROPERTY = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@PROPERTY
@given(ADVERSARIAL)
def test_front_matter_is_a_document_or_a_counted_skip(text: str) -> None:
    raw = f"---\n{text}\n---\n# Body\n\ntext\n".encode("utf-8", "surrogatepass")
    outcome = decode_document(FileStat("n.md", "/n.md", len(raw), 0), raw, "h")
    assert (outcome.document is None) != (outcome.skip is None)
    if outcome.skip is not None:
        assert outcome.skip.reason in {"frontmatter-invalid", "private", "undecodable", "binary"}
        assert "\n" not in outcome.skip.detail


@PROPERTY
@given(ADVERSARIAL)
def test_config_and_sources_files_load_or_name_the_file(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "chromasync.yaml"
        config.write_bytes(text.encode("utf-8", "surrogatepass"))
        sources = Path(tmp) / "content-sources.md"
        sources.write_bytes(f"---\n{text}\n---\n".encode("utf-8", "surrogatepass"))
        for load, path in ((load_config_file, config), (load_sources_file, sources)):
            try:
                load(path)
            except ConfigError as exc:
                assert str(exc).startswith((str(path), f"cannot read {path.stem}")), exc
                assert not str(exc).startswith(f"{path}: invalid YAML") or "\n" not in str(exc)


@PROPERTY
@given(ADVERSARIAL, st.booleans())
def test_source_edits_edit_or_refuse(text: str, add: bool) -> None:
    try:
        if add:
            edited = append_items(text, "sources", [{"path": "n"}])
            assert load_yaml(edited)[0]["sources"][-1] == {"path": "n"}
        else:
            remove_item(text, "sources", 0)
    except ConfigError as exc:
        assert str(exc).startswith("cannot edit") and "\n" not in str(exc)


# -- the JSON files chromasync reads back, nested past what the decoder recurses ----------

DEEP_JSON = "[" * 200_000 + "]" * 200_000  # a RecursionError traceback from each reader


def test_json_files_nested_too_deep_are_refused_or_ignored(tmp_path: Path) -> None:
    from chromasync.answer.summaries import SUMMARIES_FILE, load_cache
    from chromasync.embed.modelfiles import read_json
    from chromasync.errors import EmbeddingError
    from chromasync.state.snapshots import FOLDER, recent_runs

    (tmp_path / "config.json").write_text(DEEP_JSON)  # a model folder's
    with pytest.raises(EmbeddingError, match=r"config\.json' is unreadable"):
        read_json(tmp_path, "config.json")
    (tmp_path / SUMMARIES_FILE).write_text(DEEP_JSON)  # a data dir's own files: as if absent
    assert load_cache(tmp_path) == {}
    (tmp_path / FOLDER).mkdir()
    (tmp_path / FOLDER / "x.ran").write_text(DEEP_JSON)
    assert recent_runs(str(tmp_path)) == {}
