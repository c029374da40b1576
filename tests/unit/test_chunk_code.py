"""Code chunking with tree-sitter: preamble, declarations, members, fallbacks, data files."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from chromasync.chunk import chunk_document
from chromasync.chunk.code import parser_for
from chromasync.chunk.languages import GRAMMARS, LANGUAGES
from chromasync.config.kinds import CODE_LANGUAGES

from .chunking import assert_chunks_valid, document, minilm

SAMPLES: dict[str, tuple[str, list[tuple[int, int, str | None]]]] = {
    "a.py": (
        '"""Module doc."""\nimport os\n\nX = 1\n\n\n@decorator\ndef f(a):\n    return a\n\n\n'
        'class A(Base):\n    """Doc."""\n\n    y = 2\n\n    def m(self):\n        return self.y\n',
        [(1, 4, None), (7, 9, "f"), (12, 18, "A")],
    ),
    "a.js": (
        'import { x } from "./x";\n\nexport class Square {\n  constructor(side) {}\n'
        "  area() {\n    return this.side * this.side;\n  }\n}\n\n"
        "export const double = (n) => {\n  return n * 2;\n};\n",
        [(1, 1, None), (3, 8, "Square"), (10, 12, "double")],
    ),
    "a.ts": (
        'import { x } from "./x";\n\nexport interface Shape {\n  area(): number;\n}\n\n'
        "export function twice(n: number): number {\n  return n * 2;\n}\n",
        [(1, 1, None), (3, 5, "Shape"), (7, 9, "twice")],
    ),
    "a.tsx": (
        'import React from "react";\n\nexport function App() {\n  return <div>hi</div>;\n}\n',
        [(1, 1, None), (3, 5, "App")],
    ),
    "a.go": (
        'package main\n\nimport (\n\t"fmt"\n)\n\n// Server serves.\ntype Server struct {\n'
        "\taddr string\n}\n\n// Start starts it.\nfunc (s *Server) Start() error {\n"
        '\tfmt.Println("start")\n\treturn nil\n}\n',
        [(1, 5, None), (7, 10, "Server"), (12, 16, "Server.Start")],
    ),
    "a.rs": (
        "use std::io;\n\n/// A point.\npub struct Point {\n    x: i32,\n}\n\nimpl Point {\n"
        "    pub fn new() -> Self {\n        Point { x: 1 }\n    }\n}\n",
        [(1, 1, None), (3, 6, "Point"), (8, 12, "Point")],
    ),
    "a.java": (
        "package a.b;\n\nimport java.util.List;\n\n/** A thing. */\npublic class Thing {\n"
        "    private int x;\n\n    public int get() {\n        return x;\n    }\n}\n",
        [(1, 3, None), (5, 12, "Thing")],
    ),
    "a.c": (
        "#include <stdio.h>\n\nstruct point {\n    int x;\n};\n\nstatic int add(int a, int b)\n"
        "{\n    return a + b;\n}\n",
        [(1, 1, None), (3, 5, "point"), (7, 10, "add")],
    ),
    "a.cpp": (
        "#include <vector>\n\nnamespace geo {\nclass Shape {\npublic:\n"
        "    virtual double area() const = 0;\n};\n}\n\nint main() {\n    return 0;\n}\n",
        [(1, 1, None), (3, 8, "geo"), (10, 12, "main")],
    ),
    "a.cs": (
        "using System;\n\nnamespace App\n{\n    public class Greeter\n    {\n"
        '        public string Greet(string n)\n        {\n            return "Hi " + n;\n'
        "        }\n    }\n}\n",
        [(1, 1, None), (3, 12, "App")],
    ),
    "a.rb": (
        'require "json"\n\nmodule Tools\n  class Parser\n    def parse(text)\n'
        "      JSON.parse(text)\n    end\n  end\nend\n\ndef helper(x)\n  x * 2\nend\n",
        [(1, 1, None), (3, 9, "Tools"), (11, 13, "helper")],
    ),
    "a.php": (
        "<?php\nnamespace App;\n\nfunction helper($x) {\n    return $x * 2;\n}\n\n"
        'class Greeter {\n    public function greet($n) {\n        return "Hi " . $n;\n'
        "    }\n}\n",
        [(1, 2, None), (4, 6, "helper"), (8, 12, "Greeter")],
    ),
    "a.sh": (
        '#!/bin/bash\nset -euo pipefail\n\ngreet() {\n    echo "hello $1"\n}\n\ngreet world\n',
        [(1, 2, None), (4, 6, "greet"), (8, 8, None)],
    ),
    "a.json": (
        '{\n  "name": "demo",\n  "scripts": {\n    "test": "jest"\n  }\n}\n',
        [(1, 6, None)],
    ),
    "a.yaml": ("name: demo\non:\n  push:\n    branches: [main]\n", [(1, 4, None)]),
    "a.toml": ('[project]\nname = "demo"\n\n[tool.ruff]\nline-length = 100\n', [(1, 5, None)]),
    "a.css": (
        '@import url("base.css");\n\n/* Cards. */\n.card, .panel > p {\n  color: red;\n}\n\n'
        "@media (max-width: 600px) {\n  .card { color: blue; }\n}\n",
        [(1, 1, None), (3, 6, ".card, .panel > p"), (8, 10, "@media (max-width: 600px)")],
    ),
    "a.kt": (
        "package demo\n\nimport kotlin.math.max\n\n// A point.\nclass Point(val x: Int) {\n"
        "    fun norm(): Int = max(x, 0)\n\n    fun twice(): Point {\n        return Point(x * 2)\n"
        '    }\n}\n\nfun main() {\n    println("hi")\n}\n',
        [(1, 3, None), (5, 12, "Point"), (14, 16, "main")],
    ),
    "a.lua": (
        "local M = {}\n\n-- Runs it.\nfunction M.run()\n  return 1\nend\n\n"
        "local function helper(x)\n  return x\nend\n\nreturn M\n",
        [(1, 1, None), (3, 6, "M.run"), (8, 10, "helper"), (12, 12, None)],
    ),
    "a.swift": (
        "import Foundation\n\n/// A point.\nstruct Point {\n    var x: Int\n"
        '    func norm() -> Int { return x }\n}\n\nfunc greet() -> String {\n  "hi"\n}\n',
        [(1, 1, None), (3, 7, "Point"), (9, 11, "greet")],
    ),
    "a.xml": (
        '<?xml version="1.0"?>\n<project>\n  <groupId>demo</groupId>\n  <dependencies>\n'
        "    <dependency>a</dependency>\n  </dependencies>\n</project>\n",
        [(1, 7, None)],
    ),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_declarations(name: str) -> None:
    text, expected = SAMPLES[name]
    doc = document(text, name)
    budget = minilm()
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert [(c.start_line, c.end_line, c.symbol) for c in chunks] == expected
    assert all(c.language == doc.language for c in chunks)
    assert all(c.context == "" for c in chunks)  # top-level declarations that fit


def test_every_language_has_a_bundled_grammar() -> None:
    for spec in LANGUAGES.values():
        assert parser_for(spec.grammar) is not None, spec.grammar


def _sample_of(language: str) -> str:
    for name, (text, _) in SAMPLES.items():
        if CODE_LANGUAGES["." + name.rsplit(".", 1)[1]] == language:
            return text
    raise AssertionError(f"no sample for {language}")


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_each_language_parses_with_its_official_grammar_package(language: str) -> None:
    """Every language's grammar loads from its own package and parses its sample cleanly."""
    grammar = LANGUAGES[language].grammar
    module, function = GRAMMARS[grammar]
    parser = parser_for(grammar)
    assert parser is not None, grammar
    tree = parser.parse(_sample_of(language).encode())
    assert not tree.root_node.has_error, language
    assert tree.root_node.named_child_count > 0
    loaded = importlib.import_module(module)
    assert callable(getattr(loaded, function))
    assert sys.modules[module] is loaded


