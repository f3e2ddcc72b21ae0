"""`tansaku doctor`: health checks of the config, the index, the models and the machine."""

from __future__ import annotations

import argparse
from typing import Any

from .common import Output, add_format_options, add_index_option, api_for

ADMIN_FORMATS = ("cli", "json")
EXIT_FAILED = 4


def register(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="check the config, index, models and machine; each finding with its fix (read-only)",
        description="Read-only health checks: ok, warn or fail, each with the command that fixes it."
        " Exits 0 when nothing failed, 4 otherwise.",
    )
    doctor.add_argument(
        "--deep", action="store_true", help="also load each model and ask it for one token (slow)"
    )
    add_index_option(doctor)
    add_format_options(doctor, ADMIN_FORMATS)
    doctor.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace, out: Output) -> int:
    checks = api_for(args).doctor(deep=args.deep)
    out.render(checks)
    return EXIT_FAILED if any(c.status == "fail" for c in checks) else 0
