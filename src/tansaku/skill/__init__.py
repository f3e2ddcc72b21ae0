"""The agent skill: a SKILL.md generated for the installed tansaku, and where agents find it.

`content` writes the file (the loop an agent follows, and the exit, error and warning codes read
from the code, in `codes`); `install` puts it in an agent's skills folder and takes it away again.
Nothing here touches the index.
"""

from __future__ import annotations

from .content import render_skill, skill_version
from .install import AGENT_DIRS, SkillReport, install, remove, targets

__all__ = ["AGENT_DIRS", "SkillReport", "install", "remove", "render_skill", "skill_version", "targets"]
