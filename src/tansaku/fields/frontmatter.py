"""Front matter of a Markdown file as flat fields: scalars and lists of scalars.

YAML (``---`` ... ``---`` or ``...``) is read with PyYAML's safe loader (its C loader when the
wheel has one), TOML (``+++`` ... ``+++``) with the standard library's ``tomllib``; both are
imported only when a file has such a block. A mapping inside the front matter becomes dotted
names (``author.name``); a list keeps its scalar elements. Everything is bounded: the block's
size, the number of values kept and each value's length, so no file can make an update slow
(PyYAML shares aliased nodes, so an alias bomb costs no memory, and the walk below stops at
``MAX_VALUES``).

A block that does not parse, or is not a mapping, gives no fields and a warning naming the line.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, NamedTuple

# Files whose front matter is read: the Markdown family (a .txt or .rst file opening with a rule
# of dashes is not a YAML document).
SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
MAX_BLOCK_CHARS = 64 * 1024
MAX_VALUES = 200  # per document, list elements included
MAX_VALUE_CHARS = 1000
MAX_DEPTH = 3  # a.b.c

_YAML = re.compile(r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?^(?:---|\.\.\.)[ \t]*\r?$", re.S | re.M)
_TOML = re.compile(r"\A\+\+\+[ \t]*\r?\n(.*?)(?:\r?\n)?^\+\+\+[ \t]*\r?$", re.S | re.M)
_TOML_LINE = re.compile(r"at line (\d+)")
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_NUMBER_START = re.compile(r"[ \t]*[-+.\d]|[ \t]*(?i:inf|nan)")

Scalar = str | int | float | bool


class FieldValue(NamedTuple):
    """One stored value: its text, kind (str, int, float, bool, date, datetime), number and day.
    A named tuple: built once per value of every file read, and four times cheaper to make than a
    frozen dataclass."""

    text: str
    kind: str
    number: float | None = None
    day: str | None = None  # YYYY-MM-DD of a date, a datetime or a string holding one


@dataclass(frozen=True)
class Field:
    name: str
    values: tuple[FieldValue, ...]
    many: bool  # a list in the front matter (shown as a list even with one element)


@dataclass(frozen=True)
class FrontMatter:
    fields: tuple[Field, ...] = ()
    problem: str | None = None  # why the block gave no fields
    line: int | None = None  # the 1-based line of the file the problem is at


NONE = FrontMatter()


def wanted(rel_path: str) -> bool:
    return PurePosixPath(rel_path).suffix.lower() in SUFFIXES


def parse(text: str) -> FrontMatter:
    """The fields of a leading front matter block (none when there is no block)."""
    if text.startswith("---"):
        block = _YAML.match(text)
        return _parsed(block, _yaml) if block else NONE
    if text.startswith("+++"):
        block = _TOML.match(text)
        return _parsed(block, _toml) if block else NONE
    return NONE


def _parsed(block: re.Match[str], load: Any) -> FrontMatter:
    body = block.group(1)
    if len(body) > MAX_BLOCK_CHARS:
        return FrontMatter(
            problem=f"front matter larger than {MAX_BLOCK_CHARS // 1024} KiB, not read", line=1
        )
    if not body.strip():
        return NONE
    data, problem, line = load(body)
    if problem is not None:
        return FrontMatter(problem=problem, line=line)
    if not isinstance(data, dict):
        return FrontMatter(problem=f"front matter is a {_kind_name(data)}, not a mapping of fields", line=2)
    return FrontMatter(fields=tuple(_flatten(data)))


def _yaml(body: str) -> tuple[Any, str | None, int | None]:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(body, Loader=loader), None, None
    except yaml.YAMLError as exc:
        # Lines are counted from the block, which starts on the file's line 2.
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 2 if mark is not None else 2
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and start is not None and start.line + 2 != line:
            problem += f" ({context} that starts on line {start.line + 2})"
        return None, f"front matter is not valid YAML: {problem}", line
    except (ValueError, TypeError, RecursionError) as exc:  # e.g. a date like 2024-13-45
        return None, f"front matter is not valid YAML: {exc}", 2


def _toml(body: str) -> tuple[Any, str | None, int | None]:
    import tomllib

    try:
        return tomllib.loads(body), None, None
    except ValueError as exc:  # TOMLDecodeError, or a number past int's digit limit
        found = _TOML_LINE.search(str(exc))
        # "at end of document": the block's last line.
        line = int(found.group(1)) + 1 if found else body.rstrip("\r\n").count("\n") + 2
        message = _TOML_LINE.sub("", str(exc)).replace("()", "").strip(" (")
        return None, f"front matter is not valid TOML: {message}", line


def _kind_name(data: Any) -> str:
    if isinstance(data, list):
        return "list"
    if isinstance(data, str):
        return "string"
    return "scalar" if data is not None else "null"


def _flatten(data: dict[Any, Any]) -> list[Field]:
    found: list[Field] = []
    seen: set[str] = set()
    budget = [MAX_VALUES]

    def walk(mapping: dict[Any, Any], prefix: str, depth: int) -> None:
        for key, value in mapping.items():
            if budget[0] <= 0:
                return
            written = str(key).strip()
            name = prefix + written
            folded = name.casefold()
            if not written or folded in seen:
                continue  # names match case-insensitively: the first spelling wins
            if isinstance(value, dict):
                if depth < MAX_DEPTH:
                    walk(value, name + ".", depth + 1)
                continue
            if isinstance(value, list | tuple):
                values = [v for v in (_value(item) for item in value) if v is not None]
                many = True
            else:
                single = _value(value)
                values, many = ([single] if single is not None else []), False
            values = values[: budget[0]]
            if values:
                seen.add(folded)
                budget[0] -= len(values)
                found.append(Field(name, tuple(values), many))

    walk(data, "", 1)
    return found


def _value(value: Any) -> FieldValue | None:
    """A scalar as stored; None for what is not one (null, a nested list or mapping)."""
    if isinstance(value, str):  # the most common: first
        text = _cut(value.strip())
        return FieldValue(text, "str", _number_in(text), _day_in(text)) if text else None
    if isinstance(value, bool):
        return FieldValue("true" if value else "false", "bool")
    if isinstance(value, int):
        if value.bit_length() > 3000:  # str() refuses ints of more than 4300 digits
            return FieldValue(_cut(hex(value)), "str")
        return FieldValue(_cut(str(value)), "int", _finite(value))
    if isinstance(value, float):
        return FieldValue(_cut(repr(value)), "float", _finite(value))
    if isinstance(value, dt.datetime):
        return FieldValue(value.isoformat(), "datetime", None, value.date().isoformat())
    if isinstance(value, dt.date):
        return FieldValue(value.isoformat(), "date", None, value.isoformat())
    if isinstance(value, dt.time):
        return FieldValue(value.isoformat(), "str")
    return None


def _cut(text: str) -> str:
    return text[:MAX_VALUE_CHARS]


def _finite(value: float) -> float | None:
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _number_in(text: str) -> float | None:
    """A quoted number ("2") still compares as a number."""
    if not _NUMBER_START.match(text):  # most text is not: no exception to pay for
        return None
    try:
        return _finite(float(text))
    except ValueError:
        return None


def _day_in(text: str) -> str | None:
    """A quoted date ("2024-05-01", "2024-05-01T10:00:00Z") still compares as a date."""
    if not _ISO_DAY.match(text):
        return None
    try:
        dt.date.fromisoformat(text[:10])
    except ValueError:
        return None
    return text[:10]
