"""Named model profiles: another embedding model, provider or numeric variant, each with a
side index of its own, and the one that searches and ingests use (docs/models.md).

Design notes: docs/internals.md, `config/models.py`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..datadir import MAX_MODELS_FILE, MODELS_FILE, make_private_dir, replace_file, side_dir
from ..errors import ConfigError
from .settings import Settings

MODELS_VERSION = 1
#: The name `model use` takes for the data dir's own index.
DEFAULT_NAME = "default"
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9_-]{0,30}[a-z0-9])?")
STATES = ("new", "building", "built")
MAX_PROFILES = 64
MAX_VALUE = 2048
_SECRET_WORDS = ("key", "token", "secret", "password")


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """One named model: what embeds its side index, and how far its build got."""

    name: str
    provider: str
    model: str | None = None
    variant: str | None = None
    url: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    state: str = "new"  # "building" from a build's start until it completes
    built_at: int | None = None  # ns since the epoch of the last complete build

    def as_json(self) -> dict[str, Any]:
        """Every field but `name` (the key it is saved under), in their order."""
        data = asdict(self)
        del data["name"]
        return data


@dataclass(frozen=True, slots=True)
class ModelsFile:
    """`models.json`: the profiles by name and the active one (None: the data dir's own)."""

    active: str | None = None
    profiles: Mapping[str, ModelProfile] = field(default_factory=dict)

    def get(self, name: str) -> ModelProfile:
        if name not in self.profiles:
            known = ", ".join(sorted(self.profiles)) or "none yet"
            raise ConfigError(
                f"no model profile named {name!r} (known: {known}); add one with "
                "`chromasync model add NAME --provider ...`"
            )
        return self.profiles[name]


def check_name(name: str) -> str:
    """A profile name: 1-32 lower-case letters, digits, '_' or '-' (it names a folder and
    is part of collection names); `default` is the data dir's own index."""
    if name == DEFAULT_NAME or not _NAME.fullmatch(name):
        raise ConfigError(
            f"model profile name {name!r}: use 1-32 lower-case letters, digits, '_' or '-', "
            f"starting and ending with a letter or digit (not {DEFAULT_NAME!r})"
        )
    return name


def check_options(options: Mapping[str, str]) -> dict[str, str]:
    """A profile's provider options, bounded; a secret (a key, a token) is refused: it
    belongs in the environment, never in models.json."""
    for key, value in options.items():
        if any(word in key.lower() for word in _SECRET_WORDS):
            raise ConfigError(
                f"embedding option {key!r} looks like a secret; set it in the environment "
                "(CHROMASYNC_EMBEDDING_API_KEY), not in a model profile"
            )
        if len(key) > 64 or len(str(value)) > MAX_VALUE:
            raise ConfigError(f"embedding option {key!r} is too long")
    return {str(k): str(v) for k, v in options.items()}


def models_path(data_dir: Path) -> Path:
    return data_dir / MODELS_FILE


def load_models(data_dir: Path) -> ModelsFile:
    """The data dir's `models.json` (an empty `ModelsFile` when there is none); a damaged
    file is a `ConfigError` that names it."""
    path = models_path(data_dir)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_MODELS_FILE + 1)
    except FileNotFoundError:
        return ModelsFile()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    try:
        if len(raw) > MAX_MODELS_FILE:
            raise ValueError(f"larger than {MAX_MODELS_FILE} bytes")
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("version") != MODELS_VERSION:
            raise ValueError(f"not a version {MODELS_VERSION} models file")
        profiles = {}
        for name, item in dict(data.get("profiles") or {}).items():
            if not isinstance(item, dict) or item.get("state", "new") not in STATES:
                raise ValueError(f"profile {name!r} is malformed")
            profiles[check_name(str(name))] = ModelProfile(
                name=str(name),
                provider=str(item["provider"]),
                model=_text(item.get("model")),
                variant=_text(item.get("variant")),
                url=_text(item.get("url")),
                options=check_options(dict(item.get("options") or {})),
                state=str(item.get("state", "new")),
                built_at=int(item["built_at"]) if item.get("built_at") else None,
            )
        active = data.get("active")
        if active is not None and active not in profiles:
            raise ValueError(f"the active profile {active!r} is not defined")
    except (ValueError, TypeError, KeyError, RecursionError, ConfigError) as exc:
        raise ConfigError(
            f"{path} is damaged ({exc}); fix it or remove it (the data dir's own index is "
            "then used again)"
        ) from exc
    return ModelsFile(active=active, profiles=profiles)


def _text(value: object) -> str | None:
    return None if value in (None, "") else str(value)[:MAX_VALUE]


def save_models(data_dir: Path, models: ModelsFile) -> None:
    """Write `models.json` atomically: readers see the old file or the new one, whole."""
    if len(models.profiles) > MAX_PROFILES:
        raise ConfigError(f"at most {MAX_PROFILES} model profiles; drop one first")
    make_private_dir(data_dir)
    data = {
        "version": MODELS_VERSION,
        "active": models.active,
        "profiles": {n: p.as_json() for n, p in sorted(models.profiles.items())},
    }
    replace_file(models_path(data_dir), json.dumps(data, indent=2).encode("utf-8"))


def with_profile(settings: Settings, profile: ModelProfile) -> Settings:
    """The data dir's settings turned into `profile`'s: its embedder, its side data dir and
    its collections; each value it sets names the profile as its origin (`config show`)."""
    options = dict(profile.options)
    if profile.variant:
        options["variant"] = profile.variant
    values: dict[str, Any] = {
        "provider": profile.provider,
        "model": profile.model,
        "embedding_url": profile.url,
        "provider_options": options,
        "data_dir": Path(side_dir(settings.data_dir, profile.name)),
        "collection": f"{settings.collection}.{profile.name}",
    }
    origin = f"model profile {profile.name!r} ({settings.data_dir / MODELS_FILE})"
    origins = {**settings.origins, **dict.fromkeys(values, origin)}
    return replace(settings, **values, origins=origins)


def apply_active(settings: Settings) -> Settings:
    """`settings` as searches and ingests use them: the active profile's, when the data
    dir's `models.json` names one."""
    models = load_models(settings.data_dir)
    if models.active is None:
        return settings
    return with_profile(settings, models.get(models.active))


__all__ = [
    "DEFAULT_NAME",
    "MODELS_VERSION",
    "ModelProfile",
    "ModelsFile",
    "apply_active",
    "check_name",
    "check_options",
    "load_models",
    "models_path",
    "save_models",
    "with_profile",
]
