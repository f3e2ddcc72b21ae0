"""`tansaku skill show|install|remove`: the SKILL.md that teaches agents to use tansaku."""

from __future__ import annotations

import argparse
from typing import Any

from .common import Output, add_format_options

ADMIN_FORMATS = ("cli", "json")
# Written out (not imported from tansaku.skill) so that building the parser imports nothing more.
AGENTS = ("claude", "codex")
WHERE = (
    "claude: .claude/skills/tansaku/SKILL.md (with --global ~/.claude/skills/...);"
    " codex: .agents/skills/tansaku/SKILL.md (with --global ~/.agents/skills/...)"
)


def register(commands: Any) -> None:
    group = commands.add_parser(
        "skill",
        help="the agent skill (SKILL.md) that teaches Claude Code, Codex and other agents to use tansaku",
        description="An Agent Skills SKILL.md generated for this tansaku version: how an agent checks"
        " the index, searches and reads with the JSON CLI, and the exit, error and warning codes it"
        " must act on. See docs/agents.md.",
    )
    sub = group.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True

    show = sub.add_parser("show", help="print the SKILL.md (what install writes)")
    add_format_options(show, ADMIN_FORMATS)
    show.set_defaults(handler=_show)

    install = sub.add_parser(
        "install",
        help="write the SKILL.md where an agent looks for skills",
        description=f"Write the SKILL.md for this version where each agent looks: {WHERE};"
        " with --dir DIR, DIR/tansaku/SKILL.md for any other agent. An identical file is left"
        " alone (unchanged); a SKILL.md that tansaku did not write is replaced only with --force.",
    )
    _target_options(install)
    install.add_argument(
        "--force", action="store_true", help="replace a SKILL.md there that tansaku did not write"
    )
    install.add_argument("--dry-run", action="store_true", help="say what would be written; change nothing")
    add_format_options(install, ADMIN_FORMATS)
    install.set_defaults(handler=_install)

    remove = sub.add_parser(
        "remove",
        help="delete the SKILL.md that install wrote",
        description="Delete the SKILL.md that `tansaku skill install` wrote (and its folder when"
        " empty); a SKILL.md that tansaku did not write is never removed. Same targets as install.",
    )
    _target_options(remove)
    remove.add_argument("--dry-run", action="store_true", help="say what would be removed; change nothing")
    add_format_options(remove, ADMIN_FORMATS)
    remove.set_defaults(handler=_remove)


def _target_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        choices=AGENTS,
        help=f"which agent's skills folder (repeatable; default claude): {WHERE}",
    )
    parser.add_argument(
        "--global",
        action="store_true",
        dest="global_",
        help="the agent's folder in your home (every project) instead of the working folder's",
    )
    parser.add_argument(
        "--dir",
        action="append",
        default=[],
        metavar="DIR",
        help="another agent's skills folder: the skill goes to DIR/tansaku/SKILL.md (repeatable)",
    )


def _show(args: argparse.Namespace, out: Output) -> int:
    from ..skill import render_skill, skill_version

    text = render_skill()
    if out.fmt == "json":
        out.render({"name": "tansaku", "version": skill_version(text), "text": text})
    else:
        out.stdout.write(text)
        out.stdout.flush()
    return 0


def _install(args: argparse.Namespace, out: Output) -> int:
    from ..skill import install, targets

    chosen = targets(args.agent, global_=args.global_, dirs=args.dir)
    out.render(install(chosen, force=args.force, dry_run=args.dry_run).to_dict())
    return 0


def _remove(args: argparse.Namespace, out: Output) -> int:
    from ..skill import remove, targets

    chosen = targets(args.agent, global_=args.global_, dirs=args.dir)
    out.render(remove(chosen, dry_run=args.dry_run).to_dict())
    return 0
