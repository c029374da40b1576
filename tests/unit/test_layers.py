"""The house: imports flow one way, down the stages (docs/architecture.md).

Every module's imports are parsed (top-level, lazy ones inside functions, and those under
`TYPE_CHECKING`), and each import of another chromasync module must go to the same stage, an
earlier one, or the base. Surfaces may import earlier surfaces in `SURFACES`' order, never a
later one. `corpus` and `chunk` share a rank and never import each other; so do `store` and
`state`, and `sync` (the write shell) and `retrieve` (the read path), and `answer` never
imports `sync` (`APART`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "chromasync"

#: Modules every stage may import (the root package itself only for `__version__`).
BASE = {"chromasync", "errors", "records", "metakeys", "versions", "retry", "datadir", "plugins"}

#: The stages in order; a module may import its own stage and any earlier one.
STAGES: list[set[str]] = [
    {"config"},
    {"corpus", "chunk"},
    {"plan"},
    {"embed"},
    {"store", "state"},
    {"sync", "retrieve"},
    {"answer"},
    {"api"},
    {"owner"},
]
#: Stages that never import each other, whatever their ranks: `corpus` (files -> documents)
#: and `chunk` (a document -> chunks) are siblings joined by the shells; the read path
#: (`retrieve`, `answer`) depends on nothing of the write shell (`sync`).
APART: list[set[str]] = [
    {"corpus", "chunk"},
    {"store", "state"},
    {"sync", "retrieve"},
    {"sync", "answer"},
]
#: Surfaces, in the order they may import each other (a later one may import an earlier one).
SURFACES = [
    "adapters",
    "watch",
    "rest",
    "mcp",
    "nats",
    "cli",
    "action",
    "cmdline",
    "fastpath",
    "__main__",
]


def stage_of(module: str) -> str:
    """`chromasync.sync.ingest` -> `sync`; the root package -> `chromasync`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def rank_of(stage: str) -> tuple[int, int]:
    if stage in BASE:
        return (0, 0)
    for i, group in enumerate(STAGES, start=1):
        if stage in group:
            return (i, 0)
    if stage in SURFACES:
        return (len(STAGES) + 1, SURFACES.index(stage))
    raise AssertionError(f"stage {stage!r} is in no layer: add it to test_layers.py")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every chromasync module `path` imports, as absolute names, wherever the import is."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: -(node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("chromasync"):
                continue
            found.add(target)
            for alias in node.names:  # `from . import api` imports the module `api`
                candidate = PACKAGE.parent / f"{target}.{alias.name}".replace(".", "/")
                if candidate.with_suffix(".py").exists() or (candidate / "__init__.py").exists():
                    found.add(f"{target}.{alias.name}")
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("chromasync"))
    return found


def violations() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        # The root package re-exports the API: it is the facade, at the rank of `api`.
        own = "api" if module == "chromasync" else stage_of(module)
        for target in sorted(imports_of(path)):
            other = stage_of(target)
            if other == own or target == "chromasync":
                continue
            if {own, other} in APART:
                out.append(f"{module} imports {target}: {own} and {other} never import each other")
            elif rank_of(other) > rank_of(own):
                out.append(f"{module} imports {target}, a later stage ({other} after {own})")
    return out


def test_every_module_has_a_stage() -> None:
    for path in PACKAGE.rglob("*.py"):
        rank_of(stage_of(module_name(path)))


def test_imports_flow_one_way() -> None:
    found = violations()
    assert not found, "\n".join(found)


def missing_modules() -> list[str]:
    """Imports of chromasync modules that do not exist (a relative import left one level off
    when a module moved into a subpackage: the layer rule alone cannot see it)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for target in sorted(imports_of(path)):
            candidate = PACKAGE.parent / target.replace(".", "/")
            if not (candidate.with_suffix(".py").exists() or (candidate / "__init__.py").exists()):
                out.append(f"{module_name(path)} imports {target}, which does not exist")
    return out


def test_every_import_names_a_module_of_the_package() -> None:
    found = missing_modules()
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from ..sync.ingest import run", ["imports chromasync.sync.ingest, a later stage"]),
        ("def f():\n    from ..api import search\n", ["imports chromasync.api, a later stage"]),
        ("if TYPE_CHECKING:\n    from ..owner import client\n", ["a later stage"]),
        ("from ..state.manifest import State", ["store and state never import each other"]),
        ("from ..plan.triage import plan_file", []),
        ("from .. import errors", []),
    ],
)
def test_the_guard_sees_lazy_and_type_only_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, expected: list[str]
) -> None:
    """The guard itself can fail: a planted upward import in a copy of the package is caught."""
    fake = tmp_path / "chromasync"
    (fake / "store").mkdir(parents=True)
    for stage in ("sync", "api", "owner", "state", "plan", "errors"):
        if stage in ("api", "errors"):
            (fake / f"{stage}.py").write_text("")
        else:
            (fake / stage).mkdir()
            (fake / stage / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "store" / "__init__.py").write_text("")
    (fake / "store" / "chroma.py").write_text(source)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake, raising=False)
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    found = violations()
    assert len(found) == len(expected), found
    for text, want in zip(found, expected, strict=True):
        assert want in text


def test_the_guard_keeps_corpus_and_chunk_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunker that reads a file itself (chunk importing corpus) is caught, both ways."""
    fake = tmp_path / "chromasync"
    for stage in ("corpus", "chunk"):
        (fake / stage).mkdir(parents=True)
        (fake / stage / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "chunk" / "text.py").write_text("from ..corpus.read import read_file\n")
    (fake / "corpus" / "read.py").write_text("def f():\n    from ..chunk.text import chunk_text\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    found = violations()
    assert len(found) == 2, found
    assert all("never import each other" in text for text in found), found


#: Most lines a module may have, and a function (its `def` to its last line, docstring in).
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80

#: What is over a limit today (none), each to be split: the test fails when one of these grows,
#: and when one shrinks under the limit without leaving this list (it only shortens).
OVER_LIMIT: dict[str, int] = {}


def sizes() -> dict[str, int]:
    """Every module's and every function's length in lines, over the limits only."""
    over: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_MODULE_LINES:
            over[name] = text.count("\n")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    over[f"{name}:{node.name}"] = length
    return over


def test_modules_and_functions_stay_short() -> None:
    """No module over 500 lines and no function over 80, but those in `OVER_LIMIT`, none
    of which may grow; one that got under the limit leaves the list."""
    over = sizes()
    new = {k: v for k, v in over.items() if k not in OVER_LIMIT}
    grown = {
        k: (OVER_LIMIT[k], v) for k, v in over.items() if k in OVER_LIMIT and v > OVER_LIMIT[k]
    }
    fixed = sorted(set(OVER_LIMIT) - set(over))
    assert not new, f"over the limits ({MAX_MODULE_LINES}, {MAX_FUNCTION_LINES}): {new}"
    assert not grown, f"grown (allowed, now): {grown}"
    assert not fixed, f"under the limit now: take them out of OVER_LIMIT: {fixed}"


def test_no_import_cycle() -> None:
    """No two modules import each other, directly or around a loop (the shared tool's count:
    top-level and lazy imports, not those under `TYPE_CHECKING`)."""
    import subprocess
    import sys

    tool = PACKAGE.parents[1].parent / "shared" / "tools" / "import_graph.py"
    if not tool.exists():
        pytest.skip(f"{tool} is not beside the project")
    done = subprocess.run(
        [sys.executable, str(tool), str(PACKAGE)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and " 0 import cycle(s)" in done.stdout, done.stdout
