"""Which model each role uses (env > config > default), where hf: files live, `models add|list|path`."""

from __future__ import annotations

import struct
import tomllib
from pathlib import Path

import pytest

from tansaku.cli import models as cli_models
from tansaku.config import settings
from tansaku.errors import ConfigInvalid, UsageError
from tansaku.models import registry

from .hf_server import tiny_gguf

HF_EMBED = "hf:test-org/tiny-GGUF/tiny.gguf"


@pytest.fixture(autouse=True)
def model_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "models"
    monkeypatch.setenv("TANSAKU_MODEL_DIR", str(folder))
    for role in registry.ROLES:
        monkeypatch.delenv(registry.env_var(role), raising=False)
    return folder


@pytest.fixture
def gguf_file(tmp_path: Path) -> Path:
    path = tmp_path / "files" / "mini.gguf"
    path.parent.mkdir()
    path.write_bytes(tiny_gguf(embedding_length=384))
    return path


def write_config(config_path: Path, text: str) -> None:
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(text, encoding="utf-8")


def test_defaults_are_hf_references_mapped_into_the_models_cache(config_path: Path, model_dir: Path):
    refs = {r.role: r for r in registry.resolve_all(config_path)}
    assert set(refs) == {"embed", "generate", "rerank"}
    embed = refs["embed"]
    assert embed.source == "default"
    assert embed.reference == registry.DEFAULTS["embed"]
    assert (
        embed.local_path
        == model_dir / "ggml-org" / "embeddinggemma-300M-GGUF" / "embeddinggemma-300M-Q8_0.gguf"
    )
    assert (embed.present, embed.size) == (False, None)
    assert not model_dir.exists()  # resolving creates nothing, downloads nothing


