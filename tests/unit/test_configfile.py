"""The config file: precedence, unknown keys with lines, secrets refused, the nasty configs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from chromasync import api
from chromasync.cli.main import main
from chromasync.config.file import load_config_file, load_sources_file
from chromasync.config.resolve import find_config_file, resolve_settings
from chromasync.errors import ConfigError

from ..conftest import SHARED

CANARY = "csk_TEST-SECRET-CANARY-123"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_precedence_flag_env_file_default(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "chromasync.yaml",
        "version: 1\nstore:\n  collection: from-file\n  data_dir: state\n"
        "embedding:\n  provider: hash\n  model: m-file\n",
    )
    file = load_config_file(cfg)
    env = {"CHROMASYNC_EMBEDDING_MODEL": "m-env", "CHROMASYNC_COLLECTION": "from-env"}
    settings = resolve_settings({"collection": "from-flag"}, env, file)
    assert settings.collection == "from-flag" and settings.origins["collection"] == "flag"
    assert settings.model == "m-env"
    assert settings.origins["model"] == "env CHROMASYNC_EMBEDDING_MODEL"
    assert settings.provider == "hash" and settings.origins["provider"] == f"file {cfg}:6"
    assert settings.data_dir == tmp_path / "state"
    assert settings.origins["data_dir"] == f"file {cfg}:4"
    assert settings.max_file_bytes == 8 * 1024 * 1024
    assert settings.origins["max_file_bytes"] == "default"


def test_found_by_flag_env_or_current_folder_only(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    write(tmp_path / "chromasync.yaml", "version: 1\n")
    assert find_config_file(None, {}, tmp_path / "sub") is None  # never looks upward
    assert find_config_file(None, {}, tmp_path) == tmp_path / "chromasync.yaml"
    other = write(tmp_path / "other.yaml", "version: 1\n")
    assert find_config_file(None, {"CHROMASYNC_CONFIG": str(other)}, tmp_path) == other
    assert find_config_file("other.yaml", {"CHROMASYNC_CONFIG": "nope"}, tmp_path) == other
    with pytest.raises(ConfigError, match="CHROMASYNC_CONFIG"):
        find_config_file(None, {"CHROMASYNC_CONFIG": "missing.yaml"}, tmp_path)


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        (
            "version: 1\nsources:\n  - path: .\n    colection: x\n",
            ["line 4", "sources[0].colection", "did you mean `collection`"],
        ),
        ("version: 1\nstroe:\n  data_dir: x\n", ["line 2", "`stroe`", "`store`"]),
        (
            "version: 1\nembedding:\n  provider: hash\n  modle: x\nchunking:\n  max_tokns: 9\n",
            ["2 problems", "line 4", "embedding.modle", "line 6", "chunking.max_tokns"],
        ),
        ("version: 2\n", ["line 1", "unsupported config version 2"]),
    ],
)
def test_errors_name_key_and_line(tmp_path: Path, text: str, needles: list[str]) -> None:
    cfg = write(tmp_path / "chromasync.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config_file(cfg)
    for needle in needles:
        assert needle in str(info.value)


def test_toml_unknown_keys_with_lines(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "c.toml",
        'version = 1\n\n[[sources]]\npath = "."\n\n[[sources]]\npath = "."\nlable = "x"\n',
    )
    with pytest.raises(ConfigError) as info:
        load_config_file(cfg)
    assert "line 8: unknown key `sources[1].lable` (did you mean `label`?)" in str(info.value)


def test_ten_thousand_problems_are_twenty_lines(tmp_path: Path) -> None:
    """Every problem of a file was a line of its error: 10,000 unknown tables, 10,000 lines."""
    cfg = write(tmp_path / "c.toml", "version = 1\n" + "".join(f"[t{i}]\n" for i in range(10_000)))
    with pytest.raises(ConfigError) as info:
        load_config_file(cfg)
    lines = str(info.value).splitlines()
    assert lines[0] == f"{cfg}: 10,000 problems:" and lines[-1] == "  and 9,980 more"
    assert len(lines) == 22 and lines[1].startswith("  line 2: unknown key `t0`")


@pytest.mark.parametrize(
    "text",
    [
        f"version: 1\nserver:\n  url: http://x\n  token: {CANARY}\n",
        f"version: 1\nembedding:\n  provider: openai\n  options:\n    api_key: {CANARY}\n",
        f"version: 1\nstore:\n  chroma_token: {CANARY}\n",
    ],
)
def test_secrets_refused_and_never_echoed(tmp_path: Path, text: str) -> None:
    cfg = write(tmp_path / "chromasync.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config_file(cfg)
    message = str(info.value)
    assert CANARY not in message
    assert "secret" in message and "CHROMASYNC_" in message


def test_privacy_keys_and_skip_paths(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "chromasync.yaml",
        "version: 1\nprivacy_keys: [Private, Secret_Note]\nskip_paths: [/drafts/]\n",
    )
    settings = resolve_settings({}, {}, load_config_file(cfg))
    assert settings.privacy_keys == ("private", "secret_note")
    assert settings.skip_paths == ("/drafts/",)


def test_sources_resolved_against_the_file(tmp_path: Path) -> None:
    (tmp_path / "docs" / "content").mkdir(parents=True)
    cfg = write(
        tmp_path / "conf" / "chromasync.yaml",
        "version: 1\nsources:\n"
        "  - path: ../docs\n    kind: docs\n    include: false\n    subdirs: [content/]\n"
        "    include_extensions: [md, .TXT]\n    exclude_extensions: [txt]\n"
        "    metadata: {stability: mature}\n    identity_key: record_uuid\n"
        "  - label: other\n    path: ../docs\n    collection: special\n",
    )
    file = load_config_file(cfg)
    first, second = file.sources
    assert first.label == "docs" and first.path == tmp_path / "docs" and first.line == 3
    assert first.subdirs == ("content",) and first.extensions == (".md",)
    assert first.metadata == {"stability": "mature"} and not first.include
    settings = resolve_settings({}, {}, file)
    assert settings.collection_for(first.kind, first.collection) == "chromasync-docs"
    assert settings.collection_for(second.kind, second.collection) == "special"
    shared = resolve_settings({}, {"CHROMASYNC_COLLECTIONS": "shared"}, file)
    assert shared.collection_for("docs") == "chromasync"


def test_duplicate_labels_name_both_lines(tmp_path: Path) -> None:
    cfg = write(tmp_path / "c.yaml", "sources:\n  - {path: a, label: a}\n  - {path: b, label: a}\n")
    with pytest.raises(ConfigError, match=r"line 3: source label 'a' is already used at .*line 2"):
        load_config_file(cfg)


def test_folder_names_that_clash_get_their_parents_name(tmp_path: Path) -> None:
    """No `label:` names them: the last two path parts (issue 39: two `content` roots)."""
    cfg = write(tmp_path / "c.yaml", "sources:\n  - path: a\n  - path: b/a\n  - path: c\n")
    labels = [e.label for e in load_config_file(cfg).sources]
    assert labels == [f"{tmp_path.name}/a", "b/a", "c"]


def test_root_slash_refused_unless_allowed(tmp_path: Path) -> None:
    cfg = write(tmp_path / "c.yaml", "sources:\n  - path: /\n")
    with pytest.raises(ConfigError, match="allow-root-slash"):
        load_config_file(cfg)
    assert load_config_file(cfg, allow_root=True).sources[0].path == Path("/")


def test_sources_file_front_matter(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    md = write(
        tmp_path / "content-sources.md",
        "---\n# curated\ncontent_sources:\n  - path: notes\n    kind: notes\n"
        "    include: true\n    note: mine\n---\n\n# Body\n",
    )
    [entry] = load_sources_file(md).entries
    assert entry.label == "notes" and entry.note == "mine" and entry.line == 4
    write(md, "---\ncontent_sources:\n  - path: notes\n    inclde: true\n---\nbody\n")
    with pytest.raises(ConfigError, match=r"line 4: unknown key .*inclde.*`include`"):
        load_sources_file(md)


def test_configure_reads_sources_file_without_config(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    write(tmp_path / "s.md", "---\ncontent_sources:\n  - path: notes\n---\n")
    settings = api.configure({}, {}, tmp_path, sources_file="s.md")
    assert [e.label for e in api.configured_entries(settings)] == ["notes"]


# -- the nasty corpus' configs, through the CLI ----------------------------------------------


@pytest.fixture(scope="module")
def nasty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tool = SHARED / "tools" / "make_nasty_corpus.py"
    if not tool.is_file():
        pytest.skip("make_nasty_corpus.py is not present")
    out = tmp_path_factory.mktemp("nasty") / "n"
    subprocess.run([sys.executable, str(tool), str(out)], check=True, capture_output=True)
    return out


def test_nasty_configs(nasty: Path, tmp_path: Path) -> None:
    expected = json.loads((nasty / "expected.json").read_text())["configs"]
    assert len(expected) >= 6
    runner = CliRunner()
    env = {"CHROMASYNC_DATA_DIR": str(tmp_path / "data"), "CHROMASYNC_CONFIG": ""}
    for case in expected:
        path = nasty / case["path"]
        for command in (["config", "show"], ["config", "show", "--json"], ["status"]):
            result = runner.invoke(main, [*command, "--config", str(path)], env=env)
            output = result.stdout + result.stderr
            if case["expect"] == "ok":
                assert result.exit_code == 0, (case, output)
            else:
                assert result.exit_code != 0, (case, output)
                assert result.stderr.startswith("error:"), (case, output)
                assert result.stdout == ""
            for needle in case.get("must_mention", []):
                assert needle in output, (case, output)
            for needle in case.get("must_not_output", []):
                assert needle not in output, (case, output)
    allowed = runner.invoke(
        main,
        [
            "config",
            "show",
            "--config",
            str(nasty / "configs/root-outside.toml"),
            "--allow-root-slash",
        ],
        env=env,
    )
    assert allowed.exit_code == 0, allowed.stderr


def test_config_show_cli(tmp_path: Path) -> None:
    cfg = write(tmp_path / "chromasync.yaml", "version: 1\nstore:\n  collection: mine\n")
    shutil.copy(cfg, tmp_path / "copy.yaml")
    result = CliRunner().invoke(
        main,
        ["config", "show", "--json"],
        env={"CHROMASYNC_CONFIG": str(cfg), "CHROMASYNC_CHROMA_TOKEN": CANARY},
    )
    assert result.exit_code == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)["settings"]}
    assert rows["collection"] == {"name": "collection", "value": "mine", "from": f"file {cfg}:3"}
    assert rows["chroma_token"]["value"] == "****** (set)"
    assert CANARY not in result.stdout + result.stderr


def test_answer_section_and_its_precedence(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "chromasync.yaml",
        "version: 1\nanswer:\n  llm_url: http://localhost:11434/v1\n  llm_model: llama3.2\n"
        "  context_tokens: 2000\n  timeout: 30\n  retries: 2\n  fallback: extractive\n",
    )
    file = load_config_file(cfg)
    settings = resolve_settings({}, {}, file)
    assert settings.llm_url == "http://localhost:11434/v1" and settings.llm_model == "llama3.2"
    assert settings.answer_context_tokens == 2000 and settings.llm_timeout == 30.0
    assert settings.llm_retries == 2 and settings.answer_fallback == "extractive"
    assert settings.origins["llm_url"] == f"file {cfg}:3"
    env = {"CHROMASYNC_LLM_URL": "http://env:1/v1", "OPENAI_API_KEY": CANARY}
    settings = resolve_settings({"llm_model": "flagged"}, env, file)
    assert settings.llm_url == "http://env:1/v1" and settings.origins["llm_url"].startswith("env")
    assert settings.llm_model == "flagged" and settings.origins["llm_model"] == "flag"
    assert (
        settings.llm_api_key == CANARY and settings.origins["llm_api_key"] == "env OPENAI_API_KEY"
    )
    both = {**env, "CHROMASYNC_LLM_API_KEY": "sk-first"}
    assert resolve_settings({}, both, file).llm_api_key == "sk-first"
    shown = {name: value for name, value, _ in settings.shown()}
    assert shown["llm_api_key"] == "****** (set)" and CANARY not in repr(settings)


@pytest.mark.parametrize(
    "text",
    [
        f"version: 1\nanswer:\n  llm_url: http://x/v1\n  api_key: {CANARY}\n",
        f"version: 1\nanswer:\n  llm_api_key: {CANARY}\n",
        f"version: 1\nanswer:\n  llm_url: https://user:{CANARY}@llm.example/v1\n",
    ],
)
def test_answer_secrets_refused(tmp_path: Path, text: str) -> None:
    cfg = write(tmp_path / "chromasync.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config_file(cfg)
    message = str(info.value)
    assert CANARY not in message and "CHROMASYNC_LLM_API_KEY" in message


@pytest.mark.parametrize(
    "text", [f"version: 1\nserve:\n  api_token: {CANARY}\n", f"version: 1\napi_token: {CANARY}\n"]
)
def test_an_api_token_in_the_config_file_names_its_variable(tmp_path: Path, text: str) -> None:
    """It said "set CHROMASYNC_CHROMA_TOKEN", the Chroma server's token (issue 40)."""
    cfg = write(tmp_path / "chromasync.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config_file(cfg)
    message = str(info.value)
    assert CANARY not in message and "set CHROMASYNC_API_TOKEN in the environment" in message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("store:\n  collections: per-source\n", "line 3: `store.collections` must be one of"),
        ("answer:\n  fallback: maybe\n", "line 3: `answer.fallback` must be one of"),
        ("answer:\n  context_tokens: 3\n", "line 3: `answer.context_tokens` must be between"),
    ],
)
def test_bad_values_name_key_and_line(tmp_path: Path, text: str, words: str) -> None:
    cfg = write(tmp_path / "chromasync.yaml", "version: 1\n" + text)
    with pytest.raises(ConfigError) as info:  # checked after precedence, as the environment is
        resolve_settings({}, {}, load_config_file(cfg))
    assert words in str(info.value)


