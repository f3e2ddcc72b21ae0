"""What every `tansaku doctor` check is built from: the three outcomes and the finding itself.

Both doctor.py (config and index) and doctor_machine.py (models and device) build on this, and
neither imports the other for it.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..types import DoctorCheck

OK, WARN, FAIL = "ok", "warn", "fail"


def check(name: str, status: str, detail: str, fix: str | None = None) -> DoctorCheck:
    from ..types import DoctorCheck

    return DoctorCheck(name, status, detail, fix)


def shell_quote(path: Path | str) -> str:
    """A path as it must be typed in the fix command a user copies."""
    return shlex.quote(str(path))
