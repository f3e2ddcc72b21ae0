"""`update --watch`: a real process watches a transcript collection, indexes a line appended to a
session while it runs, and stops cleanly on SIGINT (Ctrl-C)."""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tansaku.index.watch import _Matchers
from tansaku.types import Collection

from .conftest import interruptible
from .models_fixture import models_required

# CI installs the watch extra (and sets TANSAKU_REQUIRE_MODELS): there a missing library fails.
pytestmark = [
    pytest.mark.both_backends,
    pytest.mark.skipif(
        importlib.util.find_spec("watchfiles") is None and not models_required(),
        reason="watchfiles is not installed (the watch extra)",
    ),
]

Cli = Callable[..., Any]
FIRST = (
    '{"type":"user","uuid":"u1","parentUuid":null,"cwd":"/home/ann/w","sessionId":"s1",'
    '"timestamp":"2025-12-01T10:00:00.000Z","message":{"role":"user","content":"Set up the build."}}\n'
    '{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","timestamp":"2025-12-01T10:00:05.000Z",'
    '"message":{"role":"assistant","content":[{"type":"text","text":"Done, the build runs."}]}}\n'
)
APPENDED = (
    '{"type":"user","uuid":"u2","parentUuid":"a1","cwd":"/home/ann/w","sessionId":"s1",'
    '"timestamp":"2025-12-01T10:01:00.000Z",'
    '"message":{"role":"user","content":"Now the zebrafish test fails."}}\n'
)
TIMEOUT = 30.0


def _lines(stream: Any) -> queue.Queue[str]:
    """The process's output lines, read by a thread (so that waiting for one can time out)."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _report(lines: queue.Queue[str]) -> dict[str, Any]:
    return json.loads(lines.get(timeout=TIMEOUT))  # type: ignore[no-any-return]


def test_watch_indexes_an_appended_line_and_stops_on_sigint(cli: Cli, tmp_path: Path):
    session = tmp_path / "claude" / "-home-ann-w" / "s1.jsonl"
    session.parent.mkdir(parents=True)
    session.write_text(FIRST, encoding="utf-8")
    assert cli("collection", "add", "--type", "claude", tmp_path / "claude").exit_code == 0
    # The environment the fixtures set (config dir, index path) is inherited by the process.
    process = subprocess.Popen(
        [sys.executable, "-m", "tansaku", "update", "--watch", "--json"],
        preexec_fn=interruptible,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        lines = _lines(process.stdout)
        first = _report(lines)["collections"][0]
        assert first["name"] == "claude" and first["unchanged"] == 1
        (notes := tmp_path / "claude" / "-home-ann-w" / "notes.txt").write_text("not a session\n")
        with session.open("a", encoding="utf-8") as handle:
            handle.write(APPENDED)
        second = _report(lines)["collections"][0]
        # Read from where the last update stopped: only the new line, a turn more.
        assert second["appended"] == ["-home-ann-w/s1.jsonl"] and second["turns"] == 1
        hit = cli("search", "zebrafish", "--json").json()["results"][0]
        assert hit["virtual_path"] == "tansaku://claude/-home-ann-w/s1.jsonl:3"
        notes.unlink()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=TIMEOUT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.stderr is not None
    assert "Traceback" not in process.stderr.read()


def test_only_files_the_masks_take_wake_a_collection(tmp_path: Path):
    root = tmp_path / "claude"
    (root / "p").mkdir(parents=True)
    other = tmp_path / "notes"
    other.mkdir()
    matchers = _Matchers(
        [
            Collection("claude", str(root), masks=("**/*.jsonl",), type="claude"),
            Collection("notes", str(other), masks=("**/*.md",), ignore=("drafts/**",)),
        ]
    )
    assert matchers.owners(str(root / "p" / "s.jsonl")) == ["claude"]
    assert matchers.owners(str(root / "p" / "s.txt")) == []
    assert matchers.owners(str(other / "a.md")) == ["notes"]
    assert matchers.owners(str(other / "drafts" / "a.md")) == []
    assert matchers.owners(str(tmp_path / "elsewhere.jsonl")) == []
