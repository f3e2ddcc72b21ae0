"""Write docs/cli-reference.md from the parser itself, so the reference cannot drift from --help.

Run: ``python -m tansaku.cli.docgen > docs/cli-reference.md`` (a test checks the file is current).
"""

from __future__ import annotations

import argparse
import os

from ..errors import EXIT_CODES
from .main import build_parser

WIDTH = "100"


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:  # argparse offers no public way to walk sub-commands
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((name, sub))
    return found


def _exit_codes() -> str:
    """The exit code table, from the one in errors.py (README's says the same, with examples)."""
    rows = "".join(f"| {code} | {meaning} |\n" for code, meaning in EXIT_CODES.items())
    return f"Exit codes (every command):\n\n| code | meaning |\n|---|---|\n{rows}"


def reference() -> str:
    os.environ["COLUMNS"] = WIDTH  # argparse wraps help to the terminal width
    parser = build_parser()
    parts = [
        "# CLI reference\n",
        "Generated from the parser by `python -m tansaku.cli.docgen`; do not edit by hand.\n",
        _exit_codes(),
        "## tansaku\n",
        f"```\n{parser.format_help()}```\n",
    ]
    for name, sub in _subparsers(parser):
        children = _subparsers(sub)
        parts.append(f"## tansaku {name}\n")
        parts.append(f"```\n{sub.format_help()}```\n")
        for child_name, child in children:
            parts.append(f"### tansaku {name} {child_name}\n")
            parts.append(f"```\n{child.format_help()}```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(reference(), end="")
