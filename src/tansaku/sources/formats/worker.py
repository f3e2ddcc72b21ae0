"""The extraction worker: a child process that reads documents for the indexer (``guard.py``).

It runs ``python -m tansaku.sources.formats.worker MEMORY_BYTES``, caps its own address space at
that many bytes before any parser is imported, and then answers requests until its input ends.
Each request and answer is a pickled tuple behind an 8-byte length:

- request: ``(fmt, raw, max_chars, limits)``;
- answer: ``("ok", Extracted)`` or ``("failed", code, detail, cacheable)``.

The answers go to a copy of the original standard output; standard output itself then points at
standard error, so a library that prints cannot corrupt the answers.
"""

from __future__ import annotations

import os
import signal
import struct
import sys
from typing import Any, BinaryIO

HEADER = struct.Struct("!Q")


def main(argv: list[str]) -> int:
    import pickle

    memory = int(argv[0]) if argv else 0
    if memory > 0:
        import resource

        # Never above a limit this process was started under: only root may raise a hard limit.
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            memory = min(memory, hard)
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    # Ctrl-C reaches the whole process group: the indexer decides, and closes this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    while True:
        request = read_frame(requests)
        if request is None:
            return 0
        write_frame(answers, answer(*pickle.loads(request)))


def answer(fmt: str, raw: bytes, max_chars: int, limits: Any) -> tuple[Any, ...]:
    from . import ExtractionFailed, extract

    try:
        return ("ok", extract(fmt, raw, max_chars, limits))
    except ExtractionFailed as exc:
        return ("failed", exc.code, exc.detail, exc.cacheable)
    except MemoryError:
        return ("failed", "too-much-memory", "reading it needed more memory than the limit per file", True)
    except RecursionError as exc:
        return ("failed", "corrupt", f"nested too deeply to read: {exc}", True)
    except Exception as exc:  # a library's own error on a malformed file must not stop the update
        return ("failed", "corrupt", f"{type(exc).__name__}: {exc}", True)


def read_frame(stream: BinaryIO) -> bytes | None:
    """One framed message; None at the end of the stream."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (length,) = HEADER.unpack(header)
    body = stream.read(length)
    return body if len(body) == length else None


def write_frame(stream: BinaryIO, message: tuple[Any, ...]) -> None:
    import pickle

    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
