"""Model choices belong to the person: shared by every index unless one sets its own (issue 23).

`models add` and `models import` write the user-wide models file beside the index configs;
`--this-index` keeps a choice to one index, whose own choice then wins there. The environment
still wins over both, and configs written before (a `[models]` table in an index's config) keep
working for that index. `models import` names the file after the model, not its folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tansaku.models import convert, registry, threads

from .conftest import REPO
from .hf_server import tiny_gguf
from .models_fixture import minilm_gguf, requires_llama, requires_minilm

WRAPPER = REPO / "bin" / "tansaku"


@pytest.fixture(autouse=True)
def separate_indexes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each index in its own file (conftest pins one index path for all), no model from the env."""
    monkeypatch.delenv("TANSAKU_INDEX_PATH")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TANSAKU_MODEL_DIR", str(tmp_path / "models"))
    for role in registry.ROLES:
        monkeypatch.delenv(registry.env_var(role), raising=False)
    monkeypatch.delenv("TANSAKU_THREADS", raising=False)
    return tmp_path / "config"


def gguf(tmp_path: Path, name: str) -> Path:
    path = tmp_path / "files" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(tiny_gguf(embedding_length=384))
    return path


def listed(cli, *index: str) -> dict[str, dict]:
    result = cli(*index, "models", "list", "--json")
    assert result.exit_code == 0, result.stderr
    return {m["role"]: m for m in result.json()["models"]}


@requires_llama
@requires_minilm
def test_a_model_added_with_the_default_index_serves_every_index(cli, sample: Path, separate_indexes: Path):
    added = cli("models", "add", "embed", minilm_gguf(), "--json")
    assert added.exit_code == 0, added.stderr
    user_file = separate_indexes / registry.USER_MODELS_FILE
    assert added.json()["config"] == str(user_file)
    assert tomllib.loads(user_file.read_text(encoding="utf-8"))["models"] == {"embed": str(minilm_gguf())}

    assert cli("--index", "sample", "collection", "add", sample, "--name", "sample").exit_code == 0
    embedded = cli("--index", "sample", "embed", "--json")
    assert embedded.exit_code == 0, embedded.stderr
    assert embedded.json()["collections"][0]["embedded"] == 13
    # The issue's own command, as a person types it: a real process.
    found = subprocess.run(
        [str(WRAPPER), "--index", "sample", "vsearch", "restore a file from a backup", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "TANSAKU_PYTHON": sys.executable},
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert found.returncode == 0, found.stderr
    assert "MODEL_MISSING" not in found.stdout + found.stderr
    assert json.loads(found.stdout)["results"][0]["path"] == "guides/backups.md"


def test_an_index_that_sets_its_own_model_keeps_it_and_models_list_says_which_applies(
    cli, tmp_path: Path, separate_indexes: Path
):
    shared, own = gguf(tmp_path, "shared.gguf"), gguf(tmp_path, "own.gguf")
    assert cli("models", "add", "embed", shared).exit_code == 0
    mine = cli("--index", "work", "models", "add", "embed", own, "--this-index", "--json")
    assert mine.exit_code == 0, mine.stderr
    assert mine.json()["config"] == str(separate_indexes / "work.toml")
    assert "in this index" in mine.json()["message"]

    default, work = listed(cli)["embed"], listed(cli, "--index", "work")["embed"]
    assert (default["source"], default["reference"]) == ("user", str(shared))
    assert default["set_in"] == str(separate_indexes / registry.USER_MODELS_FILE)
    assert (work["source"], work["reference"]) == ("config", str(own))
    assert work["set_in"] == str(separate_indexes / "work.toml")
    assert listed(cli, "--index", "other")["embed"]["reference"] == str(shared)

    text = cli("--index", "work", "models", "list").stdout
    embed_line = next(line for line in text.splitlines() if line.startswith("embed "))
    assert embed_line.split()[-2] == "index"  # the source column, before the reference
    assert f"user:  [models] ROLE in {separate_indexes / registry.USER_MODELS_FILE}" in text
    shared_text = cli("models", "list").stdout
    shared_line = next(line for line in shared_text.splitlines() if line.startswith("embed "))
    assert shared_line.split()[-2] == "user"


@pytest.mark.sqlite_only("writes the config folder, which the PostgreSQL run has made already")
def test_an_older_config_keeps_working_and_a_shared_choice_replaces_it_where_it_is_made(
    cli, tmp_path: Path, separate_indexes: Path
):
    old, new = gguf(tmp_path, "old.gguf"), gguf(tmp_path, "new.gguf")
    separate_indexes.mkdir()
    for name in ("index", "sample"):  # as `models add` wrote them before models were shared
        (separate_indexes / f"{name}.toml").write_text(
            f'[models]\nembed = "{old}"\nthreads = 2\n\n[collections]\n', encoding="utf-8"
        )
    assert listed(cli)["embed"]["source"] == "config"
    assert listed(cli)["embed"]["reference"] == str(old)

    result = cli("models", "add", "embed", new, "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert (data["source"], data["reference"]) == ("user", str(new))
    assert data["dropped_from_index"] == str(old)
    assert data["indexes_with_own"] == ["sample"]
    assert "sample" in data["message"] and str(old) in data["message"]
    # The index's own line is gone, its other settings stay; the other index keeps its choice.
    assert tomllib.loads((separate_indexes / "index.toml").read_text(encoding="utf-8"))["models"] == {
        "threads": 2
    }
    assert listed(cli, "--index", "sample")["embed"]["reference"] == str(old)
    assert listed(cli, "--index", "fresh")["embed"]["reference"] == str(new)


def test_the_environment_still_wins_over_both_files(cli, tmp_path: Path, monkeypatch):
    shared, own = gguf(tmp_path, "shared.gguf"), gguf(tmp_path, "own.gguf")
    assert cli("models", "add", "embed", shared).exit_code == 0
    assert cli("--index", "work", "models", "add", "embed", own, "--this-index").exit_code == 0
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", str(own))
    for index in ((), ("--index", "work")):
        row = listed(cli, *index)["embed"]
        assert (row["source"], row["reference"], row["set_in"]) == ("env", str(own), None)
    said = cli("models", "add", "embed", shared, "--json").json()["message"]
    assert "TANSAKU_EMBED_MODEL is set and wins" in said


@pytest.mark.sqlite_only("writes the config folder, which the PostgreSQL run has made already")
def test_relative_paths_and_threads_in_the_user_file(config_path: Path, separate_indexes: Path):
    separate_indexes.mkdir()
    user_file = separate_indexes / registry.USER_MODELS_FILE
    user_file.write_text('[models]\nrerank = "m/r.gguf"\nthreads = 3\n', encoding="utf-8")
    rerank = registry.resolve("rerank", config_path)
    assert (rerank.source, rerank.local_path) == ("user", separate_indexes / "m" / "r.gguf")
    assert threads.resolve_threads(config_path) == threads.ThreadSetting(3, "user")
    config_path.write_text("[models]\nthreads = 1\n", encoding="utf-8")
    assert threads.resolve_threads(config_path) == threads.ThreadSetting(1, "config")


@pytest.mark.sqlite_only("writes the config folder, which the PostgreSQL run has made already")
def test_a_broken_user_file_is_a_config_error_naming_it(cli, separate_indexes: Path):
    separate_indexes.mkdir()
    (separate_indexes / registry.USER_MODELS_FILE).write_text("[models]\nembed = 3\n", encoding="utf-8")
    result = cli("models", "list", "--json")
    assert result.exit_code == 2
    assert registry.USER_MODELS_FILE in result.error()["message"]


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2"),  # a folder named after its model
        ("hub/models--sentence-transformers--bge-small-en/snapshots/0123456789abcdef0123", "bge-small-en"),
        ("gt_pkg/model", "card-title-model"),  # a package's generic folder: the model card says
    ],
)
def test_the_model_name_of_a_folder(tmp_path: Path, layout: str, expected: str):
    folder = tmp_path / layout
    folder.mkdir(parents=True)
    (folder / "README.md").write_text(
        "---\nlanguage: en\n---\n\n```\n# not a title\n```\n# card-title-model\n", encoding="utf-8"
    )
    (folder / "config.json").write_text('{"_name_or_path": "nreimers/base-model"}', encoding="utf-8")
    assert convert.model_name(folder) == expected
    (folder / "README.md").unlink()
    if layout == "gt_pkg/model":  # without a card, config.json's name is the last resort
        assert convert.model_name(folder) == "base-model"
    assert convert.file_safe("org/some model:v2") == "org-some-model-v2"


