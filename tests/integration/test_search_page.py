"""The search page in a real headless Chromium (Debian's `chromium`, driven by Playwright):
type a query, see cited hits, apply filters, open a cited file. Skipped where either the
browser or the driver is missing (CI installs both: see .ci/run)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from chromasync import api
from chromasync.config.settings import Settings
from chromasync.embed.hashing import HashEmbedder
from chromasync.owner.service import Service
from chromasync.rest import BackgroundServer, bind_tcp, create_app

CHROMIUM = os.environ.get("CHROMASYNC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "page-token-81"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the Playwright driver is not installed (pip install playwright)"
)
if not Path(CHROMIUM).is_file():
    pytest.skip(
        f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CHROMASYNC_CHROMIUM)",
        allow_module_level=True,
    )


@pytest.fixture
def url(notes: Path, settings: Settings, embedder: HashEmbedder) -> Iterator[str]:
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    with Service(settings, "serve", embedder=embedder) as service:
        listener = bind_tcp("127.0.0.1", 0)
        port = listener.getsockname()[1]
        server = BackgroundServer(create_app(service, token=TOKEN), [listener])
        server.start()
        try:
            yield f"http://127.0.0.1:{port}/"
        finally:
            server.stop()


@pytest.fixture
def page(tmp_path: Path) -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 860})
            yield context.new_page()
        finally:
            browser.close()


def test_search_page_in_chromium(url: str, page: object, tmp_path: Path) -> None:
    expect = sync_api.expect
    page.goto(url)  # type: ignore[attr-defined]
    # the service has a token: the page asks for it once, then the index status shows
    expect(page.locator("#auth")).to_be_visible()  # type: ignore[attr-defined]
    page.fill("#token", TOKEN)  # type: ignore[attr-defined]
    page.press("#token", "Enter")  # type: ignore[attr-defined]
    status = page.locator("#status")  # type: ignore[attr-defined]
    expect(status).to_contain_text("files")
    expect(status.locator("dd").nth(1)).to_have_text("5")
    expect(page.locator("#source-chips .chip")).to_have_count(1)  # type: ignore[attr-defined]

    # type a query: cited hits with highlighted words
    page.fill("#q", "espresso grinder")  # type: ignore[attr-defined]
    page.press("#q", "Enter")  # type: ignore[attr-defined]
    hits = page.locator(".hit")  # type: ignore[attr-defined]
    expect(hits.first).to_be_visible()
    assert hits.count() >= 3
    cites = [c.strip() for c in page.locator(".hit .cite").all_inner_texts()]  # type: ignore[attr-defined]
    assert all(re.fullmatch(r"\S+:\d+-\d+", c) for c in cites), cites
    assert any(c.startswith("guides/install.md:") for c in cites)
    assert page.locator(".hit mark").count() > 0  # type: ignore[attr-defined]
    # the "weaker matches" line sits where the server's relevance scale puts it
    body = page.evaluate("async () => await api('/search?q=espresso%20grinder&k=20')")  # type: ignore[attr-defined]
    weaker = body["weaker_from"]
    assert isinstance(weaker, int) and 0 < weaker < len(body["hits"]), body["weaker_from"]
    rows = page.locator("#results > li").evaluate_all("els => els.map(e => e.className)")  # type: ignore[attr-defined]
    assert rows.index("weaker") == weaker and rows.count("weaker") == 1, rows
    relevance = [h["relevance"] for h in body["hits"]]
    assert relevance[weaker] < relevance[0] / 2 <= relevance[weaker - 1]
    page.screenshot(path=str(tmp_path / "results.png"), full_page=True)  # type: ignore[attr-defined]

    # a tag filter: only the baking note is left
    page.fill("#tag-input", "baking")  # type: ignore[attr-defined]
    page.press("#tag-input", "Enter")  # type: ignore[attr-defined]
    expect(page.locator("#active-filters .chip")).to_have_count(1)  # type: ignore[attr-defined]
    expect(page.locator(".hit .cite").first).to_contain_text("guides/sourdough.md")  # type: ignore[attr-defined]
    paths = {c.split(":")[0] for c in page.locator(".hit .cite").all_inner_texts()}  # type: ignore[attr-defined]
    assert paths == {"guides/sourdough.md"}

    # remove it, then a date range: only notes dated in 2026
    page.locator("#active-filters .chip").first.click()  # type: ignore[attr-defined]
    expect(page.locator("#active-filters .chip")).to_have_count(0)  # type: ignore[attr-defined]
    page.fill("#after", "2026-01-01")  # type: ignore[attr-defined]
    page.dispatch_event("#after", "change")  # type: ignore[attr-defined]
    expect(page.locator("#active-filters .chip")).to_have_count(1)  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        "() => [...document.querySelectorAll('.hit .cite')].every(a => "
        "a.textContent.startsWith('guides/install.md') || a.textContent.startsWith('journal/'))"
        " && document.querySelectorAll('.hit').length > 0"
    )

    # open the cited file at its line
    page.locator(".hit .cite").first.click()  # type: ignore[attr-defined]
    viewer = page.locator("#viewer")  # type: ignore[attr-defined]
    expect(viewer).to_be_visible()
    expect(viewer.locator(".line.cited").first).to_be_visible()
    assert viewer.locator(".line").count() > 5
    page.screenshot(path=str(tmp_path / "viewer.png"))  # type: ignore[attr-defined]
    if os.environ.get("CHROMASYNC_SCREENSHOTS"):
        out = Path(os.environ["CHROMASYNC_SCREENSHOTS"])
        out.mkdir(parents=True, exist_ok=True)
        for name in ("results.png", "viewer.png"):
            shutil.copy(tmp_path / name, out / name)


def test_the_printed_url_with_its_token_opens_the_page(url: str, page: object) -> None:
    """`serve` prints `http://HOST:PORT/#token=...` (a fragment: never sent to the server):
    the page keeps the token for its tab, asks for nothing, and drops it from the address."""
    expect = sync_api.expect
    page.goto(f"{url}#token={TOKEN}")  # type: ignore[attr-defined]
    status = page.locator("#status")  # type: ignore[attr-defined]
    expect(status).to_contain_text("files")
    expect(page.locator("#auth")).to_be_hidden()  # type: ignore[attr-defined]
    assert TOKEN not in page.url  # type: ignore[attr-defined]
    page.fill("#q", "espresso grinder")  # type: ignore[attr-defined]
    page.press("#q", "Enter")  # type: ignore[attr-defined]
    expect(page.locator(".hit").first).to_be_visible()  # type: ignore[attr-defined]


def test_summaries_on_the_page(url: str, page: object) -> None:
    expect = sync_api.expect
    page.goto(url)  # type: ignore[attr-defined]
    page.fill("#token", TOKEN)  # type: ignore[attr-defined]
    page.press("#token", "Enter")  # type: ignore[attr-defined]
    page.fill("#summary-by", "path:1")  # type: ignore[attr-defined]
    page.press("#summary-by", "Enter")  # type: ignore[attr-defined]
    groups = page.locator("#summaries li.summary strong")  # type: ignore[attr-defined]
    expect(groups).to_have_count(3)
    assert set(groups.all_inner_texts()) == {"guides", "journal", "(root)"}
    guides = page.locator("#summaries li.summary", has_text="guides")  # type: ignore[attr-defined]
    assert guides.locator(".summary-text").inner_text().strip()
    assert guides.locator(".summary-terms").inner_text().strip()
    page.fill("#summary-by", "path:0")  # type: ignore[attr-defined]
    page.press("#summary-by", "Enter")  # type: ignore[attr-defined]
    expect(page.locator("#summaries li.error")).to_contain_text("path:N")  # type: ignore[attr-defined]


def test_editor_links_on_the_page(
    notes: Path, settings: Settings, embedder: HashEmbedder, page: object
) -> None:
    """With `editor_uri` set, each hit and the file viewer link to the file in the editor
    (the page reads `open_url` from /search); without it, no such link."""
    from chromasync.config.resolve import resolve_settings

    expect = sync_api.expect
    api.ingest([api.source_for(notes)], settings, embedder=embedder)
    linked = resolve_settings(
        {"data_dir": str(settings.data_dir), "provider": "hash"},
        {"CHROMASYNC_COLLECTIONS": "shared", "CHROMASYNC_EDITOR_URI": "vscode://file{path}:{line}"},
    )
    with Service(linked, "serve", embedder=embedder) as service:
        listener = bind_tcp("127.0.0.1", 0)
        server = BackgroundServer(create_app(service), [listener])
        server.start()
        try:
            page.goto(f"http://127.0.0.1:{listener.getsockname()[1]}/")  # type: ignore[attr-defined]
            page.fill("#q", "espresso grinder")  # type: ignore[attr-defined]
            page.press("#q", "Enter")  # type: ignore[attr-defined]
            hits = page.locator(".hit")  # type: ignore[attr-defined]
            expect(hits.first).to_be_visible()
            editors = page.locator(".hit a.editor")  # type: ignore[attr-defined]
            assert editors.count() == hits.count()
            root = str(notes.resolve())
            hrefs = [editors.nth(i).get_attribute("href") for i in range(editors.count())]
            cites = page.locator(".hit .cite").all_inner_texts()  # type: ignore[attr-defined]
            for href, cite in zip(hrefs, cites, strict=True):
                path, lines = cite.strip().rsplit(":", 1)
                assert href == f"vscode://file{root}/{path}:{lines.split('-')[0]}"
            page.locator(".hit .cite").first.click()  # type: ignore[attr-defined]
            viewer_link = page.locator("#viewer-editor")  # type: ignore[attr-defined]
            expect(viewer_link).to_be_visible()
            assert viewer_link.get_attribute("href") == hrefs[0]
        finally:
            server.stop()


DOCS = {
    "time/format.md": """---
