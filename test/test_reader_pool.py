"""db.ReaderPool: the kept read connections of a long-lived process (the server)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tansaku.api import Tansaku
from tansaku.errors import IndexMissing
from tansaku.store import db

from .conftest import CliResult


def _titles(api: Tansaku, query: str) -> list[str]:
    return [hit.title for hit in api.search(query).hits]


@pytest.mark.sqlite_only("SQLite's kept readers of the file")
def test_a_kept_connection_is_reused_within_a_thread(indexed: Path, index_path: Path) -> None:
    pool = db.ReaderPool(index_path)
    with pool.reading() as first:
        pass
    with pool.reading() as second:
        assert second is first
    seen: list[db.Connection] = []

    def other_thread() -> None:
        with pool.reading() as conn:
            seen.append(conn)

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert seen and seen[0] is not first  # sqlite connections are not shared between threads


def test_a_kept_connection_sees_a_later_update(
    cli: Callable[..., CliResult], indexed: Path, index_path: Path
) -> None:
    api = Tansaku(keep_connections=True)
    assert _titles(api, "zanzibarian") == []
    (indexed / "late.md").write_text("# Late note\n\nzanzibarian harbour ledger\n", encoding="utf-8")
    assert cli("update").exit_code == 0
    assert _titles(api, "zanzibarian") == ["Late note"]


@pytest.mark.sqlite_only("SQLite's kept readers of the file")
def test_a_rebuilt_index_file_is_opened_afresh(indexed: Path, index_path: Path, tmp_path: Path) -> None:
    pool = db.ReaderPool(index_path)
    with pool.reading() as before:
        pass
    # An atomic rebuild puts a new file in place: the old connection would go on reading the old one.
    copy = tmp_path / "rebuilt.sqlite"
    with db.reading(index_path) as source, db.sqlite3.connect(str(copy)) as target:
        source.backup(target)
    os.replace(copy, index_path)
    with pool.reading() as after:
        assert after is not before
        assert after.execute("SELECT count(*) FROM documents").fetchone()[0] > 0


@pytest.mark.sqlite_only("SQLite's kept readers of the file")
def test_a_transaction_left_open_is_closed_so_later_commits_show(indexed: Path, index_path: Path) -> None:
    pool = db.ReaderPool(index_path)
    with pool.reading() as conn:
        conn.execute("BEGIN")
        conn.execute("SELECT count(*) FROM documents").fetchone()
    with pool.reading() as conn:
        assert not conn.in_transaction


def test_a_missing_index_is_the_usual_error(index_path: Path) -> None:
    with pytest.raises(IndexMissing), db.ReaderPool(index_path).reading():
        pass


@pytest.mark.sqlite_only("SQLite's kept readers of the file")
def test_a_block_inside_a_block_shares_the_connection_and_its_transaction(
    indexed: Path, index_path: Path, tmp_path: Path
) -> None:
    pool = db.ReaderPool(index_path)
    with pool.reading() as outer:
        outer.execute("BEGIN")
        outer.execute("SELECT count(*) FROM documents").fetchone()
        # Even a rebuilt file does not swap the connection under the outer block.
        copy = tmp_path / "rebuilt.sqlite"
        with db.reading(index_path) as source, db.sqlite3.connect(str(copy)) as target:
            source.backup(target)
        os.replace(copy, index_path)
        with pool.reading() as inner:
            assert inner is outer
        assert outer.in_transaction  # the inner block did not end the outer one's snapshot
    assert not outer.in_transaction
    with pool.reading() as after:
        assert after is not outer  # the outermost block now sees the new file


@pytest.mark.sqlite_only("SQLite's kept readers of the file")
def test_kept_readers_keep_one_pool_for_the_backend_named_now(indexed: Path, index_path: Path) -> None:
    from tansaku.store.backend import SqliteBackend
    from tansaku.store.kept_readers import KeptReaders

    kept, backend = KeptReaders(), SqliteBackend(index_path)
    with kept.reading(backend) as first:
        pass
    with kept.reading(backend) as again:
        assert again is first
    with kept.reading(SqliteBackend(index_path)) as other:  # the config names another index
        assert other is not first
    kept.close()
    with kept.reading(backend) as reopened:
        assert reopened is not first and reopened.execute("SELECT count(*) FROM documents").fetchone()[0]
