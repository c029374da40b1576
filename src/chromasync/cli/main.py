"""The `chromasync` command line: the group, and every command registered on it.

Each command lives in the module of its concern (`ingest`, `search`, `ask`, `admin`, `report`,
`service`) and shares `common`: parse flags, call `api` (or the owner), render the result.
"""

from __future__ import annotations

import click

from .. import __version__
from . import admin, ask, common, daemon, ingest, models, nats, operators, report, search, service


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="chromasync")
def main() -> None:
    """Keep a folder of text files indexed in ChromaDB, cheaply and exactly, and search it."""
    common.print_logs_safely()


for command in (
    ingest.ingest,
    ingest.status,
    search.search,
    ask.ask,
    search.similar,
    operators.get_command,
    search.eval_command,
    operators.links,
    operators.suggest,
    operators.summarize,
    report.chunk_report,
    admin.config,
    admin.sources,
    admin.discover_cmd,
    admin.verify,
    admin.share,
    service.serve,
    service.watch,
    service.mcp_command,
    nats.nats_command,
    daemon.daemon_group,
    models.model_group,
):
    main.add_command(command)

if __name__ == "__main__":  # pragma: no cover
    main()
