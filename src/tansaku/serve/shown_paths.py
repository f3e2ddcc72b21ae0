"""What a server's error may say about the disk it runs on: the paths inside the collections it
serves, and no others.

The CLI's errors name files for the person at the keyboard (the model file that is missing, the
index that is locked). A client of the server is not that person, and may be a page or an agent
that should not learn the layout of the machine: a path outside every collection is shown by its
file name alone (``…/embeddinggemma-300M-Q8_0.gguf``), which still says what is missing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

_ABSOLUTE = re.compile(r"(?<![\w:/.~-])(?:/[^\s/\"'`():,;]+)+/?")


def hide_paths(value: Any, roots: Iterable[str]) -> Any:
    """``value`` (an error's data: text, lists, mappings) with every absolute path outside
    ``roots`` cut down to its last part."""
    kept = tuple(os.path.realpath(root).rstrip(os.sep) + os.sep for root in roots)

    def shown(match: re.Match[str]) -> str:
        path = match.group(0)
        if path.startswith(kept) or os.path.realpath(path).startswith(kept):
            return path
        name = path.rstrip("/").rsplit("/", 1)[-1]
        return f"…/{name}" if name else "…"

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return _ABSOLUTE.sub(shown, item)
        if isinstance(item, dict):
            return {key: walk(inner) for key, inner in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(inner) for inner in item]
        return item

    return walk(value)
