"""Tables in a terminal that fits them, else one `column: value` block per row."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from chromasync.cli.common import print_table


def _table() -> Table:
    table = Table(title="chromasync status")
    for column in ("collection", "source", "last run"):
        table.add_column(column)
    table.add_row("chromasync-notes", "[bold]notes[/]", "2026-11-30T15:02:18")
    table.add_row("chromasync-code", "code", "-")
    return table


def _render(terminal: bool, width: int) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=width, color_system=None)
    print_table(console, _table())
    return out.getvalue()


@pytest.mark.parametrize(("terminal", "width"), [(True, 40), (False, 200), (False, 80)])
def test_narrow_or_piped_tables_are_vertical(terminal: bool, width: int) -> None:
    lines = _render(terminal, width).splitlines()
    assert lines == [
        "chromasync status",
        "collection: chromasync-notes",
        "source: notes",
        "last run: 2026-11-30T15:02:18",
        "",
        "collection: chromasync-code",
        "source: code",
        "last run: -",
    ]


def test_a_wide_terminal_keeps_the_grid() -> None:
    text = _render(True, 200)
    assert "collection: " not in text
    assert "chromasync-notes" in text and "2026-11-30T15:02:18" in text and "…" not in text
