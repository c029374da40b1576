"""The active model profile's pointer: `models.json`, read by settings and by the console
script's fast paths alike (`datadir.active_dir`, `config.models`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chromasync.config.models import (
    ModelProfile,
    ModelsFile,
    apply_active,
    load_models,
    save_models,
)
from chromasync.config.resolve import resolve_settings
from chromasync.datadir import CACHE_FILE, MODELS_FILE, active_dir, cache_path, guess_from
from chromasync.errors import ConfigError


def test_guess_follows_the_active_profile(tmp_path: Path) -> None:
    home = tmp_path / "data"
    options = {"--data-dir": str(home)}
    assert guess_from(options, {}, str(tmp_path), None) == str(home)
    save_models(home, ModelsFile(active="bge", profiles={"bge": ModelProfile("bge", "hash")}))
    assert guess_from(options, {}, str(tmp_path), None) == str(home / "models" / "bge")
    assert active_dir(str(home / "models" / "bge")) == str(home / "models" / "bge")
    (home / MODELS_FILE).write_bytes(b"\xff not json")
    assert active_dir(str(home)) == str(home)  # the fast paths never fail on it


def test_models_file_round_trips_and_overlays_settings(tmp_path: Path) -> None:
    profile = ModelProfile("q8", "local", variant="int8", options={"threads": "2"})
    save_models(tmp_path, ModelsFile(active="q8", profiles={"q8": profile}))
    assert (tmp_path / MODELS_FILE).stat().st_mode & 0o777 == 0o600
    assert not list(tmp_path.glob(".*.tmp"))
    assert load_models(tmp_path).profiles["q8"] == profile
    home = resolve_settings({"data_dir": str(tmp_path), "provider": "hash"}, {})
    used = apply_active(home)
    assert used.provider == "local" and used.provider_options == {"threads": "2", "variant": "int8"}
    assert used.data_dir == tmp_path / "models" / "q8" and used.collection == "chromasync.q8"
    assert used.origins["provider"].startswith("model profile 'q8'")
    assert not used.owns_collection("chromasync-notes")
    assert not home.owns_collection("chromasync.q8-notes")


@pytest.mark.parametrize(
    "text",
    [
        '{"version": 2, "profiles": {}}',
        '{"version": 1, "profiles": {"A b": {"provider": "hash"}}}',
        '{"version": 1, "profiles": {"x": {"provider": "hash", "state": "odd"}}}',
        '{"version": 1, "profiles": {"x": {"model": "m"}}}',
        "[" * 100_000,
    ],
)
def test_damaged_models_file_is_a_config_error(tmp_path: Path, text: str) -> None:
    (tmp_path / MODELS_FILE).write_text(text)
    with pytest.raises(ConfigError, match="damaged"):
        load_models(tmp_path)


def test_a_side_index_shares_its_data_dirs_embedding_cache(tmp_path: Path) -> None:
    home = tmp_path / "data"
    side = home / "models" / "bge"
    assert cache_path(side) == str(side / CACHE_FILE)  # no models.json: not a side index
    save_models(home, ModelsFile())
    assert cache_path(side) == str(home / CACHE_FILE)
    assert cache_path(home) == str(home / CACHE_FILE)
