"""The records of an answer: `Citation`, `Group` and `Answer`, and their JSON shape.

A citation renders as ``path:start-end`` (``path:n`` for one line, ``path`` when the lines
are unknown), followed by ``p. N`` when the hit's metadata holds a ``page``. Citation numbers
start at 1 and follow the order in which the answer first uses them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Literal

from ..records import Hit

Mode = Literal["extractive", "llm"]

#: Flags an answer may carry (see `verify` and `ask`).
FLAG_EMPTY = "empty"
FLAG_NO_CITATIONS = "no-citations"
FLAG_REMOVED_CITATIONS = "removed-citations"
FLAG_NO_SOURCES = "no-sources"
FLAG_LLM_UNREACHABLE = "llm-unreachable"  # fell back to the extractive answer
FLAG_TRUNCATED = "truncated"  # the model's answer was cut at the size bound
FLAG_UNSUPPORTED = "unsupported-citations"  # a cited source did not hold its claim: dropped
#: The model's stream ended before `[DONE]` (cut off mid-answer) or passed the deadline.
FLAG_INCOMPLETE = "incomplete"


def page_of(hit: Hit) -> int | None:
    """The hit's page number: of the lines the query matched (`Hit.pages`), else from its
    metadata (`page`), when it holds a positive int."""
    if hit.pages:
        return min(hit.pages)
    value = hit.metadata.get("page")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def render_location(path: str, start_line: int, end_line: int, page: int | None) -> str:
    """``path:start-end`` (``path:n`` for one line), then `` p. N`` when a page is known."""
    where = path
    if start_line > 0:
        end = max(end_line, start_line)
        where = f"{path}:{start_line}" if end == start_line else f"{path}:{start_line}-{end}"
    return f"{where} p. {page}" if page is not None else where


@dataclass(frozen=True, slots=True)
class Citation:
    """Source number `n` of an answer: where it is, and the words quoted from it."""

    n: int
    id: str
    path: str
    heading: str
    start_line: int
    end_line: int
    page: int | None = None
    quote: str = ""
    source: str = ""  # the hit's source label (the search page opens the file with it)

    def render(self) -> str:
        return render_location(self.path, self.start_line, self.end_line, self.page)

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def citation_for(
    n: int, hit: Hit, quote: str = "", lines: tuple[int, int] | None = None
) -> Citation:
    """Citation `n` of `hit`, narrowed to `lines` (inside the hit's own range) when given."""
    start, end = hit.start_line, hit.end_line
    if lines is not None and start > 0 and start <= lines[0] <= lines[1] <= max(end, start):
        start, end = lines
    return Citation(
        n=n,
        id=hit.id,
        path=hit.path,
        heading=hit.heading,
        start_line=start,
        end_line=end,
        page=page_of(hit),
        quote=quote,
        source=hit.source,
    )


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A citation dropped after generation: source `path` did not hold `claim` (support is
    the share of the claim's weighted words it holds, 0-1; see `support.check_support`)."""

    claim: str
    path: str
    support: float

    def as_json(self) -> dict[str, object]:
        return asdict(self)


PartKind = Literal["prose", "code", "list", "table"]


@dataclass(frozen=True, slots=True)
class Part:
    """A piece of an extractive answer: cited prose (markers in it), or a block quoted from
    source `n` (code with its language, a list, a table), as the source holds it."""

    kind: PartKind
    text: str
    n: int = 0  # the source a block is quoted from (0 for prose: its markers say)
    lang: str = ""

    def markdown(self) -> str:
        """The part as Markdown: code fenced with its language, anything else as is."""
        if self.kind != "code":
            return self.text
        fence = "````" if "```" in self.text else "```"
        return f"{fence}{self.lang}\n{self.text}\n{fence}"

    def as_json(self) -> dict[str, object]:
        return {"kind": self.kind, "text": self.text, "source": self.n, "lang": self.lang}


@dataclass(frozen=True, slots=True)
class Group:
    """The part of a grouped answer about one value of the `group_by` field."""

    value: str
    text: str
    citations: tuple[Citation, ...]

    def as_json(self) -> dict[str, object]:
        return {
            "value": self.value,
            "answer": self.text,
            "citations": [c.n for c in self.citations],
        }


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer to `question`; `text` holds `[n]` markers that index `citations`."""

    question: str
    text: str
    citations: tuple[Citation, ...]
    mode: Mode
    model: str | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    removed_citations: int = 0  # markers naming no source, taken out of `text`
    unsupported: tuple[Unsupported, ...] = ()  # citations their source did not support
    group_by: str | None = None
    groups: tuple[Group, ...] = ()
    warnings: tuple[str, ...] = ()  # from the retrieval (e.g. a stale keyword index)
    #: the extractive answer's pieces: which are quoted code, lists or tables (empty for llm)
    parts: tuple[Part, ...] = ()

    @property
    def sources(self) -> tuple[str, ...]:
        """Each citation rendered (``path:start-end``), in citation-number order."""
        return tuple(c.render() for c in self.citations)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "question": self.question,
            "answer": self.text,
            "citations": [c.as_json() for c in self.citations],
            "sources": list(self.sources),
            "mode": self.mode,
            "model": self.model,
            "usage": dict(self.usage),
            "flags": list(self.flags),
            "removed_citations": self.removed_citations,
            "unsupported_citations": len(self.unsupported),
            "unsupported": [u.as_json() for u in self.unsupported],
            "parts": [p.as_json() for p in self.parts],
        }
        if self.group_by is not None:
            out["group_by"] = self.group_by
            out["groups"] = [g.as_json() for g in self.groups]
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


__all__ = [
    "FLAG_EMPTY",
    "FLAG_INCOMPLETE",
    "FLAG_LLM_UNREACHABLE",
    "FLAG_NO_CITATIONS",
    "FLAG_NO_SOURCES",
    "FLAG_REMOVED_CITATIONS",
    "FLAG_TRUNCATED",
    "FLAG_UNSUPPORTED",
    "Answer",
    "Citation",
    "Group",
    "Mode",
    "Part",
    "PartKind",
    "Unsupported",
    "citation_for",
    "page_of",
    "render_location",
]
