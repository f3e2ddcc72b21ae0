"""Rules for a request's options that every front end applies alike: the command line, the JSON
endpoints and the MCP tools. They sit below ``cli/`` and ``serve/`` so neither imports the other.
"""

from __future__ import annotations

from .errors import UsageError

TERMINAL_LIMIT = 5  # results shown in a terminal unless -n says otherwise
SCRIPT_LIMIT = 20  # results for every other format
# The largest whole number any option takes (-n, --from, -l, --max-bytes, -C, --max-items). Far
# above any real use, and inside SQLite's 64-bit integers, which a larger number overflows.
MAX_WHOLE_NUMBER = 10**9


def result_limit(*, all: bool, limit: int | None, scripted: bool) -> int | None:
    """-n, else 5 in the terminal and 20 for scripts; None (no limit) with --all."""
    if all:
        return None
    return limit or (SCRIPT_LIMIT if scripted else TERMINAL_LIMIT)


def check_pack_options(
    *,
    pack: bool,
    limit: int | None,
    all: bool,
    full: bool,
    explain: bool,
    max_items: int | None,
    max_bytes: int | None,
) -> None:
    """Refuse options that do not go with (or without) --pack."""
    if not pack:
        if max_items is not None or max_bytes is not None:
            raise UsageError("--max-items and --max-bytes size a context pack", hint="add --pack")
        return
    # A pack is sized by its own budgets and always carries passages: the result-list options
    # would be silently ignored, so they are refused instead.
    clashing = [
        flag
        for flag, given in (("-n", limit), ("--all", all), ("--full", full), ("--explain", explain))
        if given
    ]
    if clashing:
        raise UsageError(
            f"--pack does not take {', '.join(clashing)}",
            hint="size a pack with --max-items and --max-bytes",
        )
