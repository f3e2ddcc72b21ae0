"""The search page at ``/``: static files shipped in the package, served with a strict CSP.

The page holds no data (it calls the JSON endpoints), so the guard lets it load without the token.
"""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/page/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/page/app.css": ("app.css", "text/css; charset=utf-8"),
    # The page links the SVG; a browser that asks for /favicon.ico anyway gets it too, not a 404.
    "/favicon.svg": ("favicon.svg", "image/svg+xml"),
    "/favicon.ico": ("favicon.svg", "image/svg+xml"),
}
PUBLIC_PATHS = frozenset(_FILES)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _serve(path: str) -> Response:
    name, media = _FILES[path]
    body = resources.files(__package__).joinpath("page", name).read_bytes()
    return Response(body, media_type=media, headers=HEADERS)


async def _handle(request: Request) -> Response:
    return _serve(request.url.path)


def page_routes() -> list[Route]:
    return [Route(path, _handle, methods=["GET"]) for path in _FILES]
