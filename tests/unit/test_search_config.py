"""Retrieval settings: from the config file's `search:` section, the environment and flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from chromasync.config.file import load_config_file
from chromasync.config.resolve import resolve_settings
from chromasync.config.sources import configure
from chromasync.errors import ConfigError


def test_search_section_sets_retrieval_settings(tmp_path: Path) -> None:
    config = tmp_path / "chromasync.yaml"
    config.write_text(
        "version: 1\n"
        "search:\n"
        "  date_fields: [created, date]\n"
        "  rerank_model: models/ce\n"
        "  duplicate_threshold: 0.9\n"
        "  keyword_refresh_s: 60\n"
    )
    settings = resolve_settings({}, {}, load_config_file(config))
    assert settings.date_field_names == ("created", "date")
    assert settings.rerank_model == str(tmp_path / "models" / "ce")
    assert settings.duplicate_threshold == 0.9
    assert settings.keyword_refresh_s == 60
    assert settings.origins["duplicate_threshold"].endswith("chromasync.yaml:5")
    env = {"CHROMASYNC_DUPLICATE_THRESHOLD": "0.8", "CHROMASYNC_DATE_FIELDS": "published_at"}
    over = resolve_settings({}, env, load_config_file(config))
    assert over.duplicate_threshold == 0.8 and over.date_field_names == ("published_at",)


def test_a_reranker_folder_named_relative_is_the_callers_folder(tmp_path: Path) -> None:
    """`CHROMASYNC_RERANK_MODEL=ce` (or `--rerank ce`) from another folder was answered by
    a search daemon started elsewhere with its own `ce` (the key held the words, not the
    folder; issue 40): it is the folder under the command's own cwd."""
    for flags, env in (({"rerank_model": "ce"}, {}), ({}, {"CHROMASYNC_RERANK_MODEL": "ce"})):
        settings = configure(flags, {**env, "CHROMASYNC_DATA_DIR": str(tmp_path)}, tmp_path)
        assert settings.rerank_model == str(tmp_path / "ce")
    home = configure({"rerank_model": "~/ce"}, {"CHROMASYNC_DATA_DIR": str(tmp_path)}, tmp_path)
    assert home.rerank_model == str(Path("~/ce").expanduser())


def test_defaults_and_bad_values(tmp_path: Path) -> None:
    settings = resolve_settings({}, {})
    assert settings.date_field_names == ("date", "published_at")
    assert settings.rerank_model is None and settings.duplicate_threshold == 0.95
    with pytest.raises(ConfigError, match="CHROMASYNC_DUPLICATE_THRESHOLD must be a number"):
        resolve_settings({}, {"CHROMASYNC_DUPLICATE_THRESHOLD": "high"})
    config = tmp_path / "chromasync.yaml"
    config.write_text("version: 1\nsearch:\n  duplicate_threshold: 2\n  fuzzy: true\n")
    with pytest.raises(ConfigError):
        load_config_file(config)