def test_grammar_packages_are_declared_dependencies() -> None:
    """Each grammar's package is a default dependency of the project (no run-time fetch)."""
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    declared = {
        re.split(r"[<>=!~\[; ]", dep, maxsplit=1)[0].replace("-", "_")
        for dep in pyproject["project"]["dependencies"]
    }
    modules = {module for module, _ in GRAMMARS.values()}
    assert modules <= declared, sorted(modules - declared)
    assert "tree_sitter_language_pack" not in declared
    for module in modules:  # installed as a distribution of that name
        assert importlib.metadata.version(module.replace("_", "-"))


def test_chunking_code_never_imports_the_language_pack() -> None:
    """Every grammar comes from its own package, never from tree-sitter-language-pack."""
    script = (
        "import sys\n"
        "from chromasync.chunk.code import parser_for\n"
        "from chromasync.chunk.languages import LANGUAGES\n"
        "assert all(parser_for(s.grammar) is not None for s in LANGUAGES.values())\n"
        "print(sorted(m for m in sys.modules if 'language_pack' in m))\n"
    )
    src = str(Path(__file__).parents[2] / "src")
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "[]", out.stdout


def _big_class(methods: int) -> str:
    body = "\n\n".join(
        f"    def method_{i}(self, value):\n"
        f'        """Return value plus {i}."""\n'
        f"        total = value + {i}\n"
        f"        return total * {i}"
        for i in range(methods)
    )
    return f'import os\n\n\nclass Store(Base):\n    """A store."""\n\n{body}\n'