def test_env_beats_config_beats_default(
    config_path: Path, gguf_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", "hf:env-org/env-repo/env.gguf")
    write_config(config_path, f'[models]\nembed = "{gguf_file}"\ngenerate = "{gguf_file}"\n')
    refs = {r.role: r for r in registry.resolve_all(config_path)}
    assert (refs["embed"].source, refs["embed"].reference) == ("env", "hf:env-org/env-repo/env.gguf")
    assert not refs["embed"].present  # the environment wins even over a file that exists
    assert (refs["generate"].source, refs["generate"].local_path) == ("config", gguf_file)
    assert refs["generate"].present and refs["generate"].size == gguf_file.stat().st_size
    assert (refs["rerank"].source, refs["rerank"].reference) == ("default", registry.DEFAULTS["rerank"])
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", "  ")  # blank: unset, so the config applies again
    assert registry.resolve("embed", config_path).source == "config"


def test_models_add_says_when_the_environment_overrides_it(cli, gguf_file: Path, monkeypatch):
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_EMBED)
    result = cli("models", "add", "embed", gguf_file, "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert (data["source"], data["reference"]) == ("env", HF_EMBED)
    assert "TANSAKU_EMBED_MODEL is set and wins over the config" in data["message"]
    monkeypatch.delenv("TANSAKU_EMBED_MODEL")
    rows = {m["role"]: m for m in cli("models", "list", "--json").json()["models"]}
    assert (rows["embed"]["source"], rows["embed"]["reference"]) == ("user", str(gguf_file))


def test_env_hf_reference_and_an_empty_env_var(config_path: Path, model_dir: Path, monkeypatch):
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", "hf:o/r/sub/dir/f.gguf")
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", "")
    rerank = registry.resolve("rerank", config_path)
    assert (rerank.source, rerank.local_path) == ("env", model_dir / "o" / "r" / "sub" / "dir" / "f.gguf")
    assert registry.resolve("embed", config_path).source == "default"


def test_relative_paths_mean_relative_to_the_config_file_or_the_cwd(
    config_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    write_config(config_path, '[models]\nembed = "m/e.gguf"\n')
    assert registry.resolve("embed", config_path).local_path == config_path.parent / "m" / "e.gguf"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", "g.gguf")
    assert registry.resolve("generate", config_path).local_path == tmp_path / "g.gguf"


def test_model_dir_defaults_to_the_xdg_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TANSAKU_MODEL_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert registry.model_dir() == tmp_path / "xdg" / "tansaku" / "models"
    monkeypatch.setenv("TANSAKU_MODEL_DIR", str(tmp_path / "elsewhere"))
    assert (
        registry.hf_cache_path(registry.parse_hf(HF_EMBED))
        == tmp_path / "elsewhere/test-org/tiny-GGUF/tiny.gguf"
    )


@pytest.mark.parametrize(
    "bad", ["hf:owner/repo", "hf:owner", "hf:o/../x.gguf", "hf:o/r/../../x.gguf", "hf:o//f"]
)
def test_bad_hf_references_are_refused(bad: str):
    with pytest.raises(UsageError):
        registry.parse_hf(bad)


def test_a_bad_models_table_is_a_config_error(config_path: Path):
    write_config(config_path, 'models = "x"\n')
    with pytest.raises(ConfigInvalid):
        registry.resolve("embed", config_path)
    write_config(config_path, "[models]\nembed = 3\n")
    with pytest.raises(ConfigInvalid):
        registry.resolve("embed", config_path)


@pytest.mark.sqlite_only("reads the config file, which the PostgreSQL run writes its [index] url into")
def test_models_add_writes_the_config_and_keeps_collections_and_contexts(
    cli, indexed: Path, config_path: Path, gguf_file: Path
):
    assert cli("context", "add", "sample/guides", "How-to guides").exit_code == 0
    assert cli("context", "add", "/", "My documents").exit_code == 0
    before = settings.load(config_path)
    raw_before = tomllib.loads(config_path.read_text(encoding="utf-8"))

    result = cli("models", "add", "embed", gguf_file, "--this-index", "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert (data["role"], data["source"], data["local_path"], data["dims"]) == (
        "embed",
        "config",
        str(gguf_file),
        384,
    )

    raw_after = tomllib.loads(config_path.read_text(encoding="utf-8"))
    assert raw_after["models"] == {"embed": str(gguf_file)}
    assert {k: v for k, v in raw_after.items() if k != "models"} == raw_before
    after = settings.load(config_path)
    assert (after.collections, after.contexts) == (before.collections, before.contexts)
    assert after.other == {"models": {"embed": str(gguf_file)}}  # carried over by later saves
    assert cli("collection", "list").exit_code == 0
    assert cli("search", "restore").exit_code == 0

    again = cli("models", "add", "generate", gguf_file, "--this-index")
    assert again.exit_code == 0
    assert tomllib.loads(config_path.read_text(encoding="utf-8"))["models"] == {
        "embed": str(gguf_file),
        "generate": str(gguf_file),
    }
    assert not list(config_path.parent.glob(".tansaku-config-*"))  # no temporary file left behind


def test_models_add_resolves_a_relative_path_against_the_cwd(cli, gguf_file: Path, config_path: Path):
    result = cli("models", "add", "rerank", "mini.gguf", "--this-index", cwd=gguf_file.parent)
    assert result.exit_code == 0, result.stderr
    assert tomllib.loads(config_path.read_text(encoding="utf-8"))["models"]["rerank"] == str(gguf_file)


@pytest.mark.sqlite_only("reads the config file, which the PostgreSQL run writes its [index] url into")
def test_models_add_refuses_a_file_that_is_not_gguf(cli, tmp_path: Path, config_path: Path):
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"<!doctype html><title>not a model</title>")
    result = cli("models", "add", "embed", fake, "--json")
    assert result.exit_code == 2
    assert result.error()["code"] == "USAGE"
    assert "not a GGUF" in result.error()["message"]
    assert not config_path.exists()


@pytest.mark.sqlite_only("reads the config file, which the PostgreSQL run writes its [index] url into")
def test_models_add_refuses_a_missing_file_and_a_folder(cli, tmp_path: Path, config_path: Path):
    missing = cli("models", "add", "embed", tmp_path / "nope.gguf", "--json")
    assert (missing.exit_code, missing.error()["code"]) == (1, "PATH_NOT_FOUND")
    folder = cli("models", "add", "embed", tmp_path, "--json")
    assert folder.exit_code == 2
    assert not config_path.exists()


def test_models_add_rejects_an_unknown_role(cli, gguf_file: Path):
    assert cli("models", "add", "summarize", gguf_file).exit_code == 2


def test_models_list_shows_source_presence_size_and_dims(cli, gguf_file: Path, model_dir: Path, monkeypatch):
    monkeypatch.delenv("TANSAKU_THREADS", raising=False)
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", HF_EMBED)
    assert cli("models", "add", "embed", gguf_file).exit_code == 0
    result = cli("models", "list", "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    rows = {m["role"]: m for m in data["models"]}
    assert data["model_dir"] == str(model_dir)
    assert rows["embed"] | {"local_path": None} == {
        "role": "embed",
        "reference": str(gguf_file),
        "source": "user",
        "local_path": None,
        "endpoint": None,
        "present": True,
        "size": gguf_file.stat().st_size,
        "dims": 384,
        "set_in": str(registry.user_models_path(Path(data["config_file"]))),
    }
    assert rows["generate"]["source"] == "env"
    assert rows["generate"]["local_path"] == str(model_dir / "test-org" / "tiny-GGUF" / "tiny.gguf")
    assert (rows["generate"]["present"], rows["generate"]["dims"]) == (False, None)

    text = cli("models", "list").stdout
    embed_line = next(line for line in text.splitlines() if line.startswith("embed "))
    assert "present" in embed_line and "384" in embed_line and "user" in embed_line
    generate_line = next(line for line in text.splitlines() if line.startswith("generate "))
    assert "missing" in generate_line and HF_EMBED in generate_line and "env" in generate_line
    assert "tansaku models pull" in text
    assert "threads: auto [default]" in text
    assert data["threads"] == {"value": "auto", "source": "default", "problem": None}
    monkeypatch.setenv("TANSAKU_THREADS", "3")
    assert cli("models", "list", "--json").json()["threads"]["source"] == "env"


def test_models_list_shows_unknown_dims_as_a_question_mark(cli, tmp_path: Path):
    bare = tmp_path / "bare.gguf"
    bare.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 0))
    assert cli("models", "add", "embed", bare).exit_code == 0
    rows = {m["role"]: m for m in cli("models", "list", "--json").json()["models"]}
    assert rows["embed"]["dims"] is None
    embed_line = next(line for line in cli("models", "list").stdout.splitlines() if line.startswith("embed "))
    assert " ? " in embed_line


