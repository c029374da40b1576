"""Every setting is declared once and checked once, after precedence, whatever its origin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from chromasync.config.file import ConfigModel, load_config_file
from chromasync.config.resolve import resolve_settings
from chromasync.config.settings import SETTINGS, Settings
from chromasync.config.spec import Setting
from chromasync.errors import ConfigError


def _file(tmp_path: Path, key: str, value: str) -> Path:
    *sections, name = key.split(".")
    text = "version: 1\n"
    for depth, section in enumerate(sections):
        text += "  " * depth + f"{section}:\n"
    text += "  " * len(sections) + f"{name}: {value}\n"
    path = tmp_path / "chromasync.yaml"
    path.write_text(text)
    return path


def _problem(tmp_path: Path, key: str | None, env: str | None, value: str) -> str:
    with pytest.raises(ConfigError) as info:
        if key is not None:
            resolve_settings({}, {}, load_config_file(_file(tmp_path, key, value)))
        else:
            resolve_settings({}, {env or "": value})
    return str(info.value)


# The four that issue 29 found accepted from the environment, refused by the file.
ISSUE_29 = [
    ("CHROMASYNC_DUPLICATE_THRESHOLD", "search.duplicate_threshold", "7", "between 0 and 1, got 7"),
    ("CHROMASYNC_KEYWORD_REFRESH_S", "search.keyword_refresh_s", "-5", "at least 0, got -5"),
    ("CHROMASYNC_CHUNK_MAX_TOKENS", "chunking.max_tokens", "3", "at least 9, got 3"),
    ("CHROMASYNC_CHROMA_RETRIES", None, "0", "between 1 and 20, got 0"),
]


@pytest.mark.parametrize(("env", "key", "value", "words"), ISSUE_29)
def test_the_environment_is_refused_as_the_file_is(
    tmp_path: Path, env: str, key: str | None, value: str, words: str
) -> None:
    from_env = _problem(tmp_path, None, env, value)
    assert from_env == f"{env} must be {words} (environment)"
    if key is not None:
        from_file = _problem(tmp_path, key, None, value)
        assert from_file == f"{tmp_path / 'chromasync.yaml'}: line {key.count('.') + 2}: " + (
            f"`{key}` must be {words}"
        )


BOUNDED = [s for s in SETTINGS if s.low is not None or s.high is not None or s.choices]


def _outside(spec: Setting) -> str:
    if spec.choices:
        return "nonsense"
    if spec.low is not None:
        return str(spec.low - 1 if spec.kind == "int" else spec.low - 0.5)
    return str((spec.high or 0) + 1)


def _tail(problem: str) -> str:
    """What a problem says after the setting's name, without where it came from."""
    text = problem.split(" must be ", 1)[1]
    return text.removesuffix(" (environment)").removesuffix(" (flag)")


@pytest.mark.parametrize("spec", BOUNDED, ids=lambda s: s.name)
def test_every_bound_is_the_same_from_every_origin(tmp_path: Path, spec: Setting) -> None:
    value = _outside(spec)
    problems = [_problem(tmp_path, None, env, value) for env in spec.env]
    problems += [_problem(tmp_path, key, None, value) for key in spec.file]
    with pytest.raises(ConfigError) as info:
        resolve_settings({spec.name: value}, {})
    problems.append(str(info.value))
    assert len({_tail(p) for p in problems}) == 1, problems
    assert all(spec.bound() in p for p in problems)
    spelled = [*spec.env, *(f"`{key}`" for key in spec.file), spec.name]
    assert [p.split(": ")[-1].split(" must be ")[0] for p in problems] == spelled


@pytest.mark.parametrize(
    ("env", "value", "words"),
    [
        ("CHROMASYNC_LLM_TIMEOUT", "nan", "must be a number, got 'nan'"),
        ("CHROMASYNC_DUPLICATE_THRESHOLD", "inf", "must be a number, got 'inf'"),
        ("CHROMASYNC_CHROMA_RETRIES", "2.5", "must be a whole number, got '2.5'"),
        ("CHROMASYNC_ANSWER_CONTEXT_TOKENS", "9000000", "must be between 64 and 2,000,000"),
        ("CHROMASYNC_LLM_MODEL", "m" * 600, "must be at most 512 characters"),
        ("CHROMASYNC_CHROMA_TIMEOUT", "0", "must be greater than 0 and at most 3,600, got 0"),
    ],
)
def test_environment_values_are_checked(env: str, value: str, words: str) -> None:
    with pytest.raises(ConfigError, match=f"^{env} {words}"):
        resolve_settings({}, {env: value})


