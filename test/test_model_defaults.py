"""Expansion and reranking by default only where they pay: on for an endpoint or a GPU; on a CPU
expansion off, reranking only with its model here and a skip for time a note (issue 24).

The rule is hybrid/model_defaults.py; the figures behind it are in docs/models.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from tansaku.errors import ConfigInvalid, UsageError
from tansaku.hybrid.model_defaults import choose_expansion, choose_rerank
from tansaku.models.system import gpu_offload
from tansaku.serve.requests import OPERATIONS, Fields, _expand, _rerank

from .gemma_fixture import gemma_gguf, requires_gemma
from .models_fixture import requires_minilm

ENDPOINT = "http://127.0.0.1:9/v1#qwen"


def _never(calls: list[str]) -> object:
    def gpu() -> bool:
        calls.append("gpu")
        return False

    return gpu


def test_on_a_cpu_expansion_is_off_and_the_note_says_how_to_turn_it_on(tmp_path: Path) -> None:
    choice = choose_expansion(None, tmp_path / "index.toml", None, gpu=lambda: False)
    assert not choice.expand
    assert "off by default on a CPU" in choice.why and "--expand" in choice.why


def test_a_gpu_or_an_endpoint_turns_it_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert choose_expansion(None, tmp_path / "index.toml", None, gpu=lambda: True).expand
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", ENDPOINT)
    calls: list[str] = []
    assert choose_expansion(None, tmp_path / "index.toml", None, gpu=_never(calls)).expand
    assert calls == []  # an endpoint needs no look at the machine's llama.cpp


def test_the_flag_then_the_config_decide_before_the_machine(tmp_path: Path) -> None:
    config = tmp_path / "index.toml"
    calls: list[str] = []
    assert choose_expansion(True, config, {"expand": False}, gpu=_never(calls)).expand
    off = choose_expansion(False, config, {"expand": True}, gpu=_never(calls))
    assert not off.expand and off.why == "expansion off (--no-expand)"
    assert choose_expansion(None, config, {"expand": True}, gpu=_never(calls)).expand
    by_config = choose_expansion(None, config, {"expand": False}, gpu=_never(calls))
    assert not by_config.expand and str(config) in by_config.why
    assert calls == []
    assert not choose_expansion(None, config, {"expand": "auto"}, gpu=lambda: False).expand


def test_a_bad_setting_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigInvalid, match=r"\[query\] expand must be true, false or \"auto\""):
        choose_expansion(None, tmp_path / "index.toml", {"expand": "sometimes"}, gpu=lambda: False)


def _fields(raw: dict[str, object]) -> Fields:
    return Fields(raw, set(OPERATIONS["query"].fields))


def test_requests_take_expand_or_the_older_no_expand_and_refuse_both_disagreeing() -> None:
    assert _expand(_fields({"query": "q"})) is None
    assert _expand(_fields({"query": "q", "expand": True})) is True
    assert _expand(_fields({"query": "q", "expand": "false"})) is False
    assert _expand(_fields({"query": "q", "no_expand": True})) is False
    assert _expand(_fields({"query": "q", "expand": True, "no_expand": False})) is True
    with pytest.raises(UsageError, match="not both"):
        _expand(_fields({"query": "q", "expand": True, "no_expand": True}))


@pytest.fixture
def generate_model(model: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """MiniLM embeds; Gemma 270M generates; no reranker (results keep their fused order)."""
    gemma = gemma_gguf()
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", str(gemma))
    return gemma


QUESTION = ["how", "do", "I", "get", "a", "deleted", "file", "back"]


@requires_minilm
@requires_gemma
@pytest.mark.skipif(gpu_offload(), reason="this llama.cpp offloads to a GPU: expansion is on by default")
@pytest.mark.usefixtures("indexed")
def test_query_on_this_cpu_does_not_expand_unless_asked(cli, generate_model: Path) -> None:
    assert cli("embed").exit_code == 0
    default = cli("query", *QUESTION, "--json", "--explain", "--no-rerank").json()
    stages = [s["stage"] for s in default["explain"]["stages"]]
    assert "expansion" not in stages
    assert any("off by default on a CPU" in n for n in default["explain"]["notes"])
    assert "MODEL_MISSING" not in [w["code"] for w in default["warnings"]]

    asked = cli("query", *QUESTION, "--expand", "--json", "--explain", "--no-rerank").json()
    assert "expansion" in [s["stage"] for s in asked["explain"]["stages"]]
    assert not any("off by default" in n for n in asked["explain"]["notes"])


@requires_minilm
@requires_gemma
@pytest.mark.usefixtures("indexed")
def test_the_config_can_turn_it_on_and_a_bad_value_is_refused(
    cli, generate_model: Path, config_path: Path
) -> None:
    config = config_path
    text = config.read_text(encoding="utf-8")
    config.write_text(text + "\n[query]\nexpand = true\n", encoding="utf-8")
    data = cli("query", *QUESTION, "--json", "--explain", "--no-rerank").json()
    assert "expansion" in [s["stage"] for s in data["explain"]["stages"]]

    config.write_text(text + '\n[query]\nexpand = "sometimes"\n', encoding="utf-8")
    refused = cli("query", *QUESTION, "--no-rerank")
    assert refused.exit_code != 0
    assert '[query] expand must be true, false or "auto"' in refused.stderr


def test_expand_and_no_expand_together_are_a_usage_error(cli) -> None:
    result = cli("query", "x", "--expand", "--no-expand")
    assert result.exit_code == 2
    assert "not allowed with argument" in result.stderr


def test_on_a_cpu_reranking_needs_its_model_here_and_is_then_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "index.toml"
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", str(tmp_path / "absent.gguf"))
    absent = choose_rerank(None, config, None, gpu=lambda: False)
    assert not absent.rerank and "no rerank model on this machine" in absent.why
    present = tmp_path / "reranker.gguf"
    present.write_bytes(b"GGUF")
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", str(present))
    here = choose_rerank(None, config, None, gpu=lambda: False)
    assert here.rerank and here.quiet
    # Asked for, by the flag or the config, a shortfall warns; a GPU or an endpoint reranks loudly.
    assert not choose_rerank(True, config, None, gpu=lambda: False).quiet
    assert not choose_rerank(None, config, {"rerank": True}, gpu=lambda: False).quiet
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", str(tmp_path / "absent.gguf"))
    on_gpu = choose_rerank(None, config, None, gpu=lambda: True)
    assert on_gpu.rerank and not on_gpu.quiet
    calls: list[str] = []
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", ENDPOINT)
    assert choose_rerank(None, config, None, gpu=_never(calls)).rerank and calls == []
    off = choose_rerank(None, config, {"rerank": False}, gpu=_never(calls))
    assert not off.rerank and str(config) in off.why
    with pytest.raises(ConfigInvalid, match=r"\[query\] rerank must be true, false or \"auto\""):
        choose_rerank(None, config, {"rerank": 2}, gpu=lambda: False)


def test_requests_take_rerank_or_the_older_no_rerank_and_refuse_both_disagreeing() -> None:
    assert _rerank(_fields({"query": "q"})) is None
    assert _rerank(_fields({"query": "q", "rerank": True})) is True
    assert _rerank(_fields({"query": "q", "no_rerank": True})) is False
    with pytest.raises(UsageError, match="not both"):
        _rerank(_fields({"query": "q", "rerank": False, "no_rerank": False}))


@requires_minilm
@pytest.mark.skipif(gpu_offload(), reason="this llama.cpp offloads to a GPU: reranking is on by default")
@pytest.mark.usefixtures("indexed")
def test_a_default_query_without_a_rerank_model_notes_it_instead_of_warning(
    cli, model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", str(tmp_path / "absent.gguf"))
    assert cli("embed").exit_code == 0
    default = cli("query", *QUESTION, "--json", "--explain").json()
    assert default["results"] and "MODEL_MISSING" not in [w["code"] for w in default["warnings"]]
    assert any("no rerank model on this machine" in n for n in default["explain"]["notes"])
    asked = cli("query", *QUESTION, "--json", "--rerank").json()
    assert any("rerank model" in w["message"] for w in asked["warnings"] if w["code"] == "MODEL_MISSING")


@requires_minilm
@requires_gemma
@pytest.mark.skipif(gpu_offload(), reason="this llama.cpp offloads to a GPU: reranking is on by default")
@pytest.mark.usefixtures("indexed")
def test_a_default_rerank_short_of_time_is_a_note_and_an_asked_one_a_warning(
    cli, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", str(gemma_gguf()))
    monkeypatch.setenv("TANSAKU_RERANK_BUDGET", "0")
    assert cli("embed").exit_code == 0
    words = ["restore", "snapshots", "from", "the", "backup"]
    fused = cli("query", *words, "--json", "--no-rerank").json()
    default = cli("query", *words, "--json", "--explain").json()
    assert "RERANK_PARTIAL" not in [w["code"] for w in default["warnings"]]
    assert any("ran short" in n or "reranking skipped" in n for n in default["explain"]["notes"])
    assert [h["path"] for h in default["results"]] == [h["path"] for h in fused["results"]]
    asked = cli("query", *words, "--json", "--rerank").json()
    assert "RERANK_PARTIAL" in [w["code"] for w in asked["warnings"]]


def test_rerank_and_no_rerank_together_are_a_usage_error(cli) -> None:
    result = cli("query", "x", "--rerank", "--no-rerank")
    assert result.exit_code == 2
    assert "not allowed with argument" in result.stderr
