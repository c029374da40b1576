"""`chromasync model`: a side index with another model, built while searches answer from the
old one, resumed after a kill, evaluated side by side, switched to, dropped.

The second model is the local OpenAI-compatible embedding server (`tests/servers.py`)
serving hash vectors of another dimension, or the `hash` provider with another dimension.
"""

from __future__ import annotations

import errno
import json
import shutil
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chromasync import api
from chromasync.cli.main import main
from chromasync.config.models import load_models
from chromasync.embed.hashing import HashEmbedder
from chromasync.embed.local import DEFAULT_MODEL_ID, LocalEmbedder
from chromasync.errors import ConfigError, EmbeddingError, storage_error
from chromasync.sync import models as side
from chromasync.versions import CHUNKING_VERSION

from ..conftest import run_cli
from ..servers import HeldEmbeddingServer

KEY = "sk-test-5b1e0c"


def _env(data: Path, **extra: str) -> dict[str, str]:
    return {
        "CHROMASYNC_DATA_DIR": str(data),
        "CHROMASYNC_EMBEDDING_PROVIDER": "hash",
        "CHROMASYNC_COLLECTIONS": "per-kind",
        "CHROMASYNC_NO_DAEMON": "1",
        **extra,
    }


def _cli(args: Sequence[str], env: dict[str, str]) -> Any:
    result = CliRunner().invoke(main, list(args), env=env)
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def _home(data: Path, env: dict[str, str] | None = None) -> api.Settings:
    """The data dir's own settings (not the active profile's)."""
    return api.configure({}, env or _env(data), data, active_model=False)


