"""The reference cannot drift: docs/cli.md is the commands' --help, every command and REST
route is documented, the docs' links resolve, and the README stays a README."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import click
import pytest
from starlette.routing import Route

from chromasync.cli.main import main
from chromasync.config import settings as settings_module
from chromasync.config.resolve import resolve_settings
from chromasync.config.spec import markdown_rows
from chromasync.owner.service import Service
from chromasync.rest import create_app

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
PACKAGE = REPO / "src" / "chromasync"
#: The README's line budget: a README, not a manual (the manual is docs/).
README_MAX_LINES = 250


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_cli_docs", REPO / "tools" / "gen_cli_docs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_cli_reference_is_the_help() -> None:
    expected = load_generator().render()
    assert read(DOCS / "cli.md") == expected, (
        "docs/cli.md differs from the commands' --help: run `make docs` and commit docs/cli.md"
    )


def test_cli_reference_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    generator = load_generator()
    monkeypatch.setenv("COLUMNS", "200")
    wide = generator.render()
    monkeypatch.setenv("COLUMNS", "40")
    assert generator.render() == wide


@pytest.mark.parametrize("columns", ["80", "200"])
def test_the_help_in_the_reference_is_what_the_command_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], columns: str
) -> None:
    """The reference is what `chromasync ... --help` prints on a terminal of 80 columns or
    more (CliRunner forces its own width, so the command runs as the console script does)."""
    monkeypatch.setenv("COLUMNS", columns)
    code = main.main(["sources", "add", "--help"], prog_name="chromasync", standalone_mode=False)
    assert code == 0
    section = read(DOCS / "cli.md").split("### chromasync sources add\n\n```\n", 1)[1]
    assert section.split("```", 1)[0] == capsys.readouterr().out


def command_paths(command: click.Command, prefix: str = "chromasync") -> list[str]:
    out = [prefix]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            out += command_paths(sub, f"{prefix} {name}")
    return out


def test_every_command_is_documented() -> None:
    text = read(DOCS / "cli.md")
    headings = set(re.findall(r"^#+ (chromasync.*)$", text, flags=re.M))
    paths = command_paths(main)
    assert len(paths) > 10
    assert set(paths) == headings


def test_the_readme_shows_every_top_level_command() -> None:
    readme = read(README)
    missing = [
        name
        for name in main.list_commands(click.Context(main))
        if not re.search(rf"chromasync {re.escape(name)}\b", readme)
    ]
    assert not missing, f"the README never shows `chromasync {missing[0]}`"


def test_every_rest_route_is_documented(tmp_path: Path) -> None:
    settings = resolve_settings({"data_dir": str(tmp_path / "data"), "provider": "hash"}, {})
    app = create_app(Service(settings, "serve"))
    routes = {  # a converter (`{label:path}`) is the route's business, not the reader's
        (method, re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path))
        for route in app.routes
        if isinstance(route, Route)
        for method in route.methods or ()
        if method != "HEAD"
    }
    assert ("GET", "/search") in routes and ("DELETE", "/sources/{label}") in routes
    documented = set(re.findall(r"^#+ `([A-Z]+) (/\S*)`$", read(DOCS / "rest.md"), flags=re.M))
    assert routes - documented == set(), "routes missing from docs/rest.md"
    assert documented - routes == set(), "docs/rest.md documents routes the app does not have"


def test_every_environment_variable_is_documented() -> None:
    text = read(DOCS / "configuration.md")
    rows = markdown_rows(settings_module.SETTINGS)
    missing = [row for row in rows if row not in text.splitlines()]
    assert not missing, "docs/configuration.md's settings table lacks (or differs from):\n" + (
        "\n".join(missing)
    )


def test_architecture_names_every_folder() -> None:
    text = read(DOCS / "architecture.md")
    folders = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    modules = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert "store" in folders and "api.py" in modules
    missing = [f"{f}/" for f in folders if f"`{f}/`" not in text]
    missing += [m for m in modules if f"`{m}`" not in text]
    assert not missing, f"docs/architecture.md does not name {missing}"


def test_readme_is_short_and_keeps_the_set_up_commands() -> None:
    readme = read(README)
    assert len(readme.splitlines()) <= README_MAX_LINES
    assert "    make demo\n" in readme and "    make test\n" in readme
    # The first screen: a sources file, ingest, search, and the Python equivalent.
    first = readme[: readme.index("## What a re-run costs")]
    for needle in ("chromasync ingest", "chromasync search", "```yaml", "```python"):
        assert needle in first


LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize(
    "page", [README, REPO / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name
)
def test_relative_links_resolve(page: Path) -> None:
    for target in LINK.findall(read(page)):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{page.name} links to {target}, which does not exist"


def test_no_reference_to_a_missing_reliability_page() -> None:
    """The code once cited a reliability page outside the repository: docs/reliability.md."""
    name = "RELIABILITY" + ".md"
    found = [
        f"{path.relative_to(REPO)}"
        for root in ("src", "docs", "tests", "benchmarks")
        for path in (REPO / root).rglob("*")
        if path.suffix in (".py", ".md") and name in read(path)
    ]
    assert not found, f"{found} cite {name}; cite docs/reliability.md"
    assert "## Promises" in read(DOCS / "reliability.md")
