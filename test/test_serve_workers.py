"""The server's worker threads: keyword searches never queue behind slow model requests."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from tansaku.serve.requests import OPERATIONS, Service


def test_a_keyword_search_is_answered_while_every_model_worker_is_busy(indexed: Path) -> None:
    service = Service()
    release = threading.Event()
    started = threading.Semaphore(0)
    calls: list[str] = []

    def stuck_query(*args: Any, **kwargs: Any) -> Any:
        started.release()
        if not release.wait(10):
            raise AssertionError("the test never released the query")
        calls.append("query")
        return real_query(*args, **kwargs)

    real_query = service.api.query
    service.api.query = stuck_query  # type: ignore[method-assign]
    order: list[str] = []

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            # More slow requests than there are model workers: they hold every one of them.
            for _ in range(4):
                group.start_soon(service.run, "query", {"query": "restore", "no_expand": True})
            await anyio.to_thread.run_sync(started.acquire)
            answer = await service.run("search", {"query": "restore file"})
            order.append("search")
            assert answer.data["results"], answer.data
            assert not calls, "the search waited for a query"
            release.set()

    anyio.run(scenario)
    assert order == ["search"] and calls == ["query"] * 4


def test_only_embedding_and_generating_requests_use_the_model_workers() -> None:
    assert {name for name, op in OPERATIONS.items() if op.runs_models} == {"vsearch", "query"}


def test_the_server_gives_numpy_one_blas_thread_unless_the_user_chose(monkeypatch) -> None:
    from tansaku.serve.http import BLAS_THREADS_ENV, one_blas_thread

    monkeypatch.delenv(BLAS_THREADS_ENV, raising=False)
    one_blas_thread()
    import os

    assert os.environ[BLAS_THREADS_ENV] == "1"
    monkeypatch.setenv(BLAS_THREADS_ENV, "2")
    one_blas_thread()
    assert os.environ[BLAS_THREADS_ENV] == "2"


def test_numpy_is_not_loaded_before_the_server_starts() -> None:
    # OpenBLAS reads its thread count once, when numpy loads: the setting must come first.
    import subprocess
    import sys

    code = (
        "import sys; import tansaku.cli.main, tansaku.serve.http, tansaku.serve.requests, tansaku.api;"
        " print('numpy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
