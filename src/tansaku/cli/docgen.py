"""Write docs/cli-reference.md from the parser itself, so the reference cannot drift from --help.

Run: ``python -m tansaku.cli.docgen > docs/cli-reference.md`` (a test checks the file is current).
"""

from __future__ import annotations

import argparse
import os

from .main import build_parser

WIDTH = "100"


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:  # argparse offers no public way to walk sub-commands
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((name, sub))
    return found


def reference() -> str:
    os.environ["COLUMNS"] = WIDTH  # argparse wraps help to the terminal width
    parser = build_parser()
    parts = [
        "# CLI reference\n",
        "Generated from the parser by `python -m tansaku.cli.docgen`; do not edit by hand.\n",
        "Exit codes: 0 success (including no results), 1 not found, 2 bad input or usage, "
        "3 the index cannot be used (missing, locked, corrupt, other schema), 4 a step failed "
        "(a pre-update hook, a missing collection folder), 70 internal error, 130 interrupted.\n",
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