title: Format
---

# time.Format

Use the `time.Format` function with `time.Time` values:

```go-html-template
{{ $t := time.AsTime "2023-01-27" }}
{{ $t.Format "2 Jan 2006" }} → 27 Jan 2023
```

Layout tokens for a date:

- `2006` the year
- `Jan` the month

Read the [Go documentation](https://pkg.go.dev/time) or the [layout string][].

Token|Result
:--|:--
`:date_medium`|`Jan 27, 2023`

[layout string]: /functions/time/layout/
""",
    "notes/evil.md": """# A hostile note about date format

<script>window.__pwned = 1</script>
<img src="x" onerror="window.__pwned = 2">
[click](javascript:window.__pwned=3) to format a date.
""",
    "notes/weather.md": (
        "# Weather\n\nRain on Tuesday; the format of the forecast changed.\n\n"
        "**Bold** and *light* notes.\n\n#### Outlook\n\nSun by Friday, in any format.\n"
    ),
    "notes/garden.md": "# Garden\n\nTomatoes, basil and beans grow by the wall in summer.\n",
}


@pytest.fixture
def docs_url(tmp_path: Path, settings: Settings, embedder: HashEmbedder) -> Iterator[str]:
    root = tmp_path / "docs"
    for rel, text in DOCS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    api.ingest([api.source_for(root)], settings, embedder=embedder)
    with Service(settings, "serve", embedder=embedder) as service:
        listener = bind_tcp("127.0.0.1", 0)
        port = listener.getsockname()[1]
        server = BackgroundServer(create_app(service, token=TOKEN), [listener])
        server.start()
        try:
            yield f"http://127.0.0.1:{port}/"
        finally:
            server.stop()


def _search_json(url: str, query: str) -> dict[str, object]:
    import httpx

    reply = httpx.get(
        url + "search",
        params={"q": query, "k": "20"},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    return reply.json()  # type: ignore[no-any-return]


def test_hits_and_answers_render_markdown_safely(
    docs_url: str, page: object, tmp_path: Path
) -> None:
    """Hits show headings, code (monospace, with its language), lists, tables and links as
    such; raw HTML from a note is text that never runs; the answer shows the quoted code;
    the weaker-matches divider stands where the service's scale puts it."""
    expect = sync_api.expect
    page.goto(docs_url)  # type: ignore[attr-defined]
    page.fill("#token", TOKEN)  # type: ignore[attr-defined]
    page.press("#token", "Enter")  # type: ignore[attr-defined]
    query = "format a date"
    page.fill("#q", query)  # type: ignore[attr-defined]
    page.press("#q", "Enter")  # type: ignore[attr-defined]
    expect(page.locator(".hit").first).to_be_visible()  # type: ignore[attr-defined]
    format_hit = page.locator(".hit", has_text="time.Format").first  # type: ignore[attr-defined]
    code = format_hit.locator("figure.md-code pre code").first
    expect(code).to_contain_text('{{ $t.Format "2 Jan 2006" }}')
    expect(format_hit.locator("figure.md-code figcaption").first).to_have_text("go-html-template")
    family = code.evaluate("node => getComputedStyle(node).fontFamily")
    assert "mono" in family.lower() or "menlo" in family.lower() or "consolas" in family.lower()
    assert format_hit.locator("ul.md-list li").count() == 2
    assert format_hit.locator("table.md-table td").count() == 2
    link = format_hit.locator("a[href='https://pkg.go.dev/time']")
    expect(link).to_have_text("Go documentation")
    # the hit's own heading is shown once, above its text; a heading inside it renders as one
    expect(format_hit.locator(".heading")).to_have_text("time.Format")
    assert "# time.Format" not in format_hit.inner_text()
    weather = page.locator(".hit", has_text="Rain on Tuesday").first  # type: ignore[attr-defined]
    expect(weather.locator(".md-h")).to_have_text("Outlook")
    expect(weather.locator("strong")).to_have_text("Bold")
    expect(weather.locator("em")).to_have_text("light")
    # the reference-style link has no page here to open: its words, no link
    expect(format_hit.locator(".md-link", has_text="layout string")).to_have_count(1)
    assert "title: Format" not in format_hit.inner_text()

    # hostile HTML: shown as text, nothing runs, no javascript: link
    evil = page.locator(".hit", has_text="hostile note").first  # type: ignore[attr-defined]
    expect(evil).to_contain_text("<script>window.__pwned = 1</script>")
    expect(evil).to_contain_text('onerror="window.__pwned = 2"')
    assert evil.locator("script, img, a[href^='javascript']").count() == 0
    page.wait_for_timeout(300)  # type: ignore[attr-defined]
    assert page.evaluate("() => window.__pwned") is None  # type: ignore[attr-defined]

    # the divider: where the service's weaker_from says, or nowhere
    weaker = _search_json(docs_url, query)["weaker_from"]
    items = page.locator("#results > li")  # type: ignore[attr-defined]
    classes = [items.nth(i).get_attribute("class") for i in range(items.count())]
    if weaker is None:
        assert "weaker" not in classes
    else:
        assert classes.index("weaker") == weaker
    page.screenshot(path=str(tmp_path / "markdown-hits.png"), full_page=True)  # type: ignore[attr-defined]

    # answer mode: the extractive answer quotes the code, rendered as code, with its source
    page.check("#mode-answer")  # type: ignore[attr-defined]
    page.fill("#q", "how do I format a date in a template?")  # type: ignore[attr-defined]
    page.press("#q", "Enter")  # type: ignore[attr-defined]
    answer = page.locator("#answer-text")  # type: ignore[attr-defined]
    expect(answer.locator("figure.md-code pre code")).to_contain_text("$t.Format")
    expect(answer.locator("figure.md-code figcaption")).to_have_text("go-html-template")
    expect(answer.locator(".quoted-from .cite")).to_have_count(1)
    assert answer.locator("a.cite").count() >= 2  # the sentence's marker and the code's source
    assert "```" not in answer.inner_text()
    page.screenshot(path=str(tmp_path / "markdown-answer.png"), full_page=True)  # type: ignore[attr-defined]
    if os.environ.get("CHROMASYNC_SCREENSHOTS"):
        out = Path(os.environ["CHROMASYNC_SCREENSHOTS"])
        out.mkdir(parents=True, exist_ok=True)
        for name in ("markdown-hits.png", "markdown-answer.png"):
            shutil.copy(tmp_path / name, out / name)
