"""Snapshots of what an endpoint adds to the output: embed's summary of what it sent, and the
endpoint as status shows it, in each format those commands have."""

from __future__ import annotations

import pytest

from tansaku.render import render
from tansaku.types import CollectionEmbed, EmbedReport, StatusReport

SENT = {
    "endpoint": "https://gpu.example.org/v1",
    "model": "bge-m3",
    "loopback": False,
    "requests": 12,
    "retries": 2,
    "texts": 170,
    "bytes_sent": 412_345,
    "prompt_tokens": 38_211,
    "seconds": 9.876,
}


def report(**remote: object) -> EmbedReport:
    made = EmbedReport(
        "https://gpu.example.org/v1#bge-m3", "0123456789abcdef:plain:c2", "plain", 1024, 256,
        [CollectionEmbed("notes", pending=168, embedded=170, windows=2)],
        took_ms=10_500.0, chunks_per_second=16.0, vectors_per_second=16.2, peak_memory_mb=88.0,
    )  # fmt: skip
    made.remote = {**SENT, **remote}
    return made


STATUS = StatusReport(
    "/home/me/.cache/tansaku/index.sqlite", True, 5_000_000, 1, 1, "/home/me/.config/tansaku/index.toml",
    (), (), (), embed_model="bge-m3 at https://gpu.example.org/v1, an endpoint on another machine, 1024 dims",
    embed_window=256, embed_remote=True,
)  # fmt: skip


@pytest.mark.parametrize("fmt", ["cli", "json"])
def test_embed_through_an_endpoint(fmt: str, snapshot) -> None:
    assert render(report(), fmt) == snapshot


def test_embed_when_the_server_reports_no_tokens_and_nothing_was_retried(snapshot) -> None:
    out = render(
        report(prompt_tokens=None, retries=0, loopback=True, endpoint="http://127.0.0.1:8080/v1"), "cli"
    )
    assert "tokens not reported by the server" in out and "retried" not in out and "(this machine)" in out
    assert out == snapshot


@pytest.mark.parametrize("fmt", ["cli", "json"])
def test_status_with_an_endpoint_for_embed(fmt: str, snapshot) -> None:
    assert render(STATUS, fmt) == snapshot