def test_large_class_split_into_methods() -> None:
    doc = document(_big_class(12), "store.py")
    budget = minilm(70)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    symbols = [c.symbol for c in chunks]
    assert symbols[0] is None and chunks[0].text == "import os"
    assert symbols[1:] == [f"Store.method_{i}" for i in range(12)]
    # the small class header is glued to the first method
    assert chunks[1].text.startswith("class Store(Base):")
    assert chunks[2].text.lstrip().startswith("def method_1")
    assert all(c.context == f"{c.symbol}\n\n" for c in chunks[1:])


@pytest.mark.parametrize(
    ("name", "text", "symbols"),
    [
        (
            "big.java",
            "public class Big {\n"
            + "\n".join(
                f"    public int m{i}(int v) {{\n        int t = v + {i};\n"
                f"        return t * {i} + {i * 7};\n    }}\n"
                for i in range(8)
            )
            + "}\n",
            [f"Big.m{i}" for i in range(8)],
        ),
        (
            "big.rs",
            "impl Big {\n"
            + "\n".join(
                f"    pub fn m{i}(v: i32) -> i32 {{\n        let t = v + {i};\n"
                f"        t * {i} + {i * 7}\n    }}\n"
                for i in range(8)
            )
            + "}\n",
            [f"Big.m{i}" for i in range(8)],
        ),
        (
            "big.ts",
            "export class Big {\n"
            + "\n".join(
                f"  m{i}(v: number): number {{\n    const t = v + {i};\n"
                f"    return t * {i} + {i * 7};\n  }}\n"
                for i in range(8)
            )
            + "}\n",
            [f"Big.m{i}" for i in range(8)],
        ),
        (
            "big.kt",
            "class Big {\n"
            + "\n".join(
                f"    fun m{i}(v: Int): Int {{\n        val t = v + {i}\n"
                f"        return t * {i} + {i * 7}\n    }}\n"
                for i in range(8)
            )
            + "}\n",
            [f"Big.m{i}" for i in range(8)],
        ),
        (
            "big.swift",
            "struct Big {\n"
            + "\n".join(
                f"    func m{i}(v: Int) -> Int {{\n        let t = v + {i}\n"
                f"        return t * {i} + {i * 7}\n    }}\n"
                for i in range(8)
            )
            + "}\n",
            [f"Big.m{i}" for i in range(8)],
        ),
    ],
)
def test_large_containers_split_into_members(name: str, text: str, symbols: list[str]) -> None:
    doc = document(text, name)
    budget = minilm(48)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert [c.symbol for c in chunks] == symbols


