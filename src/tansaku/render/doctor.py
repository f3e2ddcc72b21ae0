"""The "cli" text of `tansaku doctor`: one line per check, its fix indented below it."""

from __future__ import annotations

from typing import Any

from tansaku.render.shared import RenderOptions
from tansaku.render.terminal import clean

_MARKS = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
_COLORS = {"warn": "\x1b[33m", "fail": "\x1b[31m"}


def doctor_lines(checks: list[Any], opts: RenderOptions) -> list[str]:
    width = max(len(c.check) for c in checks)
    lines = []
    for c in checks:
        mark = _MARKS.get(c.status, c.status)
        if opts.color and c.status in _COLORS:
            mark = f"{_COLORS[c.status]}{mark}\x1b[0m"
        lines.append(f"{mark}  {c.check:<{width}}  {clean(c.detail)}")
        if c.fix and c.status != "ok":
            lines.append(f"      {'':<{width}}  fix: {clean(c.fix)}")
    fails = sum(c.status == "fail" for c in checks)
    warns = sum(c.status == "warn" for c in checks)
    lines += ["", f"{len(checks)} checks: {fails} failed, {warns} warnings"]
    return lines
