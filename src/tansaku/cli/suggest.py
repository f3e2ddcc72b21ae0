"""What a usage error says about a misspelt command or option: the nearest names, the formats.

Only an error pays for this module: the parser imports it when it is about to fail.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence

# The most edits (a letter added, dropped, changed or two swapped) a typo of a name of this many
# letters is taken to have: "lst" for list, "serach" for search, but not "cat" for get.
_SHORT_NAME = 4


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
    neighbours (the usual typos) each cost one."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, char_b in enumerate(b, 1):
            current[j] = min(
                previous[j] + 1,
                current[j - 1] + 1,
                previous[j - 1] + (char_a != char_b),
            )
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def nearest(word: str, names: Iterable[str]) -> list[str]:
    """The names ``word`` is most likely a typo of (nearest first, ties in the given order), or the
    one name it begins, else nothing."""
    names = list(dict.fromkeys(names))
    allowed = 1 if len(word) <= _SHORT_NAME else 2
    scored = [(edit_distance(word.lower(), name.lower()), name) for name in names]
    close = [(distance, name) for distance, name in scored if distance <= allowed]
    if close:
        best = min(distance for distance, _ in close)
        return [name for distance, name in close if distance == best]
    begun = [name for name in names if len(word) >= 2 and name.startswith(word)]
    return begun if len(begun) == 1 else []


def _either(names: Sequence[str], quote: bool = True) -> str:
    shown = [f"'{name}'" if quote else name for name in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def unknown_command(word: str, commands: Iterable[str]) -> str:
    commands = list(commands)
    close = nearest(word, commands)
    if close:
        return f"unknown command '{word}'; did you mean {_either(close)}?"
    listed = ", ".join(f"'{name}'" for name in commands)
    return f"unknown command '{word}' (choose from {listed})"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``; did you mean 'json'?`` for a value that is near one of ``choices``, else ``""``."""
    close = nearest(word, choices)
    return f"; did you mean {_either(close)}?" if close else ""


def chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub-)command ``args`` ran: ``tansaku collection list`` for that line."""
    while True:
        commands = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, commands.dest, None) if commands is not None else None
        if commands is None or name not in commands.choices:
            return parser
        parser = commands.choices[name]


def unrecognized(parser: argparse.ArgumentParser, words: Sequence[str], formats: Sequence[str]) -> str:
    """argparse's "unrecognized arguments" message, and what was probably meant: the formats the
    command has for a format flag it lacks (``status --csv``), the nearest option for a misspelt
    one (``--limt``)."""
    message = f"unrecognized arguments: {' '.join(words)}"
    command = parser.prog.split(" ", 1)[-1]
    options = [o for o in parser._option_string_actions if o.startswith("--")]
    flags = [word.split("=", 1)[0] for word in words if word.startswith("-") and word.strip("-")]
    hints: list[str] = []
    for name in flags:
        bare = name.lstrip("-")
        if bare in formats and name not in options:
            hints.append(f"{command} {_prints(parser)}")
            continue
        # One letter after a dash is a short option, too short to guess from.
        close = nearest(bare, [option[2:] for option in options]) if len(bare) > 1 else []
        if close:
            which = f" for {name}" if len(flags) > 1 else ""
            hints.append(f"did you mean {_either(['--' + c for c in close], quote=False)}{which}?")
    return "; ".join([message, *dict.fromkeys(hints)])


def _prints(parser: argparse.ArgumentParser) -> str:
    """``prints text or --json``: the formats of a command, as its flags."""
    action = parser._option_string_actions.get("--format")
    if action is None or not action.choices:
        return "prints text only"
    names = ["text" if name == "cli" else f"--{name}" for name in action.choices]
    return "prints " + _either(names, quote=False)
