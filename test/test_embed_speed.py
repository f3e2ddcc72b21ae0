"""The embedding speed `embed` measures on this machine, kept in the index, and the waits that
`status` and a server's advice derive from it (a real MiniLM GGUF through llama-cpp-python)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tansaku.serve import advice

from .models_fixture import requires_llama, requires_minilm

pytestmark = pytest.mark.both_backends


@pytest.fixture
def any_length(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the speed of the sample's short runs too (a second or so for 13 chunks)."""
    from tansaku.index import embed_speed

    monkeypatch.setattr(embed_speed, "MIN_SECONDS", 0.0)


@requires_llama
@requires_minilm
@pytest.mark.usefixtures("any_length")
def test_embed_keeps_its_speed_and_status_turns_it_into_a_wait(cli, model, indexed: Path):
    before = cli("status", "--json").json()
    assert before["embed_speed"] is None and before["embed_pending_seconds"] is None
    assert "embedding speed: not measured on this machine yet" in cli("status").stdout

    report = cli("embed", "--json").json()
    speed = cli("status", "--json").json()["embed_speed"]
    assert speed["chunks"] == 13
    assert 0 < speed["chunks_per_second"] <= speed["vectors_per_second"]
    # The rate is of the embedding alone: at least the whole run's, which includes the model load.
    assert speed["chunks_per_second"] >= report["chunks_per_second"] * 0.99
    assert speed["measured_at"].endswith("Z") and len(speed["measured_at"]) == 20

    (indexed / "notes" / "new.md").write_text("# New\n\nA fresh note about restores.\n", encoding="utf-8")
    assert cli("update").exit_code == 0
    status = cli("status", "--json").json()
    assert status["collections"][0]["unembedded"] == 1
    rate = status["embed_speed"]["chunks_per_second"]
    # JSON numbers carry 4 decimals: a fast machine pends 0.0172 s where 1 / rate is 0.017167.
    assert status["embed_pending_seconds"] == pytest.approx(1 / rate, rel=1e-3, abs=5e-5)
    assert "1 chunk without a vector: about a minute or less at this speed" in cli("status").stdout


@requires_llama
@requires_minilm
def test_a_run_too_short_to_measure_keeps_no_speed(cli, model, indexed: Path, monkeypatch):
    from tansaku.index import embed_speed

    monkeypatch.setattr(embed_speed, "MIN_SECONDS", 3600.0)
    assert cli("embed").exit_code == 0
    assert cli("status", "--json").json()["embed_speed"] is None


@requires_llama
@requires_minilm
@pytest.mark.usefixtures("any_length")
def test_a_servers_advice_gives_the_wait_at_the_measured_speed(cli, model, indexed: Path):
    from tansaku.api import Tansaku

    unmeasured = advice.for_codes([("NO_VECTORS", "")], advice.pending_embed(Tansaku().status()))[0]
    assert "13 chunks" in unmeasured and "not measured yet" in unmeasured
    assert "MiniLM-L6 6.1 chunks/s" in unmeasured and "EmbeddingGemma-300M 0.5 chunks/s" in unmeasured

    assert cli("embed").exit_code == 0
    (indexed / "notes" / "new.md").write_text("# New\n\nA fresh note about restores.\n", encoding="utf-8")
    assert cli("update").exit_code == 0
    status = Tansaku().status()
    pending = advice.pending_embed(status)
    assert pending.chunks == 1 and pending.chunks_per_second == status.embed_speed.chunks_per_second
    line = advice.for_codes([("STALE_VECTORS", "")], pending)[0]
    assert "(1 chunk;" in line and "about a minute or less at the" in line
    assert "this model was measured at on this machine" in line


def test_advice_scales_the_wait_with_the_model_not_a_constant():
    slow = advice.PendingEmbed(3000, seconds=3000 / 0.5, chunks_per_second=0.5)
    fast = advice.PendingEmbed(3000, seconds=3000 / 6.0, chunks_per_second=6.0)
    assert "about 1.7 hours at the 0.5 chunks/s" in advice.for_codes([("NO_VECTORS", "")], slow)[0]
    assert "about 8 minutes at the 6 chunks/s" in advice.for_codes([("NO_VECTORS", "")], fast)[0]
    # The space its vectors take: 3,000 vectors of 768 float32 dimensions are about 9 MB.
    assert (
        "about 9 MB of vectors at the default model's 768 dimensions"
        in advice.for_codes([("NO_VECTORS", "")], slow)[0]
    )
    # Not measured: the range between the two reference models, never one of them alone.
    unknown = advice.for_codes([("NO_VECTORS", "")], advice.PendingEmbed(3000))[0]
    assert "8 minutes to 1.7 hours on 2 CPU cores depending on the model" in unknown