def test_answer_section_unknown_key(tmp_path: Path) -> None:
    cfg = write(tmp_path / "chromasync.yaml", "version: 1\nanswer:\n  llm_ulr: http://x\n")
    with pytest.raises(ConfigError) as info:
        load_config_file(cfg)
    assert "did you mean `llm_url`" in str(info.value)


def test_answer_fallback_from_the_environment_is_checked() -> None:
    with pytest.raises(ConfigError, match="CHROMASYNC_ANSWER_FALLBACK must be one of"):
        resolve_settings({}, {"CHROMASYNC_ANSWER_FALLBACK": "sometimes"})


@pytest.mark.parametrize("as_json", [False, True])
def test_config_show_leaves_out_the_user_info_of_every_url(tmp_path: Path, as_json: bool) -> None:
    secret = "PassW0rdSecret"
    env = {
        "CHROMASYNC_DATA_DIR": str(tmp_path / "data"),
        "CHROMASYNC_CONFIG": "",
        "CHROMASYNC_NATS_URL": f"nats://alice:{secret}@127.0.0.1:4222,tls://bob:{secret}@h:1",
        "CHROMASYNC_CHROMA_URL": f"http://carol:{secret}@127.0.0.1:8000",
        "CHROMASYNC_EMBEDDING_URL": f"https://dave:{secret}@emb.example/v1?api_key={secret}",
        "CHROMASYNC_LLM_URL": f"http://erin:{secret}@127.0.0.1:11434/v1",
    }
    result = CliRunner().invoke(main, ["config", "show", *(["--json"] if as_json else [])], env=env)
    output = result.stdout + result.stderr
    assert secret not in output and "alice" not in output and "erin" not in output
    assert result.exit_code == 0, output
    assert "127.0.0.1:4222" in output and "emb.example/v1" in output