def test_the_file_value_a_higher_origin_overrides_is_not_checked(tmp_path: Path) -> None:
    file = load_config_file(_file(tmp_path, "search.duplicate_threshold", "7"))
    settings = resolve_settings({}, {"CHROMASYNC_DUPLICATE_THRESHOLD": "0.5"}, file)
    assert settings.duplicate_threshold == 0.5
    assert settings.origins["duplicate_threshold"] == "env CHROMASYNC_DUPLICATE_THRESHOLD"


def test_every_problem_at_once(tmp_path: Path) -> None:
    path = tmp_path / "chromasync.yaml"
    path.write_text("version: 1\nsearch:\n  duplicate_threshold: 2\nanswer:\n  retries: 0\n")
    env = {"CHROMASYNC_CHROMA_RETRIES": "0"}
    with pytest.raises(ConfigError) as info:
        resolve_settings({}, env, load_config_file(path))
    message = str(info.value)
    assert message.startswith("3 settings are invalid:")
    for words in ("CHROMASYNC_CHROMA_RETRIES", "`search.duplicate_threshold`", "`answer.retries`"):
        assert words in message


def test_numbers_from_the_file_and_the_environment_read_alike(tmp_path: Path) -> None:
    file = load_config_file(_file(tmp_path, "search.keyword_refresh_s", "60.0"))
    assert resolve_settings({}, {}, file).keyword_refresh_s == 60
    assert resolve_settings({}, {"CHROMASYNC_KEYWORD_REFRESH_S": " 60 "}).keyword_refresh_s == 60
    for bad in ("x", "true", "[1]"):
        file = load_config_file(_file(tmp_path, "search.keyword_refresh_s", bad))
        with pytest.raises(ConfigError, match=r"`search\.keyword_refresh_s` must be a whole"):
            resolve_settings({}, {}, file)


def test_the_file_schema_is_made_from_the_declaration() -> None:
    keys = set()
    for spec in SETTINGS:
        for key in spec.file:
            model = ConfigModel
            *sections, name = key.split(".")
            for section in sections:
                annotation = model.model_fields[section].annotation
                model = next(a for a in annotation.__args__ if a is not type(None))  # type: ignore[union-attr]
            assert name in model.model_fields, key
            keys.add(key)
    assert "search.duplicate_threshold" in keys and "server.url" in keys
    names = {s.name for s in SETTINGS}
    assert names == {f for f in Settings.__dataclass_fields__} - {"config_file", "origins"}


def test_secrets_are_never_echoed() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_settings({"chroma_token": ["csk-CANARY"]}, {})
    assert "CANARY" not in str(info.value) and "chroma_token must be text" in str(info.value)


def test_the_cli_loads_the_schema_only_for_a_config_file() -> None:
    """pydantic (the config file's schema) costs a CLI start a few hundred ms on a busy
    machine: `chromasync ingest` with the fast path off imports it only to read a file."""
    code = (
        "import sys\nimport chromasync.cli.main\n"
        "print(sorted(m for m in ('pydantic', 'chromasync.config.file') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "token",
    # issue 40's held-out variants: padding, a newline, a non-ASCII letter, 1 MB
    ["a", "x" * 15, " " * 15 + "x", "x" * 8 + "\n" + "y" * 8, "é" * 16, "x" * 1_000_000],
)
def test_a_short_or_unsendable_api_token_is_refused_without_showing_it(token: str) -> None:
    with pytest.raises(ConfigError, match="CHROMASYNC_API_TOKEN must be 16 to 4096") as err:
        resolve_settings({}, {"CHROMASYNC_API_TOKEN": token})
    shown = str(err.value)
    assert repr(token) not in shown and f"got {token}" not in shown and "token_urlsafe" in shown
    assert resolve_settings({}, {"CHROMASYNC_API_TOKEN": "x" * 16}).api_token == "x" * 16


