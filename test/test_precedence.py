"""One order for every setting (flag > env > config > default), and `status` showing each source."""

from __future__ import annotations

from pathlib import Path

import pytest

from tansaku.inspect import settings as inspect_settings
from tansaku.precedence import MISSING, choose
from tansaku.search import vector_cache
from tansaku.store import db


def write_config(config_path: Path, text: str) -> None:
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("flag", "env", "config", "expected"),
    [
        ("f", "e", "c", ("f", "flag")),
        (None, "e", "c", ("e", "env")),
        (None, "", "c", ("c", "config")),
        (None, "   ", "c", ("c", "config")),  # blank is how a shell clears a variable for one run
        (None, None, "c", ("c", "config")),
        (None, None, None, (None, "config")),  # None in the config is a value, not "unset"
        (None, None, MISSING, ("d", "default")),
    ],
)
def test_choose_takes_the_first_source_that_sets_the_value(monkeypatch, flag, env, config, expected):
    if env is None:
        monkeypatch.delenv("TANSAKU_TEST_SETTING", raising=False)
    else:
        monkeypatch.setenv("TANSAKU_TEST_SETTING", env)
    assert choose(default="d", env="TANSAKU_TEST_SETTING", config=config, flag=flag) == expected


def test_lock_timeout_from_env_else_default_and_a_bad_value_is_reported(monkeypatch):
    monkeypatch.setenv(db.LOCK_TIMEOUT_ENV, "2.5")
    assert db.lock_timeout_setting() == (2.5, "env", None)
    assert db.lock_timeout() == 2.5
    monkeypatch.delenv(db.LOCK_TIMEOUT_ENV)
    assert db.lock_timeout_setting() == (db.DEFAULT_LOCK_TIMEOUT, "default", None)
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv(db.LOCK_TIMEOUT_ENV, bad)
        value, source, problem = db.lock_timeout_setting()
        assert (value, source) == (db.DEFAULT_LOCK_TIMEOUT, "default")
        assert problem is not None and db.LOCK_TIMEOUT_ENV in problem


def test_vector_memory_from_env_else_default(monkeypatch):
    monkeypatch.setenv(vector_cache.MEMORY_BUDGET_ENV, "16")
    assert vector_cache.memory_budget_setting() == (16.0, "env", None)
    assert vector_cache.memory_budget_bytes() == 16 * 1024 * 1024
    monkeypatch.setenv(vector_cache.MEMORY_BUDGET_ENV, "-5")  # negative: search on disk
    assert vector_cache.memory_budget_bytes() == 0
    monkeypatch.setenv(vector_cache.MEMORY_BUDGET_ENV, "lots")
    value, source, problem = vector_cache.memory_budget_setting()
    assert (value, source) == (vector_cache.DEFAULT_MEMORY_BUDGET_MB, "default") and "lots" in problem
    monkeypatch.delenv(vector_cache.MEMORY_BUDGET_ENV)
    assert vector_cache.memory_budget_setting()[1] == "default"


def test_rerank_budget_flag_beats_env_beats_default(monkeypatch):
    monkeypatch.setenv("TANSAKU_RERANK_BUDGET", "3")
    assert inspect_settings.rerank_budget_setting(5.0).describe() == "5 s [flag]"
    assert inspect_settings.rerank_budget_setting().describe() == "3 s [env]"
    monkeypatch.setenv("TANSAKU_RERANK_BUDGET", "quick")
    shown = inspect_settings.rerank_budget_setting()
    assert (shown.value, shown.source) == ("0.75 s", "default") and "quick" in shown.problem
    monkeypatch.delenv("TANSAKU_RERANK_BUDGET")
    assert inspect_settings.rerank_budget_setting().describe() == "0.75 s [default]"


def test_status_shows_every_setting_with_its_source(cli, config_path: Path, tmp_path: Path, monkeypatch):
    for name in ("TANSAKU_EMBED_MODEL", "TANSAKU_GENERATE_MODEL", "TANSAKU_RERANK_MODEL", "TANSAKU_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("TANSAKU_VECTOR_MEMORY_MB", raising=False)
    monkeypatch.delenv("TANSAKU_RERANK_BUDGET", raising=False)
    write_config(config_path, '[models]\nembed = "/models/config.gguf"\nthreads = 2\n')
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", "/models/env.gguf")
    monkeypatch.setenv("TANSAKU_THREADS", "1")  # wins over the config's 2
    data = cli("status", "--json").json()
    rows = {s["name"]: s for s in data["settings"]}
    assert [s["name"] for s in data["settings"]] == [
        "embed_model",
        "generate_model",
        "rerank_model",
        "threads",
        "lock_timeout",
        "vector_memory",
        "rerank_budget",
    ]
    assert (rows["embed_model"]["value"], rows["embed_model"]["source"]) == ("/models/config.gguf", "config")
    assert (rows["generate_model"]["value"], rows["generate_model"]["source"]) == ("/models/env.gguf", "env")
    assert rows["rerank_model"]["source"] == "default"
    assert (rows["threads"]["value"], rows["threads"]["source"]) == ("1", "env")
    assert (rows["lock_timeout"]["value"], rows["lock_timeout"]["source"]) == ("0.5 s", "env")  # conftest
    assert rows["vector_memory"] == {
        "name": "vector_memory",
        "value": "1024 MB",
        "source": "default",
        "env": "TANSAKU_VECTOR_MEMORY_MB",
        "config_key": None,
        "flag": None,
        "problem": None,
    }
    assert data["model_threads"] == "1 [env]"

    text = cli("status").stdout
    assert "settings (flag > env > config > default):" in text
    threads_line = next(line for line in text.splitlines() if line.strip().startswith("threads "))
    assert threads_line.split()[:3] == ["threads", "1", "env"]
    assert "TANSAKU_THREADS, [models] threads" in threads_line


def test_status_flags_a_bad_setting_instead_of_failing(cli, config_path: Path, monkeypatch):
    monkeypatch.setenv("TANSAKU_THREADS", "many")
    result = cli("status", "--json")
    assert result.exit_code == 0
    threads = {s["name"]: s for s in result.json()["settings"]}["threads"]
    assert threads["value"] == "?" and "TANSAKU_THREADS" in threads["problem"]
