"""llama.cpp's thread count: the setting (env > config > default), its validation, and that the
models really compute with the chosen count (read back from llama.cpp's context)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tansaku.errors import ConfigInvalid, UsageError
from tansaku.models import threads
from tansaku.models.threads import ENV, QUERY_THREADS, AutoThreads, ThreadSetting, resolve_threads

from .gemma_fixture import gemma_gguf, requires_gemma
from .models_fixture import minilm_gguf, requires_llama, requires_minilm


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)


def write_config(config_path: Path, text: str) -> None:
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(text, encoding="utf-8")


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)


# --- the setting ------------------------------------------------------------------------------


def test_default_is_automatic_one_thread_per_query(config_path: Path):
    setting = resolve_threads(config_path)  # no config file at all
    assert setting == ThreadSetting(None, "default")
    assert (setting.batch, setting.query) == (None, QUERY_THREADS) == (None, 1)
    write_config(config_path, '[models]\nembed_prompt = "plain"\n')  # a [models] table without it
    assert resolve_threads(config_path).source == "default"


def test_env_beats_config_beats_default(config_path: Path, monkeypatch: pytest.MonkeyPatch):
    write_config(config_path, "[models]\nthreads = 2\n")
    assert resolve_threads(config_path) == ThreadSetting(2, "config")
    monkeypatch.setenv(ENV, " 3 ")
    assert resolve_threads(config_path) == ThreadSetting(3, "env")
    assert (resolve_threads(config_path).batch, resolve_threads(config_path).query) == (3, 3)
    # "auto" in the environment undoes the config's count for one run.
    monkeypatch.setenv(ENV, "AUTO")
    assert resolve_threads(config_path) == ThreadSetting(None, "env")
    monkeypatch.setenv(ENV, "")  # blank is unset: the config applies
    assert resolve_threads(config_path) == ThreadSetting(2, "config")
    write_config(config_path, '[models]\nthreads = "auto"\n')
    assert resolve_threads(config_path) == ThreadSetting(None, "config")
    config_path.unlink()
    assert resolve_threads(config_path) == ThreadSetting(None, "default")


@pytest.mark.parametrize("bad", ["0", "-1", "2.5", "two", "+2", "1e3", "513", "0x2"])
def test_a_bad_environment_value_is_a_usage_error(config_path: Path, monkeypatch, bad: str):
    monkeypatch.setenv(ENV, bad)
    with pytest.raises(UsageError) as caught:
        resolve_threads(config_path)
    assert caught.value.exit_code == 2
    assert ENV in caught.value.message and repr(bad) in caught.value.message


@pytest.mark.parametrize("bad", ["0", "-2", "2.0", "true", '"two"', '"0"', "[2]", "600"])
def test_a_bad_config_value_is_a_config_error(config_path: Path, monkeypatch, bad: str):
    monkeypatch.setenv(ENV, "2")  # a good environment value does not hide a bad config one
    write_config(config_path, f"[models]\nthreads = {bad}\n")
    with pytest.raises(ConfigInvalid) as caught:
        resolve_threads(config_path)
    assert caught.value.exit_code == 2
    assert "threads" in caught.value.message and "[models]" in caught.value.message


def test_a_numeric_string_in_the_config_is_accepted(config_path: Path):
    write_config(config_path, '[models]\nthreads = "4"\n')
    assert resolve_threads(config_path) == ThreadSetting(4, "config")


@requires_llama
@requires_minilm
def test_the_cli_reports_a_bad_setting_with_exit_code_2(cli, indexed, config_path: Path, monkeypatch):
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", str(minilm_gguf()))
    monkeypatch.setenv(ENV, "0")
    result = cli("embed", "--json")
    assert result.exit_code == 2
    assert result.error()["code"] == "USAGE"
    assert ENV in result.error()["message"]
    monkeypatch.delenv(ENV)
    text = config_path.read_text(encoding="utf-8")
    config_path.write_text(text + "\n[models]\nthreads = -1\n", encoding="utf-8")
    result = cli("embed", "--json")
    assert result.exit_code == 2
    assert result.error()["code"] == "CONFIG_INVALID"


def test_status_shows_the_setting_and_reports_a_bad_one(cli, indexed, config_path: Path, monkeypatch):
    assert "model threads: auto" in cli("status").stdout
    monkeypatch.setenv(ENV, "2")
    assert cli("status", "--json").json()["model_threads"] == "2 [env]"
    monkeypatch.setenv(ENV, "many")
    result = cli("status", "--json")
    assert result.exit_code == 0  # status reports what is wrong rather than refuse to run
    data = result.json()
    assert data["model_threads"] is None
    assert [w["code"] for w in data["warnings"]] == ["USAGE"]


# --- the automatic choice ---------------------------------------------------------------------


def test_automatic_threads_leave_the_cpus_other_processes_use():
    samples: list[float | None] = [0, 0, 0, 0, 0]
    auto = AutoThreads(cpus=4, sample=lambda: samples.pop(0) if samples else 0)
    assert auto.choose() == 4  # idle: every CPU
    samples[:] = [2] * 20
    chosen = [auto.choose() for _ in range(10)]
    assert chosen[0] > 2 and chosen[-1] == 2  # smoothed: follows within a few decodes
    samples[:] = [9] * 20
    assert [auto.choose() for _ in range(10)][-1] == 1  # never fewer than one
    samples.clear()
    assert [auto.choose() for _ in range(20)][-1] == 4  # back to all once the others stop


def test_without_a_live_sample_the_load_average_is_read_once():
    auto = AutoThreads(cpus=2, sample=lambda: None)
    first = auto.choose()
    assert 1 <= first <= 2
    assert auto.busy is not None and auto.busy >= 0


@pytest.mark.skipif(not Path("/proc/loadavg").exists(), reason="reads Linux's /proc")
def test_others_running_sees_busy_processes_and_not_this_one():
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(0.3)
        seen = [threads.others_running() for _ in range(20)]
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    assert all(s is not None for s in seen)
    # Both loops are always runnable; this process (running while it reads) is not counted.
    assert max(s for s in seen if s is not None) >= 2
    assert threads.usable_cpus() >= 1


# --- the models -------------------------------------------------------------------------------


@requires_llama
@requires_minilm
def test_the_embedder_computes_with_the_count_it_was_given():
    from tansaku.models.llama import LlamaEmbedder

    with LlamaEmbedder(str(minilm_gguf()), n_threads=1) as model:
        assert (model.thread_setting, model.threads) == (1, 1)
        model.embed(["one thread"])
        assert model.threads == 1
        model.set_threads(2)
        assert model.threads == 2
        model.embed(["two threads"])
        assert model.threads == 2
        model.set_threads(None)  # automatic: within the usable CPUs, at least one
        model.embed(["chosen by the load"])
        assert model.thread_setting is None
        assert 1 <= model.threads <= threads.usable_cpus()
        with pytest.raises(ValueError):
            model.set_threads(0)
    with pytest.raises(ValueError):
        LlamaEmbedder(str(minilm_gguf()), n_threads=-1)


@requires_llama
@requires_minilm
def test_one_and_two_threads_give_the_same_vectors():
    from tansaku.models.llama import LlamaEmbedder

    texts = [
        "how do I restore an old backup",
        "Local-first search for your own documents: keyword (BM25), vectors and hybrid. " * 12,
    ]
    with LlamaEmbedder(str(minilm_gguf()), n_threads=1) as model:
        one = model.embed(texts)
        model.set_threads(2)
        two = model.embed(texts)
    with LlamaEmbedder(str(minilm_gguf()), n_threads=2) as other:
        fresh = other.embed(texts)
    for a, b, c in zip(one, two, fresh, strict=True):
        assert cosine(a, b) > 0.9999
        assert cosine(a, c) > 0.9999


@requires_llama
@requires_minilm
def test_embed_and_vsearch_pass_the_setting_to_the_embedder(
    cli, indexed, config_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    from tansaku.api import Tansaku
    from tansaku.models import embedding

    model = minilm_gguf()
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", str(model))
    monkeypatch.setenv("TANSAKU_MODEL_DIR", str(tmp_path / "models"))
    api = Tansaku()
    api.embed()
    # The one the API used (one per model file per process), without load_embedder's own setting.
    embedder = embedding._LOADED[str(model)]
    assert embedder.thread_setting is None  # embed: chosen by the load
    api.vsearch("restore a file from a snapshot")
    assert (embedder.thread_setting, embedder.threads) == (1, 1)  # a query: one thread
    monkeypatch.setenv(ENV, "2")
    api.embed(force=True)
    assert (embedder.thread_setting, embedder.threads) == (2, 2)
    write_config(config_path, config_path.read_text(encoding="utf-8") + "\n[models]\nthreads = 1\n")
    api.embed(force=True)
    assert (embedder.thread_setting, embedder.threads) == (2, 2)  # env beats config
    monkeypatch.delenv(ENV)
    api.vsearch("restore a file from a snapshot")
    assert (embedder.thread_setting, embedder.threads) == (1, 1)
    api.embed(force=True)
    assert (embedder.thread_setting, embedder.threads) == (1, 1)  # the config's count


@requires_llama
@requires_gemma
def test_the_causal_models_take_the_setting():
    from tansaku.models.llama_causal import LlamaGenerator, LlamaYesNoScorer

    with LlamaYesNoScorer(gemma_gguf(), n_ctx=128, n_threads=1) as judge:
        assert (judge.thread_setting, judge.threads) == (1, 1)
        assert 0.0 <= judge.score("backup", "restore a backup") <= 1.0
        assert judge.threads == 1
    with LlamaGenerator(gemma_gguf(), n_ctx=128) as model:  # automatic
        assert model.thread_setting is None
        model.generate("The sky is", max_tokens=2)
        assert 1 <= model.threads <= threads.usable_cpus()
    with pytest.raises(ValueError):
        LlamaGenerator(gemma_gguf(), n_threads=0)