@pytest.mark.parametrize("as_json", [False, True])
def test_config_show_masks_a_secret_given_as_an_option(tmp_path: Path, as_json: bool) -> None:
    """`--embed-option api_key=...` (and the environment's) was shown in clear."""
    env = {"CHROMASYNC_DATA_DIR": str(tmp_path / "data"), "CHROMASYNC_CONFIG": ""}
    args = [
        "config",
        "show",
        "--embed-option",
        f"api_key={CANARY}",
        "--embed-option",
        "batch_size=8",
    ]
    result = CliRunner().invoke(main, [*args, *(["--json"] if as_json else [])], env=env)
    assert result.exit_code == 0, result.output
    assert CANARY not in result.output and "api_key=******, batch_size=8" in result.output


@pytest.mark.parametrize(
    ("name", "head", "load", "message", "most"),
    [
        # a 64 MiB config file was read and decoded whole (128 MiB of Python objects)
        # before the YAML loader refused it
        ("chromasync.yaml", b"", load_config_file, r"chromasync\.yaml.*: over 256 KiB", 2 << 20),
        # a sources file is a Markdown note: over the corpus's 8 MiB it is refused
        (
            "sources.md",
            b"---\ncontent_sources:\n  - path: notes\n---\n",
            load_sources_file,
            r"sources\.md.*: over 8,192 KiB",
            12 << 20,
        ),
    ],
)
def test_a_huge_config_or_sources_file_is_refused_unread(
    tmp_path: Path, name: str, head: bytes, load: Callable[[Path], object], message: str, most: int
) -> None:
    """The size is checked by a bounded read, before anything is decoded."""
    import tracemalloc

    path = tmp_path / name
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(64 << 20)  # sparse: made in no time
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError, match=message):
            load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < most, peak
