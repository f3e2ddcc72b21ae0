"""Opening the search page in the user's browser, through Python's ``webbrowser`` (which honours
``BROWSER``, then xdg-open and the browsers it finds)."""

from __future__ import annotations

import threading


def open_page(url: str) -> bool:
    """True when a browser took the address; False when there is none (a server over SSH)."""
    import webbrowser

    try:
        return bool(webbrowser.open(url))
    except webbrowser.Error:
        return False


def open_page_soon(url: str) -> None:
    """Open ``url`` without holding up the caller: a ``BROWSER`` that is a terminal browser runs
    until the user quits it, and the server must answer its first request meanwhile."""
    threading.Thread(target=open_page, args=(url,), name="open-browser", daemon=True).start()
