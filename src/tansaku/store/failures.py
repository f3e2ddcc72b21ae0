"""Why SQLite could not use the index, told apart: cannot write, disk full, damaged, or none of those.

A read-only or full disk must never be reported as damage: the advice for damage is to move the
file aside and rebuild, which throws a sound index away. So each cause gets its own error, and only
a file that SQLite itself calls damaged, or that ``PRAGMA quick_check`` finds fault with, gets the
rebuild hint (which still keeps the old file). The probes here look at the file system only; the
one SQL statement (the quick check) is the caller's, passed in.
"""

from __future__ import annotations

import errno
import os
import shlex
import shutil
import stat
import struct
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import IndexCorrupt, IndexDiskFull, IndexError_, IndexIOError, IndexMissing, IndexReadOnly

# SQLite's primary result codes (an extended code keeps its primary one in the low byte).
SQLITE_ERROR, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY = 1, 5, 6, 8
SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_NOTADB = 10, 11, 13, 14, 26
# For an exception without ``sqlite_errorcode``: SQLite's own wording of each code.
_WORDING = (
    ("database is locked", SQLITE_BUSY),
    ("database table is locked", SQLITE_LOCKED),
    ("readonly database", SQLITE_READONLY),
    ("disk i/o error", SQLITE_IOERR),
    ("malformed", SQLITE_CORRUPT),
    ("disk is full", SQLITE_FULL),
    ("unable to open", SQLITE_CANTOPEN),
    ("not a database", SQLITE_NOTADB),
)
SIDE_FILES = ("-wal", "-shm")  # WAL mode keeps these beside the index; SQLite must be able to create them
SHM_REGION = 32 * 1024  # SQLite maps the -shm in regions of this size: anything smaller is no live one
MIN_HEADROOM = 1024 * 1024  # below this much free space a failed write is put down to a full disk
MB = 1024 * 1024
QuickCheck = Callable[[], "list[str] | None"]  # the file's problems, [] when sound, None when unknown


def primary_code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    text = str(exc).lower()
    return next((c for words, c in _WORDING if words in text), None)


def side_file(path: Path, suffix: str) -> Path:
    return Path(str(path) + suffix)


def existing_folder(path: Path) -> Path:
    """The index's folder, or its nearest ancestor that exists (the index may not be made yet)."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def mount_point(path: Path) -> Path:
    path = path.resolve()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def _read_only_mount(path: Path) -> bool:
    if not hasattr(os, "statvfs"):  # Windows: access() alone tells
        return False
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _immutable(path: Path) -> bool:
    """Whether the file has the immutable attribute (`chattr +i`), which even root cannot write."""
    if sys.platform != "linux":
        return False
    import fcntl

    size = struct.calcsize("l")
    get_flags = (2 << 30) | (size << 16) | (ord("f") << 8) | 1  # _IOR('f', 1, long): FS_IOC_GETFLAGS
    immutable_flag = 0x10  # FS_IMMUTABLE_FL
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        flags = struct.unpack("i", fcntl.ioctl(fd, get_flags, bytes(size))[:4])[0]
    except OSError:
        return False  # a file system without attributes
    finally:
        os.close(fd)
    return bool(flags & immutable_flag)


def unwritable_reason(path: Path) -> tuple[str, str] | None:
    """Why the index cannot be written, and what allows it again; None when nothing stops it.

    Asks the kernel (``access``, which also says no to root on a read-only mount or an immutable
    file), so it holds for root as for anyone. The folder matters too: SQLite creates the -wal
    and -shm files beside the index, and a new index is built there.
    """
    quoted = shlex.quote(str(path))
    if path.exists():
        if _read_only_mount(path):
            mount = mount_point(path)
            return (
                f"the file system at {mount} is mounted read-only",
                f"remount it read-write (mount -o remount,rw {shlex.quote(str(mount))})",
            )
        if _immutable(path):
            return "the file is immutable (chattr +i)", f"chattr -i {quoted}"
        if not os.access(path, os.W_OK):
            info = path.stat()
            return (
                f"no permission to write it (mode {stat.filemode(info.st_mode)}, owner uid {info.st_uid})",
                f"chmod u+w {quoted}, or run as its owner",
            )
        missing = [s for s in SIDE_FILES if not side_file(path, s).exists()]
        if not missing:
            return None
    folder = existing_folder(path)
    if os.access(folder, os.W_OK | os.X_OK):
        return None
    quoted_folder = shlex.quote(str(folder))
    if _read_only_mount(folder):
        mount = mount_point(folder)
        return (
            f"the file system at {mount} is mounted read-only",
            f"remount it read-write (mount -o remount,rw {shlex.quote(str(mount))})",
        )
    if _immutable(folder):
        return f"its folder {folder} is immutable (chattr +i)", f"chattr -i {quoted_folder}"
    return (
        f"no permission to create files in its folder {folder} (SQLite keeps its -wal and -shm there)",
        f"chmod u+w {quoted_folder}, or run as its owner",
    )


def says_damaged(exc: BaseException) -> bool:
    return primary_code(exc) in (SQLITE_CORRUPT, SQLITE_NOTADB)


def only_immutable_can_read(path: Path, exc: BaseException) -> bool:
    """Whether a read-only open failed only because the -shm file cannot be made beside the
    index (a read-only folder, or a disk too full for its 32 KB), so that opening it
    ``immutable`` reads it all.

    A missing (or stub) -shm also means no connection is open (the last one to close removes
    it), so no writer is busy meanwhile. Not when a -wal file holds changes: an immutable reader
    would skip them and show an older index, so that case is its own error.
    """
    code = primary_code(exc)
    if code not in (SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_FULL, SQLITE_IOERR):
        return False
    if _size(side_file(path, "-shm")) >= SHM_REGION:
        return False  # a -shm in use (a writer that failed to grow one leaves a few bytes behind)
    folder = path.parent
    writable = os.access(folder, os.W_OK | os.X_OK)
    free = free_space(path)
    if writable and (free is None or free >= MIN_HEADROOM):
        return False
    if _size(side_file(path, "-wal")) > 0:
        why = f"the folder {folder} is read-only" if not writable else f"the disk is full ({folder})"
        raise IndexReadOnly(
            f"cannot read the index {path}: its newest changes are in {path}-wal, and SQLite cannot"
            f" create the {path}-shm it needs to read them, as {why}",
            hint="make the folder writable (or free some space) once: any tansaku command then folds"
            " the log into the index; or copy the index with its -wal file to a writable folder and"
            " point TANSAKU_INDEX_PATH there",
            reason="pending write-ahead log, and no -shm can be made",
        )
    return True


def read_only(path: Path, reason: tuple[str, str] | None = None) -> IndexReadOnly:
    why, fix = reason or unwritable_reason(path) or ("SQLite may not write it", "check its permissions")
    return IndexReadOnly(
        f"cannot write the index {path}: {why}",
        hint=f"searching still works; to change the index, {fix}, or point TANSAKU_INDEX_PATH at a"
        " writable place (a new index is built there). The index itself is sound.",
        reason=why,
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def amount(size: int) -> str:
    """A size as a person reads it: KB under a megabyte, else MB with one decimal."""
    return f"{size // 1024} KB" if size < MB else f"{size / MB:.1f} MB"


def free_space(path: Path) -> int | None:
    try:
        return shutil.disk_usage(existing_folder(path)).free
    except OSError:
        return None


def disk_full(path: Path) -> IndexDiskFull:
    """The disk ran out mid-write. How much is needed is an estimate: the write-ahead log holds
    what the write had done when it failed (SQLite rolled it back but keeps the file until the
    connection closes), and the write was not done, so allow twice that, and at least the
    index's own size (a write may copy any of its pages into the log)."""
    free = free_space(path)
    index = _size(path)
    written = _size(side_file(path, "-wal"))
    needed = max(2 * written, index, MIN_HEADROOM)
    folder = existing_folder(path)
    shown_free = amount(free) if free is not None else "an unknown amount"
    so_far = f"; it had written {amount(written)} when it ran out" if written else ""
    return IndexDiskFull(
        f"the disk holding the index {path} is full: {shown_free} free in {folder}; this write"
        f" needs roughly {amount(needed)} or more (the index is {amount(index)}{so_far})",
        hint=f"free at least {amount(needed)} on {mount_point(folder)}, or point TANSAKU_INDEX_PATH"
        " elsewhere, then run the command again. Nothing was lost: the failed write was rolled back"
        " and the index is as it was.",
        free_bytes=free,
        needed_bytes=needed,
    )


