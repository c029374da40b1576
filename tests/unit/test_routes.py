"""What can go where is decided in one place (`owner.routes`), not by each command.

The CLI's commands reach the index through `open_index` only: no module of `cli/` imports
the owner's client, `LocalIndex` or the routing table, calls the `api` function behind an
operation of the index (`api.verify`, `api.remove_source`, ...), or checks which index it
holds;
the one table of what an ingest may ask of a running owner names each field it refuses as
`chromasync ingest` spells it, and every field of an `IngestRequest` is either served or
refused by it.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from chromasync.cli.main import main
from chromasync.errors import LockError
from chromasync.owner.queries import IngestRequest, RemoveRequest, ShareRequest, VerifyRequest
from chromasync.owner.routes import (
    OWNER_INGESTS,
    OWNER_SERVES,
    check_owner_serves,
    refused_by_owner,
    spelled,
)

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "chromasync"

#: What a command must not reach past `open_index` for: the owner's client, the index in
#: process, the routing table (the modules and their names).
FORBIDDEN_MODULES = {"chromasync.owner.client", "chromasync.owner.local", "chromasync.owner.routes"}
FORBIDDEN_NAMES = {"owner_client", "OwnerClient", "LocalIndex", "ingest_through_owner"}
FORBIDDEN_NAMES |= {"refused_by_owner", "OWNER_INGESTS", "OWNER_SERVES", "check_owner_serves"}
#: The `api` functions behind the index's operations: a command calling one would run it in
#: process whether or not an owner holds the data dir (`api.answer` is not one: `ask`
#: answers with the caller's chat settings, from the index's search).
INDEX_FUNCTIONS = {
    "retrieve",
    "get_document",
    "get_file",
    "get_files",
    "links",
    "similar",
    "suggest",
    "summaries",
    "evaluate",
    "status",
    "health",
    "list_sources",
    "ingest",
    "remove_source",
    "verify",
    "share",
}


def _imports(path: Path) -> list[tuple[str, set[str]]]:
    """(module, names) of each import in a module of the package (lazy ones too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = "chromasync." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.append((module, {a.name for a in node.names}))
        elif isinstance(node, ast.Import):
            found.extend((a.name, set()) for a in node.names)
    return found


@pytest.mark.parametrize("path", sorted((PACKAGE / "cli").glob("*.py")), ids=lambda p: p.name)
def test_cli_commands_reach_the_index_through_open_index_only(path: Path) -> None:
    for module, names in _imports(path):
        assert module not in FORBIDDEN_MODULES, f"{path.name} imports {module}"
        assert not names & FORBIDDEN_NAMES, f"{path.name} imports {names & FORBIDDEN_NAMES}"
        if not module.startswith("chromasync.cli"):  # its own modules: `from . import ingest`
            assert not names & INDEX_FUNCTIONS, f"{path.name} imports {names & INDEX_FUNCTIONS}"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    called = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "api"
    }
    assert not called & INDEX_FUNCTIONS, f"{path.name} calls api.{sorted(called & INDEX_FUNCTIONS)}"
    text = path.read_text(encoding="utf-8")
    assert "isinstance(index" not in text and "isinstance(client" not in text, path.name
    assert "cannot go through" not in text, f"{path.name} decides what goes through an owner"


def test_the_owner_routing_table_is_written_once() -> None:
    """Only `owner/routes.py` says what cannot go through an owner."""
    deciding = [
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if "cannot go through" in p.read_text(encoding="utf-8")
    ]
    assert deciding == ["owner/routes.py"]


def test_every_ingest_field_is_served_or_refused_in_the_commands_spelling() -> None:
    ingest = main.commands["ingest"]
    spellings = {opt for p in ingest.params for opt in (*p.opts, *p.secondary_opts)}
    fields = {f.name for f in dataclasses.fields(IngestRequest)}
    assert fields >= OWNER_INGESTS
    for name in sorted(fields - OWNER_INGESTS):
        assert spelled(name) in spellings, name  # the caller's spelling names a real flag
        default = IngestRequest.__dataclass_fields__[name].default
        value = "x" if default is None else (not default if isinstance(default, bool) else 1)
        asked = IngestRequest(**{name: value})  # type: ignore[arg-type]
        assert refused_by_owner(asked) == [spelled(name)], name
    served = IngestRequest(labels=("notes",), checksum=True, allow_mass_delete=True, wait=True)
    assert refused_by_owner(served) == []


@pytest.mark.parametrize("kind", sorted(OWNER_SERVES, key=lambda k: k.__name__), ids=str)
def test_every_write_is_served_or_refused_in_the_commands_spelling(kind: type) -> None:
    """Each field of a writing operation's request the owner does not serve names a real
    option of its command; a command the owner serves none of is refused by name."""
    command_name, served = OWNER_SERVES[kind]
    command = main
    for word in command_name.split():
        command = command.commands[word]  # type: ignore[attr-defined]
    spellings = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    fields = {f.name for f in dataclasses.fields(kind)}
    if served is None:
        with pytest.raises(LockError, match=f"`chromasync {command_name}` cannot go through it"):
            check_owner_serves(kind(), "`chromasync serve` (pid 1)")
        return
    assert fields >= served
    for name in sorted(fields - served):
        assert spelled(name) in spellings, name


def test_a_running_owner_serves_the_report_and_the_removal_not_the_repairs() -> None:
    owner = "`chromasync serve` (pid 1)"
    check_owner_serves(VerifyRequest(("notes",), wait=True), owner)
    check_owner_serves(RemoveRequest("notes", keep_declaration=True, wait=True), owner)
    with pytest.raises(LockError) as refused:
        check_owner_serves(VerifyRequest(repair=True), owner)
    assert str(refused.value) == (
        "the data dir is owned by `chromasync serve` (pid 1); --repair cannot go through it: "
        "stop it first, or run `chromasync verify` without it"
    )
    with pytest.raises(LockError, match="`chromasync share` cannot go through it: stop it"):
        check_owner_serves(ShareRequest(no_model=True), owner)