def test_oversized_function_split_with_overlap_and_symbol() -> None:
    lines = "\n".join(f"    value_{i} = compute({i}, 'item {i}')" for i in range(80))
    text = f"def build():\n{lines}\n    return value_0\n"
    doc = document(text, "build.py")
    budget = minilm(160)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert len(chunks) > 3
    assert all(c.symbol == "build" and c.context == "build\n\n" for c in chunks)
    assert all(c.overlap > 0 for c in chunks[1:])


def test_parse_error_falls_back_to_paragraphs() -> None:
    text = "def ok():\n    return 1\n\n)))) this is not python ((((\n\nx = [1,\n"
    doc = document(text, "broken.py")
    budget = minilm()
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert all(c.symbol is None for c in chunks)
    assert chunks[0].language == "python"


def test_missing_grammar_is_no_failure() -> None:
    assert parser_for("no-such-grammar") is None
    doc = document("int main() { return 0; }\n", "x.c")
    doc = type(doc)(**{**{f: getattr(doc, f) for f in doc.__slots__}, "language": "cobol"})
    budget = minilm()
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert [c.symbol for c in chunks] == [None]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "package.json",
            '{\n  "name": "demo",\n  "dependencies": {\n'
            + ",\n".join(f'    "package-{i}": "^{i}.0.0"' for i in range(60))
            + "\n  }\n}\n",
        ),
        (
            "pom.xml",
            '<?xml version="1.0"?>\n<project>\n  <name>demo</name>\n  <dependencies>\n'
            + "".join(f"    <dependency>package-{i}</dependency>\n" for i in range(60))
            + "  </dependencies>\n</project>\n",
        ),
    ],
)
def test_large_data_split_at_keys(name: str, text: str) -> None:
    """A JSON object's keys, an XML root element's children: split where too large."""
    doc = document(text, name)
    budget = minilm(100)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert chunks[0].symbol in (None, "name")
    assert {c.symbol for c in chunks[1:]} == {"dependencies"}
    assert all(c.context == "dependencies\n\n" for c in chunks[1:])


def test_toml_tables_are_symbols_when_alone() -> None:
    pairs = "\n".join(f"key_{i} = 'value number {i}'" for i in range(30))
    text = f'[project]\nname = "demo"\n\n[tool.big]\n{pairs}\n'
    doc = document(text, "pyproject.toml")
    budget = minilm(80)
    chunks = chunk_document(doc, budget)
    assert_chunks_valid(doc, chunks, budget)
    assert chunks[0].symbol == "project"
    assert {c.symbol for c in chunks[1:]} == {"tool.big"}


@pytest.mark.parametrize(
    ("name", "language", "text"),
    [
        (
            "Card.vue",
            "vue",
            "<template>\n  <p>{{ x }}</p>\n</template>\n\n<script>\nexport default {}\n</script>\n",
        ),
        (
            "schema.sql",
            "sql",
            "-- Users.\nCREATE TABLE users (\n  id INT PRIMARY KEY\n);\n\nSELECT id FROM users;\n",
        ),
    ],
)
def test_vue_and_sql_are_chunked_at_blank_lines(name: str, language: str, text: str) -> None:
    """Without a grammar (Vue has none packaged; SQL's is 13 MiB, over the plain install's
    size): cut exactly as plain text is (paragraphs at blank lines, packed to the budget),
    with its `language` (issue 39)."""
    doc = document(text, name)
    assert (doc.kind, doc.language) == ("code", language) and language not in LANGUAGES
    tiny = minilm(max_tokens=12)  # too small for both paragraphs together
    chunks = chunk_document(doc, tiny)
    assert_chunks_valid(doc, chunks, tiny)
    as_text = chunk_document(document(text, "same.txt"), minilm(max_tokens=12))
    assert len(chunks) >= 2
    assert [(c.start_line, c.end_line, c.text) for c in chunks] == [
        (c.start_line, c.end_line, c.text) for c in as_text
    ]
    assert all(c.language == language and c.symbol is None for c in chunks)
