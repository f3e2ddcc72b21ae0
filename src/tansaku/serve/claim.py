"""An exclusive claim on a file, as an ``flock`` lock: whoever holds it may start (and be) the daemon.

The kernel drops the lock when the last descriptor on it closes, so a claim passed to a child
process lives exactly as long as that child, and a ``kill -9`` leaves nothing stale behind. The
lock file itself is never removed: removing a locked file would let a second process lock a new
file of the same name.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

POLL_S = 0.05


def try_claim(path: Path) -> int | None:
    """A descriptor holding the claim on PATH (created if need be), or None when another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def is_claimed(path: Path) -> bool:
    """Whether another process holds the claim; a file that does not exist is not claimed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the probe's own lock at once
    return False


@contextlib.contextmanager
def claimed(path: Path, wait_s: float) -> Iterator[bool]:
    """Hold the claim for the block if it comes free within WAIT_S; yields whether it did."""
    deadline = time.monotonic() + wait_s
    fd = try_claim(path)
    while fd is None and time.monotonic() < deadline:
        time.sleep(POLL_S)
        fd = try_claim(path)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)


def write(fd: int, text: str) -> None:
    """Replace the claim file's contents (a note for whoever finds it claimed)."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, text.encode("utf-8"), 0)
