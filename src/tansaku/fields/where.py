"""``--where FIELD=VALUE``: the syntax of a condition, checked before anything is searched.

``=`` and ``!=`` compare text without regard to case (a list field matches when any element
does); ``>=``, ``<=``, ``>``, ``<`` compare dates (YYYY-MM-DD; a date-time counts by its day) or
numbers. Several conditions must all hold.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence

from ..errors import UsageError
from ..store.fields import Condition

MAX_CONDITIONS = 20
MAX_OPERAND_CHARS = 1000
# The operator is the first of these after the name (two-character ones first).
_CONDITION = re.compile(r"\A\s*([^\s=<>!]+)\s*(>=|<=|!=|=|>|<)\s*(.*?)\s*\Z", re.S)
_DAY = re.compile(r"\A\d{4}-\d{2}-\d{2}\Z")
SYNTAX_HINT = (
    "write FIELD=VALUE, FIELD!=VALUE, or FIELD>=VALUE, FIELD<=VALUE, FIELD>VALUE, FIELD<VALUE with a"
    " date (2024-05-01) or a number, e.g. --where tags=python --where date>=2024-01-01"
)


def parse_where(expressions: Sequence[str]) -> tuple[Condition, ...]:
    if len(expressions) > MAX_CONDITIONS:
        raise UsageError(f"at most {MAX_CONDITIONS} --where conditions", hint="combine fewer conditions")
    return tuple(parse_condition(text) for text in expressions)


def parse_condition(text: str) -> Condition:
    found = _CONDITION.match(text)
    if found is None:
        raise UsageError(f"cannot read --where {text!r}: no FIELD, operator and VALUE", hint=SYNTAX_HINT)
    name, op, operand = found.group(1), found.group(2), _unquote(found.group(3))
    if not operand:
        raise UsageError(f"--where {text!r} has no value after {op!r}", hint=SYNTAX_HINT)
    if len(operand) > MAX_OPERAND_CHARS or any(c in operand for c in "\r\n\x00"):
        raise UsageError(
            f"--where {name}: the value must be one line of at most {MAX_OPERAND_CHARS} characters"
        )
    number, day = _number(operand), _day(operand)
    if op in ("=", "!="):
        return Condition(name, op, operand.casefold(), number, day)
    if day is not None:
        return Condition(name, op, operand.casefold(), day=day)
    if number is not None:
        return Condition(name, op, operand.casefold(), number=number)
    raise UsageError(
        f"--where {text!r}: {op} compares dates (YYYY-MM-DD) or numbers, and {operand!r} is neither",
        hint=SYNTAX_HINT,
    )


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _day(text: str) -> str | None:
    if not _DAY.match(text):
        return None
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise UsageError(f"--where: {text!r} is not a date", hint=SYNTAX_HINT) from None
