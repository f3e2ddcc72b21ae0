"""Extraction where a runaway parser cannot take the indexer down: a worker process (``worker.py``)
under a wall-clock limit per file and a memory limit, restarted after a file that broke it.

A parser can bound the loops it owns (pages, inflated bytes, nesting: ``Limits``), but not the
time or memory of a library's C code: PDFium once took 3.2 GB for one 2 MB file, and an
address-space limit makes it abort the process it runs in. So the indexer never runs a document
parser in its own process. A worker serves a whole update (started at the first file that needs
extracting, so an update of Markdown files starts none); a file that runs past the time limit
has the worker killed, and one that kills it is skipped with the reason, and the next file gets a
fresh worker. Its cost: one process start an update (about 0.05 s) and a pipe round trip a file
(about 0.1 ms).

:class:`ExtractionPool` runs up to ``MAX_EXTRACT_WORKERS`` of them side by side (one per core):
the indexer waits for extractions, so a second core reads the next file meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from . import Extracted, ExtractionFailed, Limits
from .worker import HEADER

if TYPE_CHECKING:  # the rest is imported when the first file is extracted: an update of text
    # files, and every search, never pays for it
    import subprocess
    from concurrent.futures import Future, ThreadPoolExecutor

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])  # the folder that holds tansaku/
_STDERR_TAIL = 2000
# Worker processes one update runs at most: each may take the memory limit per file.
MAX_EXTRACT_WORKERS = 2


class ExtractionPool:
    """Up to ``size`` :class:`ExtractionWorker` processes, each driven by a thread of its own (the
    threads only wait on pipes). ``submit`` returns at once; close the pool (it is a context
    manager) to end the workers."""

    def __init__(self, size: int | None = None) -> None:
        self.size = size or max(1, min(MAX_EXTRACT_WORKERS, os.cpu_count() or 1))
        self._executor: ThreadPoolExecutor | None = None
        self._workers: list[ExtractionWorker] = []
        self._own = threading.local()
        self._lock = threading.Lock()

    def __enter__(self) -> ExtractionPool:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:  # Ctrl-C or an error: nothing waits for the files being read
            for worker in list(self._workers):
                worker.kill()
        self.close()

    def submit(self, fmt: str, raw: bytes, max_chars: int) -> Future[Extracted]:
        """The file's text to come; its ``result()`` raises :class:`ExtractionFailed`."""
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(self.size, thread_name_prefix="tansaku-extract")
        return self._executor.submit(self._extract, fmt, raw, max_chars)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        for worker in self._workers:
            worker.close()
        self._workers.clear()

    def _extract(self, fmt: str, raw: bytes, max_chars: int) -> Extracted:
        worker: ExtractionWorker | None = getattr(self._own, "worker", None)
        if worker is None:
            worker = self._own.worker = ExtractionWorker()
            with self._lock:
                self._workers.append(worker)
        return worker.extract(fmt, raw, max_chars)


