"""The console script's front door (`cmdline`, `fastpath`), checked against click's own
commands: the ingest fast path's table and the daemon client's settings options fail these
tests when they disagree with click (a spelling click lacks, an option read as a flag that
click reads as taking a value, a new click option nobody placed).
"""

from __future__ import annotations

import click
import pytest

from chromasync.cli.main import main as cli
from chromasync.cmdline import INGEST, line_key, parse

COMMANDS = {"ingest": INGEST}

#: click options each fast path leaves to the CLI on purpose (a command line with one of
#: them runs in full): anything new in click must be placed in a table or here.
LEFT_TO_THE_CLI = {
    "ingest": {
        "--embed-option",  # may carry a key
        "--chroma-token",
        "--limit",
        "--gc-only",
        "--no-gc",
        "--reset",
        "--yes",
        "-y",
        "--dry-run",
        "--output-manifest",
        "--include-text",
        "--checksum",
        "--reembed",
        "--allow-mass-delete",
        "--wait",
        "--include-hidden",  # the snapshot's walk does not list what it adds
    },
}


def _click_options(command: click.Command) -> dict[str, click.Option]:
    out: dict[str, click.Option] = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for spelling in (*param.opts, *param.secondary_opts):
                out[spelling] = param
    return out


def _takes_value(option: click.Option) -> bool:
    return not option.is_flag and not option.count


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_fast_option_is_clicks_with_the_same_arity(name: str) -> None:
    options = _click_options(cli.commands[name])
    for spelling, fast in COMMANDS[name].items():
        assert spelling in options, f"{name} {spelling}: click has no such option"
        assert fast == _takes_value(options[spelling]), (
            f"{name} {spelling}: the fast parser reads it as "
            f"{'taking a value' if fast else 'a flag'}, click does not"
        )


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_click_option_is_placed_and_the_rest_go_to_the_cli(name: str) -> None:
    options = _click_options(cli.commands[name])
    unplaced = set(options) - set(COMMANDS[name]) - LEFT_TO_THE_CLI[name]
    assert not unplaced, f"{name}: place {sorted(unplaced)} in cmdline.py or LEFT_TO_THE_CLI"
    assert not LEFT_TO_THE_CLI[name] - set(options), "LEFT_TO_THE_CLI names a gone option"
    for spelling in (*LEFT_TO_THE_CLI[name], "--help", "-h", "--", "--no-such-option"):
        assert parse([name, "x", spelling, "v"]) is None, spelling
        assert parse([name, "x", f"{spelling}=v"]) is None, spelling


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_parser_reads_what_click_reads(name: str) -> None:
    """For every option in the table, a command line with it parses to the value click
    would give it (flags: given; values: the next word or after `=`); a flag given a value
    and a value left missing go to the CLI, as click would refuse them."""
    for spelling, fast in COMMANDS[name].items():
        if fast:
            for argv in ([name, "q", spelling, "v"], [name, "q", f"{spelling}=v"]):
                line = parse(argv)
                assert line is not None and line.options[spelling] == "v", argv
                assert line.arguments == ["q"]
            assert parse([name, "q", spelling]) is None
        else:
            line = parse([name, "q", spelling])
            assert line is not None and line.given(spelling) and not line.options
            assert parse([name, "q", f"{spelling}=1"]) is None


def test_one_key_scheme_no_secret_in_it() -> None:
    env = {"CHROMASYNC_CHROMA_TOKEN": "s3cret", "HOME": "/h"}
    key = line_key("daemon", ("a",), env, "/w", b"version: 1\n")
    assert "s3cret" not in key and len(key) == 64
    assert line_key("ingest", ("a",), env, "/w", b"version: 1\n") != key  # by purpose
    assert line_key("daemon", ("a",), env, "/w", b"version: 2\n") != key  # by config
    assert line_key("daemon", ("a",), env, "/w", None) != key


def test_the_daemon_client_knows_every_settings_option_of_search() -> None:
    """The stdlib client starts the daemon itself only for a command line whose settings
    options are `EARLY`'s (passed on as `daemon run`'s flags, by click's names); any other
    settings option of click's `search` is in `LATE` (the CLI starts the daemon of those)."""
    from chromasync.cli.common import _FILE_FLAGS, SETTING_FLAGS
    from chromasync.fastpath import EARLY, LATE

    run = _click_options(cli.commands["daemon"].commands["run"])  # type: ignore[attr-defined]
    for spelling, option in _click_options(cli.commands["search"]).items():
        if option.name in SETTING_FLAGS | _FILE_FLAGS and option.name != "collection":
            assert spelling in LATE | set(EARLY), spelling
    for spelling, name in EARLY.items():
        assert run[spelling].name == name, spelling
