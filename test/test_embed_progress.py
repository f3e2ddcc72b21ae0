"""How `embed` shows its progress (issue 23): a line every few seconds without a terminal, a bar
redrawn at most a few times a second on one.

Real `tansaku embed` processes with the MiniLM test model over 200 one-chunk notes (about 5 s on
one thread): one with its output on pipes (a log), one on a pseudo-terminal. The line writer's
timing is also checked against a fake clock, which needs no model.
"""

from __future__ import annotations

import io
import os
import pty
import random
import re
import select
import subprocess
import sys
import time

import pytest

from tansaku.errors import UsageError

from .conftest import REPO
from .models_fixture import minilm_gguf, requires_llama, requires_minilm

NOTES = 200
LINE = re.compile(
    r"^embedding notes: (\d+)/(\d+) \((\d+)%\), (\d+\.\d)/s, elapsed (\S+(?: \S+)?), ETA (\S+(?: \S+)?)$"
)
INTERVAL_ENV = "TANSAKU_PROGRESS_INTERVAL"
# rich's erase-line control: one per redraw of a one-line bar.
REDRAW = b"\x1b[2K"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An index of NOTES short notes, each one chunk, and the environment to embed it with."""
    root = tmp_path_factory.mktemp("embed-progress")
    corpus = root / "notes"
    corpus.mkdir()
    rng = random.Random(7)
    words = [
        "backup",
        "restore",
        "archive",
        "snapshot",
        "volume",
        "disk",
        "network",
        "server",
        "cache",
        "index",
        "query",
        "vector",
    ]
    for number in range(NOTES):
        text = " ".join(rng.choice(words) for _ in range(40))
        (corpus / f"note{number:03d}.md").write_text(f"# Note {number}\n\n{text}.\n", encoding="utf-8")
    (root / "home").mkdir()
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("TANSAKU_", "XDG_"))},
        "HOME": str(root / "home"),
        "TANSAKU_CONFIG_DIR": str(root / "config"),
        "TANSAKU_INDEX_PATH": str(root / "index.sqlite"),
        "TANSAKU_MODEL_DIR": str(root / "models"),
        "TANSAKU_EMBED_MODEL": str(minilm_gguf()),
        "TANSAKU_THREADS": "1",  # the same pace on a busy machine, and a share of it left to others
        "TERM": "xterm",
        "COLUMNS": "100",
    }
    added = subprocess.run(
        [sys.executable, "-m", "tansaku", "collection", "add", str(corpus), "--name", "notes"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert added.returncode == 0, added.stderr
    return environment


@requires_llama
@requires_minilm
def test_without_a_terminal_embed_prints_a_progress_line_every_interval(env: dict[str, str]):
    interval = 1.5
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "tansaku", "embed", "-f"],
        env={**env, INTERVAL_ENV: str(interval)},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert f"embedded {NOTES}" in result.stdout and "embedding notes:" not in result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("embedding ")]
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    done = [int(m.group(1)) for m in parsed if m]
    assert {int(m.group(2)) for m in parsed if m} == {NOTES}
    assert done == sorted(done) and done[-1] == NOTES  # in order, ending with the last chunk
    assert all(float(m.group(4)) > 0 for m in parsed if m)
    # None before the first interval, at most one per interval after it, plus the last.
    assert 2 <= len(lines) <= took / interval + 1, (took, lines)


@requires_llama
@requires_minilm
def test_on_a_terminal_the_bar_is_redrawn_at_most_a_few_times_a_second(env: dict[str, str]):
    master, replica = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "tansaku", "embed", "-f"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=replica,
        stderr=replica,
    )
    os.close(replica)
    redraws: list[float] = []  # when each read that held a redraw arrived
    output = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not data:
                break
            output += data
            redraws += [time.monotonic()] * data.count(REDRAW)
        elif process.poll() is not None:
            break
    os.close(master)
    assert process.wait(timeout=60) == 0, output[-2000:]
    assert f"embedded {NOTES}".encode() in output
    assert len(redraws) >= 3, "the bar never showed"
    shown = redraws[-1] - redraws[0]
    # rich's default was 10 a second (1.1 MB of a 26-minute run); 4 leaves room for the last redraw.
    assert len(redraws) <= 4 * shown + 2, (len(redraws), shown)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_come_once_an_interval_has_passed_and_end_with_the_last():
    from tansaku.cli.progress_log import LineProgress

    clock, stream = FakeClock(), io.StringIO()
    progress = LineProgress(stream, interval=5.0, clock=clock)
    advance = progress("notes")
    for second, done in [(1, 32), (4.9, 64), (5.1, 96), (7, 128), (10.2, 160), (11, 200)]:
        clock.now = 100.0 + second
        advance(done, 200, "embedding")
    assert stream.getvalue().splitlines() == [
        "embedding notes: 96/200 (48%), 18.8/s, elapsed 5s, ETA 6s",
        "embedding notes: 160/200 (80%), 15.7/s, elapsed 10s, ETA 3s",
        "embedding notes: 200/200 (100%), 18.2/s, elapsed 11s, ETA 0s",
    ]
    quiet = io.StringIO()
    short = LineProgress(quiet, interval=5.0, clock=clock)("notes")
    short(200, 200, "embedding")  # a run shorter than the interval prints nothing
    assert quiet.getvalue() == ""


def test_pace_and_durations():
    from tansaku.index.progress import Pace, duration, progress_line

    assert Pace(0, 10, 0.0).seconds_left is None and Pace(0, 10, 0.0).rate == 0.0
    assert Pace(30, 120, 60.0).seconds_left == 180.0
    assert [duration(s) for s in (None, 42.4, 187, 3720)] == ["?", "42s", "3m 07s", "1h 02m"]
    assert progress_line("embedding x", Pace(320, 4000, 26.0)).endswith("12.3/s, elapsed 26s, ETA 4m 59s")


def test_the_interval_setting(monkeypatch: pytest.MonkeyPatch):
    from tansaku.cli.progress_log import progress_interval

    monkeypatch.delenv(INTERVAL_ENV, raising=False)
    assert progress_interval() == 5.0
    monkeypatch.setenv(INTERVAL_ENV, "0.25")
    assert progress_interval() == 0.25
    for bad in ("soon", "0", "-2", "inf", "nan"):
        monkeypatch.setenv(INTERVAL_ENV, bad)
        with pytest.raises(UsageError, match=INTERVAL_ENV):
            progress_interval()
