"""What a Hugging Face model card (the model folder's README.md) says about the model, for the converter.

The converter reads two things from it: the title, which names a model kept in a generic folder
(``model``, a snapshot's commit), and the front matter's ``language:``, written into the GGUF so
that search knows which scripts the model never learnt. Both are parsed by hand (no YAML
dependency) and read as absent when the card is missing or unreadable.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["NAME_LIKE", "card_languages", "card_title"]

# A model's name as people write it: one word, optionally OWNER/NAME, no spaces.
NAME_LIKE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._/-]{0,127}\Z")


def card_title(readme: Path) -> str | None:
    """The first ``# `` heading of a model card, when it reads as a model name (one word such as
    ``all-MiniLM-L6-v2``, not a sentence); front matter and code blocks are skipped."""
    try:
        lines = readme.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    fenced = front = False
    for number, line in enumerate(lines):
        stripped = line.strip()
        if number == 0 and stripped == "---":
            front = True
            continue
        if front:
            front = stripped != "---"
            continue
        if stripped.startswith("```"):
            fenced = not fenced
        elif not fenced and stripped.startswith("# "):
            title = stripped[2:].strip()
            if NAME_LIKE.match(title) and "{" not in title:
                return title.rstrip("/").rsplit("/", 1)[-1]
            return None
    return None


def card_languages(readme: Path) -> tuple[str, ...]:
    """The ``language:`` of a Hugging Face model card's front matter (``language: en``, or a
    ``- en`` list under it); () when there is no card or it names none. Search uses it to know
    which scripts the model never learnt (models/languages.py)."""
    try:
        lines = readme.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ()
    if not lines or lines[0].strip() != "---":
        return ()
    found: list[str] = []
    in_list = False
    for line in lines[1:]:
        if line.strip() == "---":
            break
        if in_list and line.lstrip().startswith("- "):
            found.append(line.lstrip()[2:].strip().strip("'\""))
            continue
        in_list = False
        key, _, value = line.partition(":")
        if key.strip() == "language" and not line[:1].isspace():
            value = value.strip()
            if value.startswith("[") and value.endswith("]"):
                found += [v.strip().strip("'\"") for v in value[1:-1].split(",")]
            elif value:
                found.append(value.strip("'\""))
            else:
                in_list = True
    return tuple(code for code in found if code)