def test_side_index_builds_while_search_answers_then_switch_eval_drop(
    notes: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    env = _env(data, OPENAI_API_KEY=KEY)
    _cli(["ingest", str(notes), "--quiet"], env)
    reference = HashEmbedder(dimension=48)
    with HeldEmbeddingServer(reference.embed_documents, "hash-48", KEY) as server:
        _cli(
            [
                *("model", "add", "emb", "--provider", "openai", "--model", "hash-48"),
                *("--embedding-url", server.url),
            ],
            env,
        )
        stored = (data / "models.json").read_text()
        assert KEY not in stored and json.loads(stored)["active"] is None
        home = _home(data, env)
        built: list[Any] = []
        builder = threading.Thread(
            target=lambda: built.append(side.build_profile(home, "emb")), daemon=True
        )
        builder.start()
        assert (
            server.waiting.wait(60) or not builder.is_alive()
        )  # the build is embedding, held at its first request
        assert load_models(data).profiles["emb"].state == "building"
        hits = api.search("grinder calibration", api.configure({}, env, tmp_path), k=3)
        assert hits and {h.collection for h in hits} == {"chromasync-notes"}
        server.release()
        builder.join(60)
        assert built and sum(s.chunks_embedded for s in built[0]) > 0
        assert load_models(data).profiles["emb"].state == "built"

        listed = json.loads(_cli(["model", "list", "--json"], env).output)
        rows = {r["name"]: r for r in listed}
        assert rows["default"]["active"] and not rows["emb"]["active"]
        assert rows["emb"]["records"] == rows["default"]["records"] > 0
        assert rows["emb"]["model_id"] == "openai:hash-48"
        assert rows["emb"]["chunking_version"] == CHUNKING_VERSION

        queries = tmp_path / "q.jsonl"
        queries.write_text(
            json.dumps({"query": "grinder calibration", "relevant": ["coffee.md"]}) + "\n"
        )
        compared = json.loads(_cli(["model", "eval", "emb", str(queries), "--json"], env).output)
        assert set(compared["reports"]) == {"default", "emb"}
        assert set(compared["versus"]) == {"dense", "hybrid"}
        assert compared["reports"]["emb"]["queries"] == 1

        _cli(["model", "use", "emb"], env)
        assert json.loads((data / "models.json").read_text())["active"] == "emb"
        before = len(server.requests)
        fresh = run_cli(["search", "espresso grinder", "--json"], env=env)
        assert fresh.returncode == 0, fresh.stderr
        found = json.loads(fresh.stdout)
        assert found["collections"] == ["chromasync.emb-notes"] and found["hits"]
        asked = [r["input"] for r in server.requests[before:]]
        assert ["espresso grinder"] in asked  # the query, embedded by the profile's model
        shown = _cli(["config", "show"], env).output
        assert "model profile 'emb'" in shown

        dropped = CliRunner().invoke(main, ["model", "drop", "emb"], env=env)
        assert dropped.exit_code == 2 and "is active" in dropped.output
        _cli(["model", "use", "default"], env)
    _cli(["model", "drop", "emb"], env)
    assert not (data / "models" / "emb").exists()
    assert "emb" not in load_models(data).profiles
    back = json.loads(_cli(["search", "grinder", "--json"], env).output)
    assert back["collections"] == ["chromasync-notes"] and back["hits"]


def test_side_build_killed_midway_resumes(notes: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = _env(data)
    other = tmp_path / "more"
    shutil.copytree(notes, other)
    _cli(["ingest", str(notes), "--quiet"], env)
    _cli(["ingest", str(other), "--quiet"], env)
    _cli(["model", "add", "h32", "--provider", "hash", "--embed-option", "dimension=32"], env)
    # killed after the second source's vectors are written, before its manifest rows
    killed = run_cli(
        ["model", "build", "h32"], env={**env, "CHROMASYNC_CRASH_AT": "after-upsert:2"}
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert load_models(data).profiles["h32"].state == "building"
    listed = _cli(["model", "list"], env).output
    assert "incomplete" in listed
    summaries = side.build_profile(_home(data), "h32")
    by_source = {s.source: s for s in summaries}
    assert by_source["notes"].files_unchanged == by_source["notes"].files_seen > 0
    assert by_source["more"].chunks_total == by_source["notes"].chunks_total
    assert load_models(data).profiles["h32"].state == "built"
    rows = {r.name: r for r in side.profile_rows(_home(data))}
    assert rows["h32"].records == rows["default"].records
    assert rows["h32"].model_id == "hash-32" and rows["default"].model_id == "hash-64"
    # the side index shares the data dir's embedding cache: built again, nothing is embedded
    assert not (data / "models" / "h32" / "embeddings.sqlite3").exists()
    _cli(["model", "drop", "h32"], env)
    _cli(["model", "add", "h32", "--provider", "hash", "--embed-option", "dimension=32"], env)
    again = side.build_profile(_home(data), "h32")
    assert sum(s.chunks_embedded for s in again) == 0 < sum(s.chunks_total for s in again)
    assert side.profile_rows(_home(data))[1].records == rows["default"].records


def test_profile_names_secrets_and_damage_are_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = _env(data)
    bad = CliRunner().invoke(main, ["model", "add", "../x", "--provider", "hash"], env=env)
    assert bad.exit_code == 2 and "model profile name" in bad.output
    secret = CliRunner().invoke(
        main, ["model", "add", "x", "--provider", "openai", "--embed-option", "api_key=s"], env=env
    )
    assert (
        secret.exit_code == 2 and "secret" in secret.output and not (data / "models.json").exists()
    )
    unknown = CliRunner().invoke(main, ["model", "use", "nope"], env=env)
    assert unknown.exit_code == 2 and "no model profile named 'nope'" in unknown.output
    data.mkdir(exist_ok=True)
    (data / "models.json").write_text('{"version": 1, "active": "ghost", "profiles": {}}')
    with pytest.raises(ConfigError, match="damaged"):
        api.configure({}, env, tmp_path)
    empty = CliRunner().invoke(main, ["search", "x"], env=env)
    assert empty.exit_code == 2 and "models.json" in empty.output


def test_switched_index_refuses_a_query_of_another_model(notes: Path, tmp_path: Path) -> None:
    """The vectors' model is recorded: a profile's collection never answers another model."""
    data = tmp_path / "data"
    env = _env(data)
    _cli(["ingest", str(notes), "--quiet"], env)
    _cli(["model", "add", "h32", "--provider", "hash", "--embed-option", "dimension=32"], env)
    _cli(["model", "use", "h32"], env)  # the catch-up build runs first
    switched = api.configure({}, env, tmp_path)
    assert switched.collection == "chromasync.h32" and switched.provider_options["dimension"]
    with pytest.raises(EmbeddingError, match="holds vectors of 'hash-32'"):
        api.search("grinder", switched, embedder=HashEmbedder(dimension=64), mode="dense")
    (notes / "late.md").write_text("# Late\n\nA note about tamping pressure.\n")
    _cli(["model", "use", "default"], env)  # the data dir's own index catches up first
    back = api.search("tamping pressure", api.configure({}, env, tmp_path), k=1)
    assert back and back[0].path == "late.md" and back[0].collection == "chromasync-notes"


class _Variants(LocalEmbedder):
    """The local provider's ids and variant rules with hash vectors salted by the variant
    (as tests/integration/test_model_variants.py), so that two variants' vectors differ."""

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return HashEmbedder(self.dimension).embed_documents([f"{self.variant} {t}" for t in texts])

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_two_numeric_variants_side_by_side(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chromasync.embed import PROVIDERS, runtime

    monkeypatch.setattr(runtime, "native_bf16", lambda: False)
    monkeypatch.setitem(
        PROVIDERS._items, "variants", lambda o: _Variants(variant=o.get("variant", "auto"))
    )
    data = tmp_path / "data"
    env = _env(data, CHROMASYNC_EMBEDDING_PROVIDER="variants")
    api.ingest([api.source_for(notes)], _home(data, env), embedder=_Variants(variant="fp32"))
    _cli(["model", "add", "q8", "--provider", "variants", "--variant", "int8"], env)
    _cli(["model", "build", "q8"], env)
    rows = {r.name: r for r in side.profile_rows(_home(data, env))}
    assert rows["q8"].model_id == f"{DEFAULT_MODEL_ID}@int8"
    assert rows["default"].model_id == DEFAULT_MODEL_ID
    assert rows["q8"].records == rows["default"].records > 0
    _cli(["model", "use", "q8"], env)
    switched = api.configure({}, env, tmp_path)
    assert switched.provider_options == {"variant": "int8"}
    hits = api.search("grinder calibration", switched, k=3, mode="dense")
    assert hits and {h.collection for h in hits} == {"chromasync.q8-notes"}


@pytest.mark.model
def test_the_real_model_in_another_numeric_variant(notes: Path, tmp_path: Path) -> None:
    """The real default model, on the notes only: the data dir's index in the variant this
    machine picks (int8 or bf16 on a CPU), a profile in another (fp32; int8 where the
    machine picks fp32) built beside it, measured, switched to and back."""
    data = tmp_path / "data"
    env = _env(data, CHROMASYNC_EMBEDDING_PROVIDER="local")
    _cli(["ingest", str(notes), "--quiet"], env)
    own = side.profile_rows(_home(data, env))[0].model_id
    variant = "int8" if own == DEFAULT_MODEL_ID else "fp32"
    _cli(["model", "add", "other", "--provider", "local", "--variant", variant], env)
    _cli(["model", "build", "other"], env)
    rows = {r.name: r for r in side.profile_rows(_home(data, env))}
    expected = DEFAULT_MODEL_ID if variant == "fp32" else f"{DEFAULT_MODEL_ID}@int8"
    assert rows["other"].model_id == expected != rows["default"].model_id
    assert rows["other"].records == rows["default"].records > 0
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        json.dumps({"query": "calibrating the coffee grinder", "relevant": ["guides/install.md"]})
        + "\n"
    )
    compared = json.loads(
        _cli(["model", "eval", "other", str(queries), "--mode", "dense", "--json"], env).output
    )
    for label in ("default", "other"):  # the same model: both find the page first
        assert compared["reports"][label]["modes"]["dense"]["mrr"] == 1.0
    _cli(["model", "use", "other"], env)
    switched = api.configure({}, env, tmp_path)
    hits = api.search("calibrating the coffee grinder", switched, k=1, mode="dense")
    assert hits[0].path == "guides/install.md" and hits[0].collection == "chromasync.other-notes"
    _cli(["model", "use", "default"], env)


def _embedding_full() -> EmbeddingError:
    """The disk filled while the model's export was written: the provider's error."""
    try:
        raise OSError(errno.ENOSPC, "No space left on device")
    except OSError as exc:
        try:
            raise EmbeddingError("cannot write the model's ONNX export") from exc
        except EmbeddingError as wrapped:
            return wrapped


@pytest.mark.parametrize("where", ["store", "export"])
def test_a_side_build_that_fills_the_disk_says_model_drop_frees_it(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """`export`: the disk filled in the model's export, an `EmbeddingError` over the
    `OSError` (issue 40's held-out variant): it did not say `model drop`."""
    data = tmp_path / "data"
    env = _env(data)
    _cli(["ingest", str(notes), "--quiet"], env)
    _cli(["model", "add", "h32", "--provider", "hash", "--embed-option", "dimension=32"], env)

    def full(*args: Any, **kwargs: Any) -> Any:
        if where == "export":
            raise _embedding_full()
        found = storage_error(OSError(errno.ENOSPC, "No space left on device"), data)
        assert found is not None
        raise found

    monkeypatch.setattr(side, "ingest", full)
    result = CliRunner().invoke(main, ["model", "build", "h32"], env=env)
    assert result.exit_code == 1, result.output
    said = " ".join(result.stderr.split())
    assert "is full" in said and "`chromasync model drop h32` frees it" in said
    assert load_models(data).profiles["h32"].state == "building"
