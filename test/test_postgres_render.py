"""`status` of an index on a database server: the server line (text) and `server` object (JSON).

A SQLite index's status has neither (test_render.py's snapshots are unchanged by the field)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tansaku.render import render
from tansaku.types import ServerInfo

from .test_render import STATUS

URL = "postgresql://team:***@db.example:5432/kb"
SERVERS = {
    "pgvector": ServerInfo("PostgreSQL 18.3", "0.8.2", "0.8.2", 0.4321),
    "installable": ServerInfo("PostgreSQL 16.4", None, "0.7.4", 12.0),
    "no_pgvector": ServerInfo("PostgreSQL 15.8", None, None, 1.25),
}


@pytest.mark.parametrize("fmt", ["cli", "json"])
@pytest.mark.parametrize("name", SERVERS)
def test_status_of_a_server_index(name: str, fmt: str, snapshot) -> None:
    out = render(replace(STATUS, index_path=URL, server=SERVERS[name]), fmt)
    assert out == snapshot


def test_a_file_index_has_no_server_in_json() -> None:
    assert "server" not in json.loads(render(STATUS, "json"))
    assert "server" in json.loads(render(replace(STATUS, server=SERVERS["pgvector"]), "json"))


@pytest.mark.parametrize(
    ("ms", "shown"), [(0.034, "0.03 ms"), (0.0949, "0.09 ms"), (0.4321, "0.4 ms"), (12.0, "12.0 ms")]
)
def test_a_socket_round_trip_is_not_shown_as_zero(ms: float, shown: str) -> None:
    server = ServerInfo("PostgreSQL 18.3", "0.8.2", "0.8.2", ms)
    assert f"round trip {shown}" in render(replace(STATUS, index_path=URL, server=server), "cli")
