"""Which client a URL selects, and where the secrets come from (pure parts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chromasync.config.resolve import resolve_settings
from chromasync.errors import ConfigError
from chromasync.store.target import StoreConfig, Target, parse_target


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8000", Target("http", "127.0.0.1", 8000, False)),
        ("http://chroma.internal", Target("http", "chroma.internal", 8000, False)),
        ("https://chroma.example.com", Target("http", "chroma.example.com", 443, True)),
        ("https://chroma.example.com:8443/", Target("http", "chroma.example.com", 8443, True)),
        ("chroma-cloud://", Target("cloud", "api.trychroma.com", 443, True)),
        ("chroma-cloud://eu.example.com", Target("cloud", "eu.example.com", 443, True)),
        ("chroma-cloud+http://127.0.0.1:9000", Target("cloud", "127.0.0.1", 9000, False)),
    ],
)
def test_parse_target(url: str, expected: Target) -> None:
    assert parse_target(url) == expected


@pytest.mark.parametrize(
    "url", ["ftp://x", "localhost:8000", "https://user:s3cret@host", "http://:tok@host"]
)
def test_parse_target_refuses(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_target(url)
    assert "s3cret" not in str(info.value) and "tok@" not in str(info.value)


def test_store_config_never_shows_the_token() -> None:
    config = StoreConfig(Path("/tmp/x"), url="https://h:1", token="tok-123456")
    assert "tok-123456" not in repr(config)
    assert "tok-123456" not in config.describe()
    assert config.redact("Bearer tok-123456 refused") == "Bearer *** refused"


def test_cloud_key_from_chroma_api_key_only_for_cloud() -> None:
    env = {"CHROMA_API_KEY": "ck-abcdef"}
    cloud = resolve_settings({"chroma_url": "chroma-cloud://"}, env)
    assert cloud.chroma_token == "ck-abcdef"
    assert cloud.origins["chroma_token"] == "env CHROMA_API_KEY"
    # a plain server never receives the Cloud key
    assert resolve_settings({"chroma_url": "http://127.0.0.1:8000"}, env).chroma_token is None
    ours = resolve_settings(
        {"chroma_url": "chroma-cloud://"}, {**env, "CHROMASYNC_CHROMA_TOKEN": "mine"}
    )
    assert ours.chroma_token == "mine"


def test_openai_key_from_environment_and_masked() -> None:
    env = {"OPENAI_API_KEY": "sk-fallback", "CHROMASYNC_EMBEDDING_URL": "http://e/v1"}
    settings = resolve_settings({"provider": "openai"}, env)
    assert settings.embedding_api_key == "sk-fallback"
    assert settings.embedding_options()["url"] == "http://e/v1"
    preferred = resolve_settings({}, {**env, "CHROMASYNC_OPENAI_API_KEY": "sk-ours"})
    assert preferred.embedding_api_key == "sk-ours"
    shown = {name: value for name, value, _ in preferred.shown()}
    assert shown["embedding_api_key"] == "****** (set)"
    assert "sk-ours" not in repr(preferred) and "sk-ours" not in str(preferred.shown())


def test_timeout_must_be_a_number() -> None:
    with pytest.raises(ConfigError, match="CHROMASYNC_CHROMA_TIMEOUT must be a number"):
        resolve_settings({}, {"CHROMASYNC_CHROMA_TIMEOUT": "soon"})
