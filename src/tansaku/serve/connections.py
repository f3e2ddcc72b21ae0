"""How long the HTTP server waits on a client, and how many it holds at once.

uvicorn closes a keep-alive connection that stays idle between requests, but it waits forever for
the first request of a connection and for the rest of a request that was begun: a client that
opens connections and sends nothing (or a header a minute) holds a socket and its memory for as
long as it likes. Here a request must arrive whole within ``READ_TIMEOUT_S`` of the connection
opening or of its first byte.
"""

from __future__ import annotations

import asyncio
from typing import Any

READ_TIMEOUT_S = 10.0  # a whole request (headers and body, at most 1 MiB) from a client on loopback
KEEP_ALIVE_S = 5.0  # idle time between two requests of one connection (uvicorn's default)
MAX_CONNECTIONS = 200  # open connections at once; past it uvicorn answers 503
MCP_SESSION_IDLE_S = 10 * 60.0  # an MCP session that sends nothing for this long is closed
MAX_MCP_SESSIONS = 100  # open MCP sessions; past it a new one gets 503 until one closes


def protocol_class() -> type[Any] | str:
    """uvicorn's httptools protocol with a read deadline per request (uvicorn's own choice,
    without the deadline, where httptools is missing: it is a dependency, so only a partial
    installation lacks it)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return "auto"

    class ReadTimeoutProtocol(HttpToolsProtocol):  # type: ignore[misc]
        _read_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_read_timer()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm_read_timer()

        def on_message_complete(self) -> None:
            self._cancel_read_timer()
            super().on_message_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_read_timer()
            super().connection_lost(exc)

        def _arm_read_timer(self) -> None:
            self._cancel_read_timer()
            self._read_timer = self.loop.call_later(READ_TIMEOUT_S, self._read_timed_out)

        def _cancel_read_timer(self) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None

        def _read_timed_out(self) -> None:
            self._read_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return ReadTimeoutProtocol
