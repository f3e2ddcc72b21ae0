"""A transcript collection's chunks are its turns, whatever chunk strategy is asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.both_backends

JUDGED = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts" / "judged"


def test_a_chunk_strategy_does_not_apply_to_a_transcript_collection(cli) -> None:
    assert (
        cli("collection", "add", "--type", "claude", str(JUDGED / "claude"), "--name", "claude").exit_code
        == 0
    )
    before = cli("status", "--json").json()["collections"][0]
    refused = cli("collection", "set-chunk-strategy", "claude", "auto", "--json")
    assert refused.exit_code == 2 and "transcript" in refused.error()["message"]
    assert cli("update", "--chunk-strategy", "auto").exit_code == 0
    after = cli("status", "--json").json()["collections"][0]
    # The turns are still the stored chunks: nothing waits to be re-chunked.
    assert after["chunks"] == before["chunks"] > 0 and after["chunked"] == after["documents"]
    assert cli("search", "freeze", "the", "clock", "--json").json()["results"]
