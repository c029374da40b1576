"""`chromasync chunk-report`: ingest's own chunking, summed up, with no store and no model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.embed.runtime import auto_variant, native_bf16

from ..conftest import REPO, age_tree, invoke_cli


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """Markdown with front matter, code, text, JSON, and things ingest skips."""
    root = tmp_path / "mixed"
    shutil.copytree(REPO / "examples" / "notes", root)
    methods = "\n\n".join(
        f"    def method_{i}(self, value):\n        return value * {i} + {i * 3}" for i in range(40)
    )
    (root / "store.py").write_text(f"import os\n\n\nclass Store:\n{methods}\n")
    (root / "config.json").write_text('{"name": "demo", "version": 1}\n')
    (root / "secret.md").write_text("---\nprivate: true\n---\nHidden.\n")
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    age_tree(root)
    return root


def test_report_matches_what_ingest_stores(
    mixed: Path, settings: Settings, embedder: HashEmbedder
) -> None:
    report = api.chunk_report(mixed, settings, embedder=embedder)
    assert not settings.data_dir.exists()  # no state, no store
    by_ext = {e.extension: e for e in report.extensions}
    assert by_ext[".py"].files == 1 and by_ext[".py"].tokens.count >= 40
    assert by_ext[".json"].tokens.count == 1
    assert report.files == 7 and report.over_budget == 0
    assert report.tokens.max <= report.max_tokens == embedder.max_tokens
    assert report.skipped.get("private") == 1
    assert sum(report.skipped.values()) >= 2  # the image too
    store = next(f for f in report.per_file if f.path == "store.py")
    assert store.labels == ("", *(f"Store.method_{i}" for i in range(40)))

    [summary] = api.ingest([api.source_for(mixed)], settings, embedder=embedder)
    collection = api.open_store(settings).collection(settings.collection, create=False)
    stored = Counter(str(r.metadata["path"]) for r in collection.iter_records())
    assert summary.chunks_total == report.tokens.count
    assert stored == Counter({f.path: f.tokens.count for f in report.per_file})


def test_cli_json_text_and_verbose(mixed: Path, cli_env: dict[str, str], data_dir: Path) -> None:
    result = invoke_cli(["chunk-report", str(mixed), "--json"], env=cli_env)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    data = json.loads(result.stdout)
    assert data["files"] == 7 and data["over_budget"] == 0 and "per_file" not in data
    assert {e["extension"] for e in data["extensions"]} == {".md", ".txt", ".py", ".json"}
    assert sum(e["chunks"] for e in data["extensions"]) == data["chunks"]

    verbose = json.loads(
        invoke_cli(["chunk-report", str(mixed), "--json", "--verbose"], env=cli_env).stdout
    )
    assert [f["path"] for f in verbose["per_file"]] == sorted(
        f["path"] for f in verbose["per_file"]
    )
    assert sum(f["chunks"] for f in verbose["per_file"]) == data["chunks"]

    text = invoke_cli(["chunk-report", str(mixed), "-v"], env=cli_env)
    assert text.returncode == 0 and text.stderr == ""
    assert "chunk-report" in text.stdout and "store.py" in text.stdout
    assert "private: 1" in text.stdout
    assert not data_dir.exists()


def test_cli_missing_path_is_an_error(tmp_path: Path, cli_env: dict[str, str]) -> None:
    result = invoke_cli(["chunk-report", str(tmp_path / "nope")], env=cli_env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "does not exist" in result.stderr


PROBE = r"""
import json, sys
from chromasync.cli.main import main
try:
    main(["chunk-report", sys.argv[1], "--json"], standalone_mode=False)
finally:
    heavy = sorted(m for m in ("chromadb", "onnxruntime", "torch", "sentence_transformers")
                   if m in sys.modules)
    print(json.dumps({"heavy": heavy}), file=sys.stderr)
"""


def test_default_provider_loads_no_model_and_no_store(mixed: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHROMASYNC_")}
    env.update(PYTHONPATH=str(REPO / "src"), CHROMASYNC_DATA_DIR=str(tmp_path / "data"))
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(mixed)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    # the default variant on this CPU (bf16 with AMX, else int8: embed/local.py), named
    variant = auto_variant("auto", "auto", native_bf16())
    assert json.loads(probe.stdout)["model"] == f"sentence-transformers/all-MiniLM-L6-v2@{variant}"
    assert json.loads(probe.stderr.strip().splitlines()[-1]) == {"heavy": []}
    assert not (tmp_path / "data").exists()