def rebuild_hint(path: Path) -> str:
    moved = shlex.quote(str(path) + ".bak")
    return (
        f"it is derived data: move it aside (mv {shlex.quote(str(path))} {moved}) and run"
        " `tansaku update` to rebuild it; keep the .bak until the new index works"
    )


def corrupt(path: Path, exc: BaseException, problems: list[str] | None = None) -> IndexCorrupt:
    found = f"; quick_check: {'; '.join(problems[:3])}" if problems else ""
    return IndexCorrupt(
        f"the index {path} is damaged or not a tansaku index ({exc}{found})",
        hint=rebuild_hint(path),
    )


def explain(exc: BaseException, path: Path, quick_check: QuickCheck) -> Exception:
    """The error a sqlite failure on the index stands for (a lock is the caller's: it names the holder)."""
    code = primary_code(exc)
    if code == SQLITE_FULL:
        return disk_full(path)
    if code in (SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_IOERR):
        reason = unwritable_reason(path)
        if reason is not None:
            return read_only(path, reason)
        if code == SQLITE_READONLY:
            return read_only(path)
    if code == SQLITE_CANTOPEN:
        return IndexMissing(
            f"cannot open the index {path} ({exc})", hint="check the path and its permissions"
        )
    if code in (SQLITE_CORRUPT, SQLITE_NOTADB) or "no such table" in str(exc):
        return corrupt(path, exc)  # damaged, or a table of a tansaku index is missing
    if code == SQLITE_IOERR:
        free = free_space(path)
        if free is not None and free < MIN_HEADROOM:
            return disk_full(path)
    problems = quick_check()
    if problems:
        return corrupt(path, exc, problems)
    if code == SQLITE_IOERR:
        return IndexIOError(
            f"reading or writing the index {path} failed ({exc}); the file itself checks sound",
            hint="the disk or its connection failed: check it (dmesg), then run the command again",
        )
    if problems is None:
        return corrupt(path, exc)
    return IndexError_(
        f"a query on the index {path} failed ({exc}), yet the file is sound (quick_check ok)",
        hint="this is a tansaku bug, not damage: keep the index, and report the command with"
        " `tansaku doctor`'s output",
    )


def os_error(exc: OSError, path: Path) -> Exception | None:
    """The index error an OSError met while making the index stands for, if any."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return disk_full(path)
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return read_only(path)
    return None
