"""The search page (`GET /`) and its static files (`/static/app.js`, `/static/app.css`),
read from the package's `static/` folder and sent under a strict Content-Security-Policy."""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response

from ..errors import NotFound

STATIC_FILES = {"app.js": "text/javascript", "app.css": "text/css"}
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


def _static(name: str) -> str:
    return (resources.files("chromasync") / "static" / name).read_text(encoding="utf-8")


def add_page_routes(app: FastAPI) -> None:
    """`GET /` (the page) and `GET /static/{name}` (its files), left out of the schema."""

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        return HTMLResponse(_static("index.html"), headers=_page_headers())

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in STATIC_FILES:
            raise NotFound(f"no static file {name!r}")
        return Response(_static(name), media_type=STATIC_FILES[name], headers=_page_headers())


def _page_headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": PAGE_CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }
