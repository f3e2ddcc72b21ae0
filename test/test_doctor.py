"""`tansaku doctor`: each broken state built on purpose, with its status and its fix."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tansaku.models import registry, system
from tansaku.render import render
from tansaku.store import db

from .hf_server import tiny_gguf


@pytest.fixture(autouse=True)
def no_model_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for role in registry.ROLES:
        monkeypatch.delenv(registry.env_var(role), raising=False)
    monkeypatch.delenv("TANSAKU_THREADS", raising=False)
    monkeypatch.setenv("TANSAKU_MODEL_DIR", str(tmp_path / "models"))


def doctor(cli, *args: str) -> tuple[int, dict[str, list[dict]]]:
    result = cli("doctor", "--json", *args)
    data = result.json()
    assert isinstance(data, list)
    by_check: dict[str, list[dict]] = {}
    for item in data:
        assert set(item) == {"check", "status", "detail", "fix"}
        assert item["status"] in ("ok", "warn", "fail")
        by_check.setdefault(item["check"], []).append(item)
    return result.exit_code, by_check


def one(by_check: dict[str, list[dict]], name: str) -> dict:
    assert len(by_check[name]) == 1, by_check[name]
    return by_check[name][0]


def embed_file(tmp_path: Path, dims: int) -> Path:
    path = tmp_path / "files" / f"embed-{dims}.gguf"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(tiny_gguf(embedding_length=dims))
    return path


@pytest.mark.sqlite_only("checks the SQLite file (its pages, lock, FTS rows, config file)")
def test_a_healthy_index_exits_0_and_changes_nothing(cli, indexed: Path, index_path: Path):
    before = index_path.stat().st_mtime_ns, sorted(p.name for p in index_path.parent.iterdir())
    code, checks = doctor(cli)
    assert code == 0
    assert all(item["status"] != "fail" for items in checks.values() for item in items)
    for name in ("config", "index", "index.integrity", "index.fts", "index.lock", "vectors.extension"):
        assert one(checks, name)["status"] == "ok", checks[name]
    assert one(checks, "index.fts")["detail"].startswith("13 documents")
    # A missing model is a warning with the command that gets it, not a failure.
    embed = one(checks, "model.embed")
    assert (embed["status"], embed["fix"]) == ("warn", "tansaku models pull embed")
    assert index_path.stat().st_mtime_ns, sorted(p.name for p in index_path.parent.iterdir()) == before

    text = cli("doctor")
    assert text.exit_code == 0
    assert "fix: tansaku models pull embed" in text.stdout
    assert "0 failed" in text.stdout.splitlines()[-1]


def test_a_missing_collection_root_fails_with_its_fix(cli, indexed: Path):
    shutil.rmtree(indexed)
    code, checks = doctor(cli)
    assert code == 4
    root = one(checks, "config.collection.sample")
    assert root["status"] == "fail" and "does not exist" in root["detail"]
    assert root["fix"] == f"mkdir -p {indexed}  (or: tansaku collection remove sample)"
    text = cli("doctor")
    assert text.exit_code == 4 and "FAIL  config.collection.sample" in text.stdout


@pytest.mark.sqlite_only("checks the SQLite file (its pages, lock, FTS rows, config file)")
def test_a_corrupt_index_fails_and_says_how_to_rebuild(cli, indexed: Path, index_path: Path):
    index_path.write_bytes(b"this is not a database" * 500)
    code, checks = doctor(cli)
    assert code == 4
    index = one(checks, "index")
    assert index["status"] == "fail" and "damaged" in index["detail"]
    assert index["fix"] == f"mv {index_path} {index_path}.bak && tansaku update"


@pytest.mark.sqlite_only("checks the SQLite file (its pages, lock, FTS rows, config file)")
def test_a_damaged_page_fails_every_check_that_reads_it_with_the_rebuild_fix(
    cli, indexed: Path, index_path: Path
):
    # The header is intact (the index opens) but a page further on is garbage.
    with index_path.open("r+b") as f:
        f.seek(4096 * 2)
        f.write(b"\xde\xad" * 2048)
    code, checks = doctor(cli)
    assert code == 4
    rebuild = f"mv {index_path} {index_path}.bak && tansaku update"
    for name in ("index.integrity", "index.pending"):
        item = one(checks, name)
        assert item["status"] == "fail" and "damaged" in item["detail"], item
        assert item["fix"] == rebuild  # not `tansaku update`, which cannot repair the file


@pytest.mark.sqlite_only("checks the SQLite file (its pages, lock, FTS rows, config file)")
def test_keyword_rows_missing_from_fts_fail(cli, indexed: Path, index_path: Path):
    conn = db.open_write(index_path)
    conn.execute("DELETE FROM documents_fts_docsize WHERE id = (SELECT min(id) FROM documents)")
    conn.close()
    code, checks = doctor(cli)
    assert code == 4
    fts = one(checks, "index.fts")
    assert fts["status"] == "fail" and "12 rows for 13 documents" in fts["detail"]
    assert fts["fix"].endswith("&& tansaku update")


@pytest.mark.sqlite_only("checks the SQLite file (its pages, lock, FTS rows, config file)")
def test_vectors_of_other_dimensions_than_the_model_fail(cli, indexed: Path, index_path: Path, tmp_path):
    model = embed_file(tmp_path, 384)
    assert cli("models", "add", "embed", model).exit_code == 0
    conn = db.open_write(index_path)
    conn.execute(
        "INSERT INTO embed_models VALUES ('fp', ?, 'sha', 1, 1, 'plain', 768, 512, '2024-01-01T00:00:00Z')",
        (str(model),),
    )
    conn.execute("INSERT INTO chunk_vectors VALUES ('fp', 'h', 'p', 0, 0, 1, 1, 2)")
    conn.close()
    code, checks = doctor(cli)
    assert code == 4
    dims = one(checks, "vectors.dims")
    assert dims["status"] == "fail"
    assert "768-dim vectors" in dims["detail"] and "384 dims" in dims["detail"]
    assert dims["fix"] == "tansaku embed -f"


def test_an_unreadable_or_non_gguf_model_fails(cli, config_path: Path, tmp_path: Path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model at all")
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(f'[models]\nrerank = "{broken}"\n', encoding="utf-8")
    code, checks = doctor(cli)
    assert code == 4
    rerank = one(checks, "model.rerank")
    assert rerank["status"] == "fail" and "not a GGUF file" in rerank["detail"]
    assert rerank["fix"] == "tansaku models add rerank PATH.gguf"
    if os.geteuid() != 0:  # root reads any file
        model = embed_file(tmp_path, 384)
        config_path.write_text(f'[models]\nrerank = "{model}"\n', encoding="utf-8")
        model.chmod(0)
        try:
            rerank = one(doctor(cli)[1], "model.rerank")
        finally:
            model.chmod(0o644)
        assert rerank["status"] == "fail" and rerank["fix"] == f"chmod u+r {model}"


@pytest.mark.sqlite_only("checks the SQLite file (its pages, lock, FTS rows, config file)")
def test_a_held_writer_lock_is_named(cli, indexed: Path, index_path: Path):
    conn = db.open_write(index_path)
    try:
        with db.write_lock(conn, index_path, command="tansaku update"):
            code, checks = doctor(cli)
    finally:
        conn.close()
    assert code == 0  # a writer at work is not a fault
    lock = one(checks, "index.lock")
    assert lock["status"] == "warn"
    assert f"pid {os.getpid()} (tansaku update" in lock["detail"]
    assert lock["fix"] == f"wait for pid {os.getpid()} to finish (or stop it: kill {os.getpid()})"


@pytest.mark.sqlite_only("checks the SQLite file (its pages, lock, FTS rows, config file)")
def test_config_problems_are_named(cli, indexed: Path, config_path: Path, monkeypatch):
    text = config_path.read_text(encoding="utf-8")
    text = text.replace(
        "[collections.sample]", '[collections.sample]\nupdate = "no-such-program --x"\nmask = "x"'
    )
    text = text.replace("[contexts]", '[contexts]\n"tansaku://gone/sub" = "old"')
    config_path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("TANSAKU_THREADS", "many")
    code, checks = doctor(cli)
    assert code == 4  # the bad thread setting
    assert "[collections.sample] mask" in one(checks, "config.keys")["detail"]
    hook = one(checks, "config.collection.sample.hook")
    assert hook["status"] == "warn" and hook["fix"].startswith("tansaku collection set-update sample")
    assert one(checks, "config.contexts")["fix"] == "tansaku context rm tansaku://gone/sub"
    threads = one(checks, "setting.threads")
    assert (threads["status"], threads["fix"]) == ("fail", "unset TANSAKU_THREADS")


def test_a_config_that_does_not_parse_fails(cli, config_path: Path):
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text("[collections\n", encoding="utf-8")
    code, checks = doctor(cli)
    assert code == 4
    assert one(checks, "config")["status"] == "fail"
    assert one(checks, "config")["fix"].startswith(f"edit {config_path}")


def test_a_native_build_on_a_cpu_without_its_instructions_fails():
    build = system.parse_system_info(
        "CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 |"
    )
    assert build == {"SSE3", "AVX2", "AVX512", "AMX_INT8", "LLAMAFILE"}
    flags = frozenset({"sse3", "avx", "avx2", "fma"})
    assert system.unsupported(build, flags) == ["AMX_INT8", "AVX512"]
    assert system.unsupported(build, flags | {"avx512f", "amx_int8", "amx_tile"}) == []
    assert system.machine_specific(build) == ["AMX_INT8", "AVX512"]
    assert "-DGGML_NATIVE=OFF" in system.PORTABLE_REBUILD


def test_the_device_check_reports_the_rebuild_command(cli, monkeypatch):
    monkeypatch.setattr(
        system, "llama_build", lambda: system.BuildInfo(frozenset({"AVX2", "AMX_INT8"}), "CPU : AMX_INT8 = 1")
    )
    monkeypatch.setattr(system, "cpu_flags", lambda: frozenset({"avx", "avx2"}))
    code, checks = doctor(cli)
    cpu = one(checks, "device.cpu")
    assert code == 4 and cpu["status"] == "fail"
    assert "Illegal instruction" in cpu["detail"] and cpu["fix"] == system.PORTABLE_REBUILD


def test_doctor_renders_in_every_admin_format(snapshot):
    from tansaku.types import DoctorCheck

    checks = [
        DoctorCheck("config", "ok", "/home/me/.config/tansaku/index.toml parses (1 collections)"),
        DoctorCheck("index.fts", "fail", "the keyword index has 12 rows for 13 documents", "tansaku update"),
        DoctorCheck("model.embed", "warn", "embed: not on this machine", "tansaku models pull embed"),
    ]
    assert render(checks, "cli") == snapshot(name="cli")
    assert render(checks, "json") == snapshot(name="json")


def test_deep_loads_each_present_model_and_times_one_call(cli, model: Path, config_path: Path, tmp_path):
    # A GGUF header with no weights passes the file checks but cannot load: only --deep finds it.
    hollow = embed_file(tmp_path, 384)
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(f'[models]\nrerank = "{hollow}"\n', encoding="utf-8")
    code, checks = doctor(cli)
    assert code == 0 and not [name for name in checks if name.endswith(".load")]
    assert one(checks, "model.rerank")["status"] == "ok"
    code, checks = doctor(cli, "--deep")
    assert code == 4
    embed = one(checks, "model.embed.load")
    assert embed["status"] == "ok" and "loaded and answered in" in embed["detail"]
    rerank = one(checks, "model.rerank.load")
    assert rerank["status"] == "fail" and "does not load" in rerank["detail"] and rerank["fix"]
    assert "model.generate.load" not in checks  # absent models are not loaded (a warning above)