@pytest.mark.parametrize(
    "env",
    [
        "CHROMASYNC_CHROMA_URL",
        "CHROMASYNC_EMBEDDING_URL",
        "CHROMASYNC_LLM_URL",
        "CHROMASYNC_NATS_URL",
    ],
)
@pytest.mark.parametrize("url", ["http://u:p4ss#Secr3t@h:1/v1", "http://[::1", "http://h:99999"])
def test_a_url_no_client_can_read_is_refused_without_showing_it(env: str, url: str) -> None:
    """A password's unescaped `#` made `--llm-url` an `httpx.InvalidURL` traceback, `chroma_url`
    an error naming `'p4ss'` as its port, and `chromasync nats` retry for ever."""
    with pytest.raises(ConfigError, match=f"{env} is not a URL whose host and port") as err:
        resolve_settings({}, {env: url})
    assert "p4ss" not in str(err.value) and "Secr3t" not in str(err.value)
    assert resolve_settings({}, {env: "http://u:p4ss%23Secr3t@h:1/v1"})  # percent-encoded: read


def _cli_options() -> list[tuple[str, click.Option]]:
    from chromasync.cli.main import main

    found: list[tuple[str, click.Option]] = []

    def walk(command: click.Command, name: str) -> None:
        found.extend((name, p) for p in command.params if isinstance(p, click.Option))
        for child, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{name} {child}")

    walk(main, "chromasync")
    return found


def test_every_settings_flag_is_made_from_its_declaration() -> None:
    """A flag whose help names a setting's variable is made from the setting: its help ends
    with the generated variable and default, its range is the declared bound."""
    by_env = {spec.env[0]: spec for spec in SETTINGS if spec.env}
    seen = set()
    for command, option in _cli_options():
        for env, spec in by_env.items():
            if f"env {env}" not in (option.help or ""):
                continue
            seen.add(spec.name)
            default = f"; default: {spec.default}" if spec.default not in (None, "") else ""
            tail = f"[env {' or '.join(spec.env)}{default}]."
            assert (option.help or "").endswith(tail), (command, option.opts)
            if isinstance(option.type, click.IntRange | click.FloatRange):
                assert (option.type.min, option.type.max) == (spec.low, spec.high), option.opts
    assert {"batch_size", "chroma_retries", "chunk_max_tokens", "llm_url", "data_dir"} <= seen


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["a", "b", "-s", "x"], "--source names one source"),
        (["a", "-s", "x", "-s", "y"], "with PATH, --source names one source"),
        (["--gc-only", "--no-gc"], "contradict each other"),
        (["--include-text"], "--include-text needs --output-manifest"),
        (["--reset", "--dry-run"], "--reset cannot be combined"),
        (["--include", "*.md", "--include-hidden"], "--include, --include-hidden apply to a PATH"),
        (["--kind", "code", "--identity", "a/b"], "--kind, --identity apply to a PATH"),
        (["a", "b", "--identity", "a/b"], "--identity names one PATH's source"),
        (["--commit-sha", "xyz"], "is not a commit id"),
        (["--retry-attempts", "21"], "1<=x<=20"),
        (["--batch-size", "0"], "1<=x<=100000"),
        (["--chunk-size", "8"], "x>=9"),
    ],
)
def test_ingest_usage_errors_come_before_any_work(
    tmp_path: Path, argv: list[str], message: str
) -> None:
    """A bad combination of `ingest` flags is bad usage (exit 2, one line), before the
    settings or the store are read; a setting's flag keeps the setting's bound."""
    from click.testing import CliRunner

    from chromasync.cli.main import main

    env = {"CHROMASYNC_DATA_DIR": str(tmp_path / "missing" / "data")}
    result = CliRunner().invoke(main, ["ingest", *argv], env=env)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert not (tmp_path / "missing").exists()


def test_every_settings_flag_reaches_its_setting(tmp_path: Path) -> None:
    """The value of a flag made by `setting_option` is its setting's, whatever the flag's
    spelling (`--retry-attempts` is `chroma_retries`); one with its own `param` is not."""
    from chromasync.cli.common import SETTING_FLAGS, settings_from_flags

    made = {option.name for _, option in _cli_options()} & {spec.name for spec in SETTINGS}
    assert made - {"date_fields"} == SETTING_FLAGS  # `--date-field`: the request's own
    given = {"chroma_retries": 3, "batch_size": 7, "chunk_max_tokens": 50, "threshold": 0.5}
    settings = settings_from_flags(active_model=False, data_dir=str(tmp_path), **given)
    assert (settings.chroma_retries, settings.batch_size, settings.chunk_max_tokens) == (3, 7, 50)
    assert settings.duplicate_threshold == 0.95  # `--threshold` is the request's