class ExtractionWorker:
    """``extract`` like :func:`tansaku.sources.formats.extract`, in a child process. Use it as a
    context manager (or call ``close``) so the child ends with the update."""

    def __init__(self, seconds: float | None = None, memory: int | None = None) -> None:
        from . import MAX_EXTRACT_MEMORY, MAX_EXTRACT_SECONDS

        self.seconds = MAX_EXTRACT_SECONDS if seconds is None else seconds
        self.memory = MAX_EXTRACT_MEMORY if memory is None else memory
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self.started = 0  # processes started: one, plus one after each file that broke one

    def __enter__(self) -> ExtractionWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def extract(self, fmt: str, raw: bytes, max_chars: int) -> Extracted:
        """The file's text, or :class:`ExtractionFailed` with the reason it has none."""
        import pickle

        process = self._running()
        request = pickle.dumps((fmt, raw, max_chars, Limits.current()), protocol=pickle.HIGHEST_PROTOCOL)
        deadline = time.monotonic() + self.seconds
        try:
            assert process.stdin is not None
            process.stdin.write(HEADER.pack(len(request)) + request)
            process.stdin.flush()
            answer = self._answer(process, deadline)
        except BrokenPipeError:
            answer = None
        if answer is None:
            raise self._ended(fmt, timed_out=time.monotonic() >= deadline)
        if answer[0] == "ok":
            return answer[1]
        _, code, detail, cacheable = answer
        raise ExtractionFailed(code, detail, cacheable=cacheable)

    def kill(self) -> None:
        """Stop the file being read now: ``extract`` then answers with a failure at once."""
        process = self._process
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            import subprocess

            try:
                if process.stdin is not None:
                    process.stdin.close()  # the worker's signal to end
                process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    # -- the child ---------------------------------------------------------------------------

    def _running(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.returncode is None:
            return self._process
        self.close()
        import subprocess
        import tempfile

        env = dict(os.environ)
        # The child imports this same package, wherever it was imported from.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed with the worker)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tansaku.sources.formats.worker", str(self.memory)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            raise ExtractionFailed(
                "reader-unavailable", f"cannot start the document reader: {exc}", cacheable=False
            ) from exc
        self.started += 1
        return self._process

    def _answer(self, process: subprocess.Popen[bytes], deadline: float) -> tuple[Any, ...] | None:
        """The worker's answer, or None when it died or ran past ``deadline``."""
        import pickle

        assert process.stdout is not None
        fd = process.stdout.fileno()
        header = _read_exact(fd, HEADER.size, deadline)
        if header is None:
            return None
        (length,) = HEADER.unpack(header)
        body = _read_exact(fd, length, deadline)
        return None if body is None else pickle.loads(body)

    def _ended(self, fmt: str, timed_out: bool) -> ExtractionFailed:
        """Stop the worker that gave no answer; why, as the file's skip reason."""
        process = self._process
        self._process = None
        assert process is not None
        if timed_out:
            with contextlib.suppress(OSError):
                process.kill()
        killed_by, exit_code, peak_kib = _reap(process)
        stderr = self._stderr_tail()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        for stream in (process.stdin, process.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        if timed_out:
            return ExtractionFailed(
                "too-slow", f"reading stopped after {self.seconds:g} s (the time limit per file)"
            )
        limit_mib = self.memory // (1024 * 1024)
        if killed_by is not None:
            signame = signal.Signals(killed_by).name
            # The address-space limit is met as a failed allocation, which C code answers with
            # abort() or a crash: a peak near the limit says that was it.
            if self.memory and peak_kib * 1024 > self.memory // 2:
                return ExtractionFailed(
                    "too-much-memory",
                    f"reading it needed more than {limit_mib} MiB (the memory limit per file);"
                    f" the {fmt.upper()} reader was stopped by {signame}",
                )
            return ExtractionFailed("crashed", f"the {fmt.upper()} reader crashed ({signame})")
        # An exit without a signal is the worker failing to start, not this file: try again later.
        return ExtractionFailed(
            "reader-unavailable",
            f"the document reader exited with {exit_code}" + (f": {stderr}" if stderr else ""),
            cacheable=False,
        )

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - _STDERR_TAIL))
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1] if lines else ""


def _read_exact(fd: int, size: int, deadline: float) -> bytes | None:
    import select

    parts: list[bytes] = []
    left = size
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            return None
        piece = os.read(fd, min(left, 1 << 20))
        if not piece:
            return None
        parts.append(piece)
        left -= len(piece)
    return b"".join(parts)


def _reap(process: subprocess.Popen[bytes]) -> tuple[int | None, int | None, int]:
    """Wait for the ended worker: the signal that ended it or its exit code, and its peak
    resident memory in KiB (0 when unknown)."""
    if process.returncode is None:
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except ChildProcessError:  # reaped elsewhere
            process.wait()
        else:
            process.returncode = os.waitstatus_to_exitcode(status)
            if os.WIFSIGNALED(status):
                return os.WTERMSIG(status), None, usage.ru_maxrss
            return None, process.returncode, usage.ru_maxrss
    code = process.returncode
    return (-code, None, 0) if code < 0 else (None, code, 0)
