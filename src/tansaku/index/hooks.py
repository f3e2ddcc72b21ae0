"""Pre-update hooks: a shell command run in the collection root before it is re-indexed.

Only an explicit ``update`` runs a hook. Standard input is closed so a command that prompts (a
``git pull`` asking for a password) fails instead of hanging the update.
"""

from __future__ import annotations

import subprocess

from ..types import Collection, HookRun


def run_hook(collection: Collection) -> HookRun:
    assert collection.update, "run_hook needs a collection with a hook"
    try:
        completed = subprocess.run(
            ["bash", "-c", collection.update],
            cwd=collection.path,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
        )
    except OSError as exc:
        return HookRun(collection.update, 127, "", f"could not start the hook: {exc}")
    return HookRun(collection.update, completed.returncode, completed.stdout, completed.stderr)
