"""The `ingest` command line as the console script's fast path reads it (`INGEST`), and its
key (`line_key`); docs/architecture.md, "The console script". Standard library only."""

from __future__ import annotations

import marshal
import os

from . import __version__
from .datadir import config_bytes, config_path, guess_from
from .versions import CHUNKING_VERSION

try:  # the built-in hash: hashlib would load OpenSSL, which costs more than the whole check
    from _sha256 import sha256
except ImportError:  # pragma: no cover - Python 3.12 renamed it
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

OFF_ENV = "CHROMASYNC_NO_FASTPATH"
_SWITCHES = frozenset({OFF_ENV, "CHROMASYNC_NO_DAEMON"})
_SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD")

#: Each `ingest` option the fast path takes (settings and output only), and whether it takes
#: a value; anything else goes to the CLI (`tests/unit/test_cmdline.py` checks it).
INGEST: dict[str, bool] = {
    **dict.fromkeys(
        (
            *("--data-dir", "--provider", "--model", "--embedding-url", "--chroma-url"),
            *("--tenant", "--database", "--config", "--sources-file", "--collection"),
            *("--kind", "--include", "--exclude", "--include-extension", "--exclude-extension"),
            *("--encoding", "--chunk-size", "--batch-size", "--retry-attempts", "--identity"),
            *("--commit-sha", "--source", "-s"),
        ),
        True,
    ),
    **dict.fromkeys(
        ("--no-gitignore", "--allow-root-slash", "--once", "--json", "--quiet", "-q"), False
    ),
}


class Line:
    """An `ingest` command line: its options given a value (the last of each wins), the
    flags given, the arguments."""

    __slots__ = ("_config", "arguments", "argv", "flags", "options")

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = tuple(argv)
        self.options: dict[str, str] = {}
        self.flags: set[str] = set()
        self.arguments: list[str] = []
        self._config: tuple[str, bytes | None] = ("", None)

    def given(self, spelling: str) -> bool:
        return spelling in self.flags or spelling in self.options

    def config(self, environ: Mapping[str, str], cwd: str) -> bytes | None:
        """The bytes of the config file this command line reads (read once per path)."""
        path = config_path(self.options.get("--config"), environ, cwd)[0]
        if self._config[0] != path:
            self._config = (path, config_bytes(self.options.get("--config"), environ, cwd))
        return self._config[1]

    def data_dir(self, environ: Mapping[str, str], cwd: str) -> str | None:
        """Where its data dir is (`datadir.guess_from`), None when that is not sure."""
        return guess_from(self.options, environ, cwd, self.config(environ, cwd))

    def key(self, environ: Mapping[str, str], cwd: str) -> str:
        """`line_key` of this command line, with its config file's bytes."""
        return line_key("ingest", self.argv, environ, cwd, self.config(environ, cwd))


def parse(argv: Sequence[str]) -> Line | None:
    """`argv` (`ingest` first) read with `INGEST`, or None when the CLI must run it."""
    if not argv or argv[0] != "ingest":
        return None
    line = Line(argv)
    words = iter(argv[1:])
    for arg in words:
        if arg == "-":
            return None
        if not arg.startswith("-"):
            line.arguments.append(arg)
            continue
        name, eq, value = arg.partition("=")
        takes = INGEST.get(name)
        if takes is None or (eq and not takes):
            return None  # --help, --dry-run, --, anything unknown; --json=1
        if not takes:
            line.flags.add(name)
            continue
        value = value if eq else next(words, None)  # type: ignore[assignment]
        if value is None:
            return None
        line.options[name] = value
    return line


def line_key(
    purpose: str, material: object, environ: Mapping[str, str], cwd: str, config: bytes | None
) -> str:
    """A digest of the purpose, this code (version, chunking, location), `material`, the
    folder, the `CHROMASYNC_*` environment and `HOME` (secrets as their digest) and the
    config file's bytes."""
    env = sorted(
        (name, _secret_digest(value) if any(w in name for w in _SECRET_WORDS) else value)
        for name, value in environ.items()
        if (name.startswith("CHROMASYNC_") and name not in _SWITCHES) or name == "HOME"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    digest = None if config is None else sha256(config).hexdigest()
    body = (purpose, __version__, CHUNKING_VERSION, here, material, cwd, tuple(env), digest)
    return str(sha256(marshal.dumps(body, 2)).hexdigest())  # type: ignore[arg-type]


def _secret_digest(value: str) -> str:
    return "sha256:" + str(sha256(value.encode("utf-8", "surrogatepass")).hexdigest())


__all__ = ["INGEST", "OFF_ENV", "Line", "line_key", "parse", "sha256"]
