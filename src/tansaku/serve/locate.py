"""Is a tansaku server already answering at an address, and for which index? `tansaku ui` asks
before starting a daemon, so a server started in the foreground (`tansaku mcp --http`) is used
rather than fought over its port."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

ASK_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Found:
    pid: int
    mode: str  # foreground or daemon
    index: str | None  # the index file it serves (None: it would not say)


def _get(url: str, token: str | None) -> Any:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=ASK_TIMEOUT_S) as response:
            return json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None


def tansaku_at(base_url: str, token: str | None) -> Found | None:
    """The tansaku server answering at ``base_url``, or None (nothing listens, or something else)."""
    health = _get(f"{base_url}/health", token)
    if not isinstance(health, dict) or health.get("ok") is not True or not isinstance(health.get("pid"), int):
        return None
    status = _get(f"{base_url}/status", token)
    index = status.get("index_path") if isinstance(status, dict) else None
    return Found(health["pid"], str(health.get("mode", "")), index if isinstance(index, str) else None)