@requires_minilm
def test_models_import_names_the_file_after_the_model(cli, tmp_path: Path, separate_indexes: Path):
    folder = convert.find_minilm_package()
    assert folder is not None and folder.name == "model"  # the package's folder is generic
    result = cli("models", "import", folder, "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["local_path"] == str(tmp_path / "models" / "imported" / "all-MiniLM-L6-v2-f16.gguf")
    assert (data["name"], data["source"]) == ("all-MiniLM-L6-v2", "user")
    assert "every index" in data["message"]
    assert listed(cli, "--index", "other")["embed"]["local_path"] == data["local_path"]


@pytest.mark.sqlite_only("writes the config folder, which the PostgreSQL run has made already")
@requires_llama
@requires_minilm
def test_the_embed_prompt_follows_the_same_order(config_path: Path, separate_indexes: Path):
    from tansaku.models.embedding import prompt_format

    separate_indexes.mkdir()
    assert prompt_format(minilm_gguf(), config_path).name == "plain"  # MiniLM's own
    (separate_indexes / registry.USER_MODELS_FILE).write_text(
        '[models]\nembed_prompt = "embeddinggemma"\n', encoding="utf-8"
    )
    assert prompt_format(minilm_gguf(), config_path).name == "embeddinggemma"
    config_path.write_text('[models]\nembed_prompt = "qwen3-embedding"\n', encoding="utf-8")
    assert prompt_format(minilm_gguf(), config_path).name == "qwen3-embedding"
