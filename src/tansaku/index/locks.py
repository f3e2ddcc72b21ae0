"""Process-wide exclusive locks beside the index (one `embed` at a time), with a bounded wait."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import IndexLocked
from ..store.backend import Backend, SqliteBackend
from ..store.db import lock_timeout


@contextlib.contextmanager
def exclusive_lock(index_path: Path, name: str) -> Iterator[None]:
    """Hold ``INDEX.NAME.lock``; wait up to the lock timeout for another holder, then say who it is.

    The lock is an OS file lock, so a crashed holder never leaves a stale lock behind.
    """
    path = index_path.with_name(f"{index_path.name}.{name}.lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the whole block
    try:
        deadline = time.monotonic() + lock_timeout()
        while not _try_lock(handle):
            if time.monotonic() >= deadline:
                raise IndexLocked(
                    f"another `tansaku {name}` is running on {index_path}{_holder(path)}",
                    hint="wait for it to finish (it keeps its progress), or stop it",
                )
            time.sleep(0.1)
        handle.seek(0)
        handle.truncate()
        handle.write(
            json.dumps({"pid": os.getpid(), "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        )
        handle.flush()
        yield
    finally:
        handle.close()  # closing releases the lock


@contextlib.contextmanager
def command_lock(backend: Backend, conn: Any, name: str) -> Iterator[None]:
    """One `tansaku NAME` at a time on the index: the lock file beside a SQLite index
    (``exclusive_lock``), the database's own lock on a server (held by ``conn``)."""
    if isinstance(backend, SqliteBackend):
        with exclusive_lock(backend.path, name):
            yield
    else:
        with backend.command_lock(conn, name):  # type: ignore[attr-defined]
            yield


def _try_lock(handle: object) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # type: ignore[attr-defined]
    except OSError:
        return False
    return True


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        return f" (pid {info['pid']}, since {info['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return ""
