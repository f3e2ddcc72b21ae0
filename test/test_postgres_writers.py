"""Writers per collection on PostgreSQL (issue 26), with real `tansaku` processes.

An `update` of collection ``a`` is caught holding its write transaction and stopped (SIGSTOP):
while it holds it, an `update` of ``b`` runs to the end, and a second `update` of ``a`` waits for
it (or gives up with INDEX_LOCKED, as on SQLite); a collection-wide command (`collection rename`)
waits too. Afterwards the kept statistics and the search results equal those of one `update`
that did both collections one after the other, in a second database.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .postgres_fixture import new_database, requires_postgres

pytestmark = [requires_postgres, pytest.mark.subprocess]

REPO = Path(__file__).resolve().parent.parent
# Words both collections use, so their writers share terms (one row each before per-collection
# statistics: the second writer waited on the first's row locks).
SHARED = ["backup", "restore", "archive", "compress", "network", "tunnel", "certificate", "rotate"]
QUERIES = ["backup", "restore archive", "certificate rotate", "tunnel OR network", "unique17", "compress*"]


def _write_corpus(root: Path, name: str, count: int) -> None:
    root.mkdir()
    for i in range(count):
        words = " ".join(SHARED[(i + k) % len(SHARED)] for k in range(1 + i % 5))
        text = f"# {name} note {i}\n\n{words} in {name}. unique{i} detail {i * 7}.\n\n" + (
            f"## Section {i % 9}\n\nMore text about {SHARED[i % len(SHARED)]} and item{i}.\n" * (1 + i % 4)
        )
        (root / f"{name}-{i:04}.md").write_text(text, encoding="utf-8")


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "TANSAKU_PYTHON": sys.executable, "PYTHONPATH": str(REPO / "src"), **extra}


def _command(url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "tansaku", "--index", url, *args]


def _same_collections(source: str, target: str) -> None:
    """Each index has its own collections (issue 40): ``target`` gets ``source``'s list."""
    from dataclasses import replace

    from tansaku.api import Tansaku

    listed = Tansaku(source).config()
    api = Tansaku(target)
    old = api.config()
    api._save_config(old, replace(old, collections={**old.collections, **listed.collections}))


def _run(url: str, *args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _command(url, *args), env=_env(**env), capture_output=True, text=True, timeout=timeout, check=False
    )


def _collection_lock_holders(url: str, collection: str) -> list[str]:
    """The application names of the sessions holding ``collection``'s writer lock."""
    import psycopg

    from tansaku.store.postgres.backend import collection_lock

    space, key = collection_lock(collection)
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT a.application_name FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.classid = %s AND l.objid = %s AND l.granted",
            (space, key),
        ).fetchall()
    return [row[0] for row in rows]


@pytest.fixture
def second_database(postgres_server: str) -> Iterator[str]:
    with new_database(postgres_server) as url:
        yield url


