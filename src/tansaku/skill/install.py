"""Put SKILL.md where agents look for skills, and take it away again.

Where each agent reads skills (a folder per skill, its SKILL.md inside; docs/agents.md):

- Claude Code: `.claude/skills/` in the project, `~/.claude/skills/` for every project.
- Codex: `.agents/skills/` in the project (from the working folder up to the repository root),
  `~/.agents/skills/` for every project (the Agent Skills standard's folders, which Codex reads).
- any other agent: `--dir DIR`, its skills folder.

The project is the working folder and the home is $HOME, read when a command runs, so tests point
both at a temporary folder. Installing is idempotent (an identical file is left alone and reported
unchanged); a SKILL.md that tansaku did not write (no `tansaku-skill-version` in its front matter)
is never overwritten without `force`, and never removed. Every target is checked before any file
is written, so a refusal changes nothing.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import TansakuError
from .content import NAME, VERSION_KEY, render_skill, skill_version

FILE = "SKILL.md"
# agent -> its skills folder, relative to the project (the working folder) and to the home.
AGENT_DIRS: dict[str, str] = {
    "claude": ".claude/skills",
    "codex": ".agents/skills",
}
DEFAULT_AGENT = "claude"


class SkillNotOurs(TansakuError):
    """A SKILL.md is where the skill goes, and tansaku did not write it."""

    code = "SKILL_NOT_OURS"
    exit_code = 2


class SkillNotFound(TansakuError):
    """`skill remove`: no SKILL.md where it would be."""

    code = "SKILL_NOT_FOUND"
    exit_code = 1


class SkillWriteFailed(TansakuError):
    """The folder or file could not be written or removed (permissions, a file in the way)."""

    code = "SKILL_WRITE_FAILED"
    exit_code = 4


@dataclass(frozen=True)
class SkillTarget:
    agent: str  # "claude", "codex", or "dir" for --dir
    scope: str  # "project", "global" or "dir"
    path: Path  # .../tansaku/SKILL.md


@dataclass(frozen=True)
class SkillChange:
    agent: str
    scope: str
    path: str
    action: str  # created, updated, replaced, unchanged, removed
    version: str | None  # the version of the file written, or of the one removed
    previous_version: str | None = None  # updated: the version it had

    def sentence(self, dry_run: bool) -> str:
        """``created PATH (tansaku 0.1.0)``, or ``would create ...`` in a dry run."""
        verb = _WOULD[self.action] if dry_run else self.action
        what = f"tansaku {self.version}" if self.version else "not written by tansaku"
        if self.action == "updated" and self.previous_version:
            what = f"tansaku {self.previous_version} -> {self.version}"
        if self.action == "replaced":
            what = f"a SKILL.md tansaku did not write -> tansaku {self.version}"
        return f"{verb} {self.path} ({what})"


_WOULD = {
    "created": "would create",
    "updated": "would update",
    "replaced": "would replace",
    "unchanged": "unchanged",
    "removed": "would remove",
}


@dataclass(frozen=True)
class SkillReport:
    dry_run: bool
    changes: tuple[SkillChange, ...]

    def message(self) -> str:
        lines = [change.sentence(self.dry_run) for change in self.changes]
        if self.dry_run:
            lines.append("dry run: nothing was changed")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {
            "dry_run": self.dry_run,
            "changes": [asdict(change) for change in self.changes],
            "message": self.message(),
        }


def targets(
    agents: Sequence[str] = (),
    *,
    global_: bool = False,
    dirs: Sequence[str | Path] = (),
    cwd: Path | None = None,
    home: Path | None = None,
) -> list[SkillTarget]:
    """Where the skill goes: each agent's folder (the project's, or the home's with `global_`),
    and each of `dirs` (an agent's skills folder); Claude Code's project folder when none is named."""
    from ..errors import UsageError

    if global_ and dirs and not agents:
        raise UsageError("--global picks the home folder of an --agent; --dir names the folder itself")
    root = (home or Path.home()) if global_ else (cwd or Path.cwd())
    chosen = list(dict.fromkeys(agents)) or ([] if dirs else [DEFAULT_AGENT])
    found: list[SkillTarget] = []
    for agent in chosen:
        if agent not in AGENT_DIRS:
            raise UsageError(
                f"unknown agent {agent!r}", hint=f"use one of: {', '.join(AGENT_DIRS)}, or --dir DIR"
            )
        scope = "global" if global_ else "project"
        found.append(SkillTarget(agent, scope, root / AGENT_DIRS[agent] / NAME / FILE))
    for folder in dict.fromkeys(Path(d).expanduser() for d in dirs):
        base = folder if folder.is_absolute() else (cwd or Path.cwd()) / folder
        found.append(SkillTarget("dir", "dir", base / NAME / FILE))
    return found


def install(chosen: Sequence[SkillTarget], *, force: bool = False, dry_run: bool = False) -> SkillReport:
    """Write SKILL.md for the installed version at each target; see the module docstring."""
    text = render_skill()
    version = skill_version(text)
    plan: list[tuple[SkillTarget, SkillChange]] = []
    for target in chosen:
        current = _read(target.path)
        previous = None if current is None else skill_version(current)
        if current is None:
            action = "created"
        elif previous is None and not force:
            raise SkillNotOurs(
                f"{target.path} exists and tansaku did not write it (no {VERSION_KEY} in its"
                " front matter); nothing was changed",
                hint="move it away, or add --force to replace it",
                path=str(target.path),
            )
        elif previous is None:
            action = "replaced"
        else:
            action = "unchanged" if current == text else "updated"
        plan.append((target, _change(target, action, version, previous)))
    if not dry_run:
        for target, change in plan:
            if change.action != "unchanged":
                _write(target.path, text)
    return SkillReport(dry_run, tuple(change for _, change in plan))


def remove(chosen: Sequence[SkillTarget], *, dry_run: bool = False) -> SkillReport:
    """Delete the SKILL.md tansaku wrote at each target (and its folder, when that is then empty)."""
    plan: list[tuple[SkillTarget, SkillChange]] = []
    for target in chosen:
        current = _read(target.path)
        if current is None:
            raise SkillNotFound(
                f"no skill at {target.path}; nothing was removed",
                hint="`tansaku skill install --dry-run` with the same --agent, --global or --dir"
                " shows where it would be",
                path=str(target.path),
            )
        version = skill_version(current)
        if version is None:
            raise SkillNotOurs(
                f"{target.path} was not written by tansaku (no {VERSION_KEY} in its front matter);"
                " nothing was removed",
                hint="delete it yourself if you mean to",
                path=str(target.path),
            )
        plan.append((target, _change(target, "removed", version, None)))
    if not dry_run:
        for target, _ in plan:
            _delete(target.path)
    return SkillReport(dry_run, tuple(change for _, change in plan))


def _change(target: SkillTarget, action: str, version: str | None, previous: str | None) -> SkillChange:
    return SkillChange(target.agent, target.scope, str(target.path), action, version, previous)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SkillWriteFailed(f"cannot read {path}: {exc.strerror or exc}", path=str(path)) from None


def _write(path: Path, text: str) -> None:
    """Write `text` whole or not at all: a temporary file beside it, then a rename."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{FILE}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
            os.chmod(temp, 0o644)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise SkillWriteFailed(f"cannot write {path}: {exc.strerror or exc}", path=str(path)) from None


def _delete(path: Path) -> None:
    try:
        path.unlink()
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # the skill's own folder, only when nothing else is in it
    except OSError as exc:
        raise SkillWriteFailed(f"cannot remove {path}: {exc.strerror or exc}", path=str(path)) from None