def test_models_path_prints_the_file_or_says_how_to_get_it(cli, gguf_file: Path):
    missing = cli("models", "path", "embed", "--json")
    assert missing.exit_code == 1
    error = missing.error()
    assert error["code"] == "MODEL_MISSING"
    assert "models pull embed" in error["hint"] and "models add embed" in error["hint"]

    assert cli("models", "add", "embed", gguf_file).exit_code == 0
    found = cli("models", "path", "embed")
    assert (found.exit_code, found.stdout) == (0, f"{gguf_file}\n")


def test_a_configured_local_file_that_went_missing(cli, gguf_file: Path):
    assert cli("models", "add", "embed", gguf_file).exit_code == 0
    gguf_file.unlink()
    result = cli("models", "path", "embed")
    assert result.exit_code == 1
    assert "models add embed" in result.stderr


def string(text: str) -> bytes:
    return struct.pack("<Q", len(text)) + text.encode()


def test_embedding_length_is_found_after_a_long_vocabulary(tmp_path: Path):
    # Real files put the tokenizer's arrays (strings, floats) before or after the key; both are skipped.
    vocab = b"".join(string(f"tok{i}") for i in range(20000))
    kv = string("general.architecture") + struct.pack("<I", 8) + string("qwen3")
    kv += string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 20000) + vocab
    kv += string("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 3) + struct.pack("<3f", 0, 1, 2)
    kv += string("general.flag") + struct.pack("<I?", 7, True)
    kv += string("qwen3.embedding_length") + struct.pack("<IQ", 10, 1024)
    path = tmp_path / "vocab-first.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 5) + kv)
    assert registry.embedding_length(path) == 1024


def test_embedding_length_of_broken_or_foreign_files_is_none(tmp_path: Path):
    truncated = tmp_path / "t.gguf"
    truncated.write_bytes(tiny_gguf()[:40])
    assert registry.embedding_length(truncated) is None
    other = tmp_path / "o.bin"
    other.write_bytes(b"PK\x03\x04 a zip file")
    assert registry.embedding_length(other) is None
    assert registry.embedding_length(tmp_path / "absent.gguf") is None


def test_embedding_length_agrees_with_the_gguf_package(tmp_path: Path):
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "m.gguf"
    path.write_bytes(tiny_gguf(embedding_length=768))
    reader = gguf.GGUFReader(path)
    field = reader.fields["bert.embedding_length"]
    assert registry.embedding_length(path) == int(field.parts[field.data[0]][0]) == 768


def test_the_cli_role_list_is_the_registry_role_list():
    assert cli_models.ROLES == registry.ROLES


def test_collection_commands_keep_the_models_table(cli, sample: Path, config_path: Path, gguf_file: Path):
    assert cli("models", "add", "embed", gguf_file, "--this-index").exit_code == 0
    assert cli("collection", "add", sample, "--name", "sample").exit_code == 0
    assert tomllib.loads(config_path.read_text(encoding="utf-8")).get("models") == {"embed": str(gguf_file)}