def _statistics(url: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {
            "totals": conn.execute("SELECT docs, tokens FROM keyword_totals").fetchone(),
            "per collection": sorted(conn.execute("SELECT * FROM collection_keyword_totals").fetchall()),
            "terms": sorted(conn.execute("SELECT * FROM collection_term_stats").fetchall()),
            "documents": conn.execute("SELECT count(*), count(DISTINCT id) FROM documents").fetchone(),
        }


def _unused_texts(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        return int(
            conn.execute(
                "SELECT count(*) FROM content AS c"
                " WHERE NOT EXISTS (SELECT 1 FROM documents AS d WHERE d.hash = c.hash)"
            ).fetchone()[0]
        )


def _results(url: str, query: str) -> list[tuple[str, str, float]]:
    done = _run(url, "search", query, "--json", "-n", "1000")  # every match: a cut-off splits ties by id
    assert done.returncode == 0, done.stderr
    rows = [(r["collection"], r["path"], round(r["score"], 9)) for r in json.loads(done.stdout)["results"]]
    # Ids differ from a sequential run's (the concurrent writer's come from the sequence), and
    # ties go by id: compare each score's documents as a set.
    return sorted(rows, key=lambda row: (-row[2], row[0], row[1]))


def _wait_for_lock(url: str, process: subprocess.Popen[str], collection: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if f"tansaku update {collection}" in _collection_lock_holders(url, collection):
            return
        assert process.poll() is None, f"the update ended before it was caught: {process.communicate()}"
        time.sleep(0.01)
    pytest.fail("the update never took its collection's lock")


def test_updates_of_two_collections_overlap_and_one_collection_has_one_writer(
    postgres_url: str, second_database: str, tmp_path: Path
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _write_corpus(a, "a", 1)
    _write_corpus(b, "b", 1)
    for folder in (a, b):
        (folder / f"{folder.name}-old.md").write_text(
            f"# Old\n\nsoon gone from {folder.name}\n", encoding="utf-8"
        )
        added = _run(postgres_url, "collection", "add", str(folder), "--name", folder.name)
        assert added.returncode == 0, added.stderr
    for folder, count in ((a, 400), (b, 60)):
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
        _write_corpus(folder, folder.name, count)

    first = subprocess.Popen(
        _command(postgres_url, "update", "-c", "a", "--json"),
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    second: subprocess.Popen[str] | None = None
    try:
        _wait_for_lock(postgres_url, first, "a")
        first.send_signal(signal.SIGSTOP)  # its transaction stays open, its locks held
        assert "tansaku update a" in _collection_lock_holders(postgres_url, "a")

        # Another collection: runs to the end beside it (nothing of a's to wait for).
        started = time.monotonic()
        other = _run(postgres_url, "update", "-c", "b", "--json", timeout=120, TANSAKU_LOCK_TIMEOUT="30")
        assert other.returncode == 0, other.stderr
        assert json.loads(other.stdout)["collections"][0]["added"], other.stdout
        assert time.monotonic() - started < 30
        assert "tansaku update a" in _collection_lock_holders(postgres_url, "a")  # still open
        # b's removed file left its text: deleting unused rows waits for a writer alone.
        assert _unused_texts(postgres_url) == 1

        # The same collection: gives up after the lock timeout, naming the holder, as on SQLite.
        busy = _run(postgres_url, "update", "-c", "a", "--json", TANSAKU_LOCK_TIMEOUT="1")
        assert busy.returncode == 3, busy.stderr
        error = json.loads(busy.stderr)["error"]
        assert error["code"] == "INDEX_LOCKED"
        assert re.search(
            r"is locked by server pid \d+ \(tansaku update a, since [0-9T:-]+Z\); gave up after 1 s",
            error["message"],
        ), error
        # A collection-wide command takes the whole index: it waits for every writer.
        rename = _run(postgres_url, "collection", "rename", "b", "bee", "--json", TANSAKU_LOCK_TIMEOUT="1")
        assert rename.returncode == 3 and json.loads(rename.stderr)["error"]["code"] == "INDEX_LOCKED"

        # ... or waits for it, when the timeout is long enough.
        second = subprocess.Popen(
            _command(postgres_url, "update", "-c", "a", "--json"),
            env=_env(TANSAKU_LOCK_TIMEOUT="120"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(2)
        assert second.poll() is None  # waiting
    finally:
        first.send_signal(signal.SIGCONT)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    report = json.loads(out)["collections"][0]
    assert len(report["added"]) == 399 and report["removed"] == ["a-old.md"], report
    assert second is not None
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    assert json.loads(out)["collections"][0]["added"] == []  # the first had done it all

    assert _unused_texts(postgres_url) == 0  # a's update ended alone: it deleted both texts

    listed = _run(postgres_url, "collection", "list", "--json")
    assert sorted(c["collection"]["name"] for c in json.loads(listed.stdout)) == ["a", "b"]  # not renamed

    _same_collections(postgres_url, second_database)
    sequential = _run(second_database, "update", "--json")  # a, then b, one process
    assert sequential.returncode == 0, sequential.stderr
    assert _statistics(postgres_url) == _statistics(second_database)
    for query in QUERIES:
        assert _results(postgres_url, query) == _results(second_database, query), query
    assert _results(postgres_url, "backup")  # the queries find something
    doctor = _run(postgres_url, "doctor", "--deep", "--json")
    checks = {c["check"]: c["status"] for c in json.loads(doctor.stdout)}
    assert checks["index.keyword_totals"] == checks["index.term_stats"] == "ok", checks


def test_three_updates_at_once_keep_every_count(
    postgres_url: str, second_database: str, tmp_path: Path
) -> None:
    """Three collections' `update`s started together, none stopped: ids never collide (each
    writer beside others takes the sequence's numbers) and no count is lost."""
    names = ("x", "y", "z")
    for name in names:
        _write_corpus(tmp_path / name, name, 1)
        added = _run(postgres_url, "collection", "add", str(tmp_path / name), "--name", name)
        assert added.returncode == 0, added.stderr
        for path in (tmp_path / name).iterdir():
            path.unlink()
        (tmp_path / name).rmdir()
        _write_corpus(tmp_path / name, name, 150)
    processes = [
        subprocess.Popen(
            _command(postgres_url, "update", "-c", name, "--json"),
            env=_env(TANSAKU_LOCK_TIMEOUT="120"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        assert len(json.loads(out)["collections"][0]["added"]) == 149
    _same_collections(postgres_url, second_database)
    sequential = _run(second_database, "update", "--json")
    assert sequential.returncode == 0, sequential.stderr
    assert _statistics(postgres_url) == _statistics(second_database)
    for query in QUERIES:
        assert _results(postgres_url, query) == _results(second_database, query), query
