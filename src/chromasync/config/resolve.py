"""Precedence: one function resolves the settings, flag over environment over config file
over default.

Design notes: docs/internals.md, `config/resolve.py`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..datadir import CONFIG_ENV as CONFIG_ENV
from ..datadir import CONFIG_FILE_NAME as CONFIG_FILE_NAME
from ..datadir import config_path
from ..errors import ConfigError
from .parsed import ConfigFile
from .settings import DEFAULT_PRIVACY_KEYS, SETTINGS, Settings
from .spec import check

#: Chroma Cloud's own variable, used for the token only when the URL is chroma-cloud://.
CLOUD_KEY_ENV = "CHROMA_API_KEY"


def find_config_file(flag: str | Path | None, environ: Mapping[str, str], cwd: Path) -> Path | None:
    """The config file to read (`datadir.config_path`: `--config`, else `CHROMASYNC_CONFIG`,
    else ./chromasync.yaml). A file named by the flag or the environment must exist; the
    default one is optional."""
    found, named = config_path(str(flag) if flag else None, environ, str(cwd))
    if named and not os.path.isfile(found):
        how = "--config" if flag else CONFIG_ENV
        raise ConfigError(f"config file {found!r} (from {how}) does not exist")
    return Path(found) if named or os.path.isfile(found) else None


def resolve_settings(
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    file: ConfigFile | None = None,
) -> Settings:
    """Settings from flags (None means not given), then `CHROMASYNC_*`, then the config
    file, then defaults; each value's origin is recorded.

    Every value is checked once, here, after precedence (`spec.check`); every problem is
    reported at once, each naming the setting as its origin spells it.
    """
    flags = flags or {}
    environ = environ or {}
    file_values = file.settings if file is not None else {}
    known = {spec.name for spec in SETTINGS}
    unknown = set(flags) - known
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    problems: list[str] = []
    for spec in SETTINGS:
        # a variable set to blanks is unset (a key of spaces never hides OPENAI_API_KEY)
        env_name = next((n for n in spec.env if environ.get(n, "").strip()), None)
        if flags.get(spec.name) is not None:
            raw, origin, spelled, where = flags[spec.name], "flag", spec.name, ("", " (flag)")
        elif env_name is not None:
            raw, origin, spelled = environ[env_name], f"env {env_name}", env_name
            where = ("", " (environment)")
        elif file is not None and spec.name in file_values:
            found = file_values[spec.name]
            raw, origin, spelled = found.value, file.origin(found.line), f"`{found.key}`"
            where = (f"{file.path}: line {found.line}: ", "")
        else:
            raw, origin, spelled, where = spec.default, "default", spec.name, ("", " (default)")
        value, problem = check(spec, raw, spelled)
        if problem is not None:
            problems.append(where[0] + problem + where[1])
        values[spec.name] = value
        origins[spec.name] = origin
    if problems:
        if len(problems) == 1:
            raise ConfigError(problems[0])
        raise ConfigError(f"{len(problems)} settings are invalid:\n  " + "\n  ".join(problems))
    url = str(values.get("chroma_url") or "")
    if url.startswith("chroma-cloud") and not values["chroma_token"] and environ.get(CLOUD_KEY_ENV):
        values["chroma_token"] = environ[CLOUD_KEY_ENV]
        origins["chroma_token"] = f"env {CLOUD_KEY_ENV}"
    values["editor_uri"] = values["editor_uri"] or None
    values["provider_options"] = dict(values["provider_options"] or {})
    values["skip_paths"] = tuple(values["skip_paths"] or ())
    keys = values["privacy_keys"]
    values["privacy_keys"] = (
        tuple(k.strip().lower() for k in keys) if keys else DEFAULT_PRIVACY_KEYS
    )
    if file is not None:
        origins["config"] = file.found_by
    return Settings(**values, config_file=file, origins=origins)
