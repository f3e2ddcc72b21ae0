"""What every command shares: the index option, output format flags, writing and error output."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

FORMATS = ("cli", "json", "csv", "md", "xml", "files")

QUERY_WORDS_EPILOG = (
    "Query words: every word that is not one of the options above is part of the query, in its "
    "place, even when it starts with -: in `tansaku {command} restore -laptop`, -laptop is a query "
    "word{meaning}. Options may come before, between or after the words. A word that starts with "
    "-- and is not an option above is refused as a mistyped option (--jsn: did you mean --json?). "
    "Everything after a lone -- is the query, verbatim: put -- before query words that are also "
    "option names or start with -- (`tansaku {command} -- -n 2` searches for the text -n 2, "
    "`tansaku {command} pip -- --user` for pip --user), or quote the whole query as one word."
)

# A word a person types as an option: two dashes, then a name of letters, digits and dashes,
# optionally =VALUE. `---`, `--8<--` and a quoted `'--user pip'` are text, never a mistyped option.
_LONG_OPTION = re.compile(r"--[^\W_][\w-]*(?:=.*)?", re.DOTALL)
# Long names other search tools use for a short option of ours: `--limit 5` is `-n 5`.
_SYNONYMS = {"limit": "n", "num": "n", "count": "n"}
# The whole command line being parsed, for the words before a sub-command's own (`--index work
# search`): argparse hands a sub-parser only the words after its name.
_line: list[str] | None = None


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that can give a free-text positional every word that is not an option.

    argparse treats any word starting with - as an option and rejects the unknown ones, so
    `tansaku search restore -laptop` failed (issue 9). A parser marked by add_query_argument
    first sorts its words itself: a known option (and its values) stays an option, everything
    else is a query word. The options are then handed to argparse as usual, so their values are
    validated with argparse's own messages, and the query words follow a `--` so that argparse
    never reads them as options. Unmarked parsers behave like ArgumentParser, except that a
    misspelt command or option is an error that names the nearest one (see suggest.py).
    """

    query_words: bool = False

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        global _line
        _line = list(sys.argv[1:] if args is None else args)
        try:
            parsed, extras = self.parse_known_args(args, namespace)
        finally:
            _line = None
        if extras:
            # argparse would name the words only, in the top-level usage: name them in the usage
            # of the command that refused them, with what was probably meant.
            from .suggest import chosen_parser, unrecognized

            command = chosen_parser(self, parsed)
            command.error(unrecognized(command, extras, FORMATS))
        return parsed

    def _check_value(self, action: argparse.Action, value: object) -> None:
        # An unknown (sub-)command gets the nearest command's name rather than argparse's bare
        # "invalid choice" and its list; another choice keeps argparse's message, plus a guess.
        if action.choices is None or value in action.choices:
            return
        from . import suggest

        choices = [str(choice) for choice in action.choices]
        if isinstance(action, argparse._SubParsersAction):
            raise argparse.ArgumentError(None, suggest.unknown_command(str(value), choices))
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            guess = suggest.did_you_mean(str(value), choices)
            raise argparse.ArgumentError(action, exc.message + guess) from None

    def parse_known_args(
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self.query_words:
            args = self._options_then_query(list(sys.argv[1:] if args is None else args))
        return super().parse_known_args(args, namespace)

    def _options_then_query(self, words: list[str]) -> list[str]:
        options: list[str] = []
        query: list[str] = []
        unknown: list[str] = []
        i = 0
        while i < len(words):
            word = words[i]
            i += 1
            if word == "--":
                query.extend(words[i:])  # verbatim, even a second --
                break
            action, values = self._option(word)
            if action is None:
                query.append(word)
                if _LONG_OPTION.fullmatch(word):
                    unknown.append(word)
                continue
            options.append(word)
            # An option takes the next words as its values whatever they look like (as getopt
            # does), but never the `--`: `-n -- x` must stay argparse's "expected one argument".
            while values and i < len(words) and words[i] != "--":
                options.append(words[i])
                i += 1
                values -= 1
        # `search bisect --jsn` searched for "bisect --jsn" and exited 0 (issue 36): a typo of an
        # option must not become the query. A single -word keeps its query meaning (-laptop
        # excludes, `find -mtime` names an option); only the -- form is a person's option.
        # Completion parses half-typed lines: it must never stop at one of them.
        if unknown and "_ARGCOMPLETE" not in os.environ:
            self.error(self._unknown_options(unknown, options, query, len(words)))
        if not query:
            return options  # argparse then reports the missing query in its usual words
        return [*options, "--", *query]

    def _unknown_options(self, unknown: list[str], options: list[str], query: list[str], own: int) -> str:
        """``unknown option --jsn; did you mean --json?``, and the line that searches for it."""
        import shlex  # only a refusal pays for it

        from .suggest import nearest

        longs = [name[2:] for name in self._option_string_actions if name.startswith("--")]
        shorts = {name[1:] for name in self._option_string_actions if len(name) == 2}
        parts: list[str] = []
        for word in dict.fromkeys(unknown):
            bare = word.split("=", 1)[0][2:]
            close = ["--" + name for name in nearest(bare, longs)] if len(bare) > 1 else []
            short = bare if bare in shorts else _SYNONYMS.get(bare.lower())
            if short in shorts:
                close = ["-" + short]  # --n or --limit for -n
            guess = f"; did you mean {' or '.join(close)}?" if close else ""
            parts.append(f"unknown option {word}{guess}")
        # The line that searches for them: the same words up to the command (`--index work
        # search`), the same options, then every query word after a --.
        start = _line[: len(_line) - own] if _line is not None and len(_line) >= own else None
        command = start if start else self.prog.split()[1:]
        literal = shlex.join(["tansaku", *command, *options, "--", *query])
        words = " ".join(dict.fromkeys(unknown))
        them = "it" if len(set(unknown)) == 1 else "them"
        return "; ".join(parts) + f" (to search for {words} as text, put -- before {them}: {literal})"

    def _option(self, word: str) -> tuple[argparse.Action | None, int]:
        """The option `word` names and how many of the following words it takes, else (None, 0).

        Only exact names count: no prefixes of long options (--ful is a query word, not
        --full) and no glued short values (-nginx and -crypto are query words, not -n ginx or
        -c rypto), except a number glued to an option that takes a number (-n3), which argparse
        always accepted and which no one means as a query word.
        """
        if not word.startswith("-") or word == "-":
            return None, 0
        action = self._option_string_actions.get(word)
        if action is not None:
            return action, _value_count(action)
        if "=" in word:
            # --format=json and -n=3 carry their value (argparse checks it); --foo=bar is a word.
            return self._option_string_actions.get(word.split("=", 1)[0]), 0
        action = self._option_string_actions.get(word[:2])
        glued = word[2:]
        if (
            action is not None
            and action.type is not None
            and _value_count(action) == 1
            and glued.isascii()
            and glued.isdigit()
        ):
            return action, 0
        return None, 0


def _value_count(action: argparse.Action) -> int:
    if action.nargs is None:
        return 1
    if isinstance(action.nargs, int):
        return action.nargs
    # '?', '*' and '+' would make "is the next word a value or a query word?" a guess.
    raise TypeError(f"{action.option_strings}: query-word parsers need options with a fixed nargs")


def add_query_argument(parser: argparse.ArgumentParser, *, help: str, meaning: str = "") -> None:
    """The free-text QUERY positional of search, vsearch (and later query), taking -words too.

    `meaning` says what a -word does for this command, for the epilog's example.
    """
    if not isinstance(parser, CommandParser):
        raise TypeError("add_query_argument needs a CommandParser (add_subparsers(parser_class=...))")
    parser.query_words = True
    # Prefix matching would let a query word such as --ful become --full; the word sorting
    # above already matches exactly, and argparse must not guess on the words it is given.
    parser.allow_abbrev = False
    parser.add_argument("query", nargs="+", help=help)
    command = parser.prog.split()[-1]
    parser.epilog = QUERY_WORDS_EPILOG.format(command=command, meaning=meaning)


def add_index_option(parser: argparse.ArgumentParser, *, top_level: bool = False) -> None:
    # Accepted before and after the command name; the sub-parser must not reset the top-level value.
    parser.add_argument(
        "--index",
        metavar="NAME",
        default=None if top_level else argparse.SUPPRESS,
        help="use a named index (its own config NAME.toml and index NAME.sqlite in the cache folder,"
        " even when TANSAKU_INDEX_PATH is set: the flag wins, the variable moves only the default"
        " index), or a postgresql:// URL (the index in that database, the default config);"
        " default: index",
    )


def complete_with(action: argparse.Action, completer: Callable[..., Iterable[str]]) -> argparse.Action:
    """Give `action` a shell completer (argcomplete reads the attribute; see main.complete).

    A plain attribute and a plain function, so that registering it imports nothing: ordinary
    commands build these parsers too.
    """
    action.completer = completer  # type: ignore[attr-defined]
    return action


def collection_names(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    """The configured collections' names, for completing -c/--collection and NAME arguments.

    Reads only the config file of the index the line names (--index), and nothing for
    `--index postgresql://...`, whose list is in the database: completion runs on every
    Tab press, so it must never open the index or load a model, and a broken config must not
    print a traceback into the shell, so it completes nothing instead.
    """
    from ..config import settings
    from ..errors import TansakuError
    from ..paths import locations

    try:
        where = locations(getattr(parsed_args, "index", None))
        config = settings.load(where.config_file)
    except (TansakuError, OSError):
        return []
    if where.index_url is not None:
        return []  # a database keeps its own list (api_lists.py): not read on a Tab press
    return [name for name in sorted(config.collections) if name.startswith(prefix)]


def add_format_options(parser: argparse.ArgumentParser, formats: tuple[str, ...] = FORMATS) -> None:
    group = parser.add_argument_group("output")
    group.add_argument("--format", choices=formats, default=None, help="output format (default: cli)")
    for name in formats[1:]:
        group.add_argument(
            f"--{name}", dest="format", action="store_const", const=name, help=f"same as --format {name}"
        )


def api_for(args: argparse.Namespace) -> Any:
    from ..api import Tansaku

    return Tansaku(getattr(args, "index", None), keep_vectors=False)  # one command, then exit


def _wants_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return stream.isatty()


@dataclass
class Output:
    fmt: str
    color: bool
    stdout: TextIO
    stderr: TextIO

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Output:
        fmt = getattr(args, "format", None) or "cli"
        return cls(fmt=fmt, color=_wants_color(sys.stdout), stdout=sys.stdout, stderr=sys.stderr)

    def render(self, result: object, **options: bool) -> None:
        from ..render import RenderOptions, render

        text = render(result, self.fmt, RenderOptions(color=self.color, **options))
        self.stdout.write(text)
        self.stdout.flush()

    def error(self, exc: Any) -> None:
        from ..render import render_error

        self.stderr.write(render_error(exc, self.fmt))
        self.stderr.flush()

    def error_text(self, message: str) -> None:
        self.stderr.write(f"error: {message}\n")

    def internal_error(self, exc: BaseException) -> None:
        message = f"internal error: {type(exc).__name__}: {exc}"
        if self.fmt == "json":
            payload = {
                "error": {
                    "code": "INTERNAL",
                    "message": message,
                    "hint": "set TANSAKU_DEBUG=1 for a traceback",
                }
            }
            self.stderr.write(json.dumps(payload, ensure_ascii=False) + "\n")
        else:
            self.stderr.write(f"{message}\nhint: set TANSAKU_DEBUG=1 for a traceback, and please report it\n")


class DelayedProgress:
    """A progress bar that appears only on a terminal and only once a run has lasted a second."""

    DELAY_S = 1.0
    # rich redraws 10 times a second by default: 1.1 MB of a 26-minute `embed` (issue 23).
    REDRAWS_PER_SECOND = 2

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Any = None
        self._task: Any = None
        self._label = ""
        self._started = 0.0

    def __call__(self, name: str) -> Any:
        if not self.enabled:
            return None
        self._label = name
        self._started = time.monotonic()
        self._task = None
        return self._advance

    def _advance(self, done: int, total: int, phase: str = "indexing") -> None:
        if self._bar is None:
            if time.monotonic() - self._started < self.DELAY_S:
                return
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            columns = (
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
            )
            self._bar = Progress(
                *columns,
                console=Console(stderr=True),
                transient=True,
                refresh_per_second=self.REDRAWS_PER_SECOND,
            )
            self._bar.start()
        description = f"{phase} {self._label}"
        if self._task is None:
            self._task = self._bar.add_task(description, total=total, rate="")
        speed = self._bar.tasks[-1].speed
        rate = f"{speed:.1f}/s" if speed else ""
        self._bar.update(self._task, completed=done, total=total, description=description, rate=rate)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
