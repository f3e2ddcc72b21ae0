"""`tansaku models pull` end to end against a loopback stand-in for the hub (test/hf_server.py).

Pulls run the real entry point in a subprocess: huggingface_hub reads HF_ENDPOINT and HF_HOME
once, when it is imported, so each pull needs a fresh process to see this test's server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from .conftest import CliResult
from .hf_server import HubServer, tiny_gguf

REPO_ID, FILENAME = "test-org/tiny-GGUF", "tiny.gguf"
HF_REF = f"hf:{REPO_ID}/{FILENAME}"
# Above huggingface_hub's 10 MiB read chunk: a resumed download keeps only whole chunks.
BIG_ELEMENTS = 3_000_000


@pytest.fixture
def needs_hub_client() -> None:
    if find_spec("huggingface_hub") is None:
        reason = "huggingface_hub is not installed (pip install -e '.[models]')"
        if os.environ.get("TANSAKU_REQUIRE_MODELS") == "1":
            pytest.fail(f"TANSAKU_REQUIRE_MODELS=1 but {reason}")
        pytest.skip(reason)


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    return tmp_path / "models"


@pytest.fixture
def hub(tmp_path: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    with HubServer() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        monkeypatch.setenv("TANSAKU_MODEL_DIR", str(model_dir))
        for name in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_HUB_CACHE", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            monkeypatch.delenv(name, raising=False)
            monkeypatch.delenv(name.lower(), raising=False)
        for role in ("EMBED", "GENERATE", "RERANK"):
            monkeypatch.delenv(f"TANSAKU_{role}_MODEL", raising=False)
        yield server


@pytest.fixture
def run() -> Callable[..., CliResult]:
    def run(*args: object) -> CliResult:
        proc = subprocess.run(
            [sys.executable, "-m", "tansaku", *map(str, args)],
            capture_output=True,
            text=True,
            env=dict(os.environ),
            timeout=120,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


def cached(model_dir: Path) -> Path:
    return model_dir / "test-org" / "tiny-GGUF" / FILENAME


def model_files(model_dir: Path) -> list[Path]:
    """Model data on disk, whole or partial (huggingface_hub's own lock and metadata files aside)."""
    found = [*model_dir.rglob("*.gguf"), *model_dir.rglob("*.incomplete")] if model_dir.exists() else []
    return [p for p in found if p.is_file()]


@pytest.mark.usefixtures("needs_hub_client")
def test_pull_puts_the_file_in_the_cache_and_list_and_path_see_it(
    hub: HubServer, run, model_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    data = tiny_gguf(embedding_length=384)
    hub.add(REPO_ID, FILENAME, data)
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)

    result = run("models", "pull", "embed", "--json")
    assert result.exit_code == 0, result.stderr
    pulled = result.json()["pulled"]
    assert [(p["role"], p["local_path"], p["size"], p["dims"]) for p in pulled] == [
        ("embed", str(cached(model_dir)), len(data), 384)
    ]
    assert cached(model_dir).read_bytes() == data
    assert model_files(model_dir) == [cached(model_dir)]  # nothing half-written left in staging
    assert [(r.method, r.path) for r in hub.requests] == [
        ("HEAD", f"/{REPO_ID}/resolve/main/{FILENAME}"),
        ("GET", f"/{REPO_ID}/resolve/main/{FILENAME}"),
    ]

    path = run("models", "path", "embed")
    assert (path.exit_code, path.stdout) == (0, f"{cached(model_dir)}\n")
    listed = {m["role"]: m for m in run("models", "list", "--json").json()["models"]}
    assert (listed["embed"]["present"], listed["embed"]["size"]) == (True, len(data))

    hub.requests.clear()
    again = run("models", "pull", "embed")
    assert again.exit_code == 0, again.stderr
    assert "already present" in again.stdout
    assert hub.requests == []  # a present model is never fetched again


@pytest.mark.usefixtures("needs_hub_client")
def test_pull_without_roles_fetches_every_missing_hf_model(
    hub: HubServer, run, model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    local = tmp_path / "local.gguf"
    local.write_bytes(tiny_gguf(embedding_length=64))
    hub.add(REPO_ID, FILENAME, tiny_gguf(embedding_length=384))
    hub.add("other-org/rerank-GGUF", "sub/rerank.gguf", tiny_gguf(embedding_length=128))
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)
    monkeypatch.setenv("TANSAKU_RERANK_MODEL", "hf:other-org/rerank-GGUF/sub/rerank.gguf")
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", str(local))

    result = run("models", "pull", "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert sorted(p["role"] for p in data["pulled"]) == ["embed", "rerank"]
    assert data["skipped"] == ["generate"]
    assert (model_dir / "other-org" / "rerank-GGUF" / "sub" / "rerank.gguf").is_file()
    assert all(m["present"] for m in run("models", "list", "--json").json()["models"])

    hub.requests.clear()
    nothing = run("models", "pull")
    assert nothing.exit_code == 0
    assert "nothing to download" in nothing.stdout
    assert hub.requests == []


@pytest.mark.usefixtures("needs_hub_client")
def test_an_interrupted_download_resumes_with_a_range_request(
    hub: HubServer, run, model_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    data = tiny_gguf(elements=BIG_ELEMENTS)
    hub.add(REPO_ID, FILENAME, data)
    hub.cut_next_download(after_bytes=11_000_000)
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)

    result = run("models", "pull", "embed")
    assert result.exit_code == 0, result.stderr
    assert cached(model_dir).read_bytes() == data
    first, second = hub.downloads()
    assert (first.range, first.bytes_sent) == (None, 11_000_000)
    assert second.range is not None and second.range.startswith("bytes=")
    resumed_from = int(second.range.removeprefix("bytes=").rstrip("-"))
    assert resumed_from > 0
    assert second.bytes_sent == len(data) - resumed_from < len(data)


@pytest.mark.usefixtures("needs_hub_client")
def test_a_file_that_is_not_gguf_is_rejected_and_removed(
    hub: HubServer, run, model_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    hub.add(REPO_ID, FILENAME, b"<!doctype html><title>Sign in to continue</title>" * 20)
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)

    result = run("models", "pull", "embed", "--json")
    assert result.exit_code == 3
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "MODEL_DOWNLOAD_FAILED"
    assert "not GGUF" in error["message"]
    assert model_files(model_dir) == []
    assert run("models", "path", "embed").exit_code == 1


@pytest.mark.usefixtures("needs_hub_client")
def test_a_file_the_hub_does_not_have_fails_cleanly(hub: HubServer, run, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", "hf:test-org/tiny-GGUF/absent.gguf")
    started = time.monotonic()
    result = run("models", "pull", "embed", "--json")
    assert time.monotonic() - started < 10
    assert result.exit_code == 3
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "MODEL_DOWNLOAD_FAILED"
    assert "404" in error["message"]
    assert "Traceback" not in result.stderr


@pytest.mark.usefixtures("needs_hub_client")
@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:1", "http://no-such-hub.invalid"])
def test_offline_fails_fast_and_names_the_manual_route(
    hub: HubServer, run, endpoint: str, model_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HF_ENDPOINT", endpoint)  # nothing listens there / the name does not resolve
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)
    started = time.monotonic()
    result = run("models", "pull", "embed", "--json")
    elapsed = time.monotonic() - started
    assert elapsed < 5, f"took {elapsed:.1f} s"
    assert result.exit_code == 3
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "OFFLINE"
    assert "cannot reach the model hub" in error["message"]
    assert "tansaku models add" in error["hint"]
    assert f"{endpoint}/{REPO_ID}/resolve/main/{FILENAME}" in error["hint"]
    assert model_files(model_dir) == []

    text = run("models", "pull", "embed")
    assert text.exit_code == 3
    assert "models add" in text.stderr and "Traceback" not in text.stderr


@pytest.mark.usefixtures("needs_hub_client")
def test_hf_hub_offline_is_respected_without_trying(hub: HubServer, run, monkeypatch: pytest.MonkeyPatch):
    hub.add(REPO_ID, FILENAME, tiny_gguf())
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", HF_REF)
    result = run("models", "pull", "embed", "--json")
    assert (result.exit_code, json.loads(result.stderr)["error"]["code"]) == (3, "OFFLINE")
    assert hub.requests == []


def test_pull_of_a_local_file_role_needs_no_network(
    hub: HubServer, cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    local = tmp_path / "local.gguf"
    monkeypatch.setenv("TANSAKU_GENERATE_MODEL", str(local))
    missing = cli("models", "pull", "generate", "--json")
    assert (missing.exit_code, missing.error()["code"]) == (1, "MODEL_MISSING")
    assert "models add generate" in missing.error()["hint"]

    local.write_bytes(tiny_gguf())
    present = cli("models", "pull", "generate")
    assert present.exit_code == 0, present.stderr
    assert "nothing to download" in present.stdout
    assert cli("models", "pull", "summarize").exit_code == 2
    assert hub.requests == []


def test_no_other_command_touches_the_network(
    hub: HubServer, cli, sample: Path, monkeypatch: pytest.MonkeyPatch
):
    # Every role points at the (counting) hub and no model is present: nothing may fetch one.
    hub.add(REPO_ID, FILENAME, tiny_gguf())
    for role in ("EMBED", "GENERATE", "RERANK"):
        monkeypatch.setenv(f"TANSAKU_{role}_MODEL", HF_REF)
    assert cli("collection", "add", sample, "--name", "sample").exit_code == 0
    assert cli("update").exit_code == 0
    assert cli("search", "restore").exit_code == 0
    assert cli("status", "--json").exit_code == 0
    assert cli("get", "sample/guides/backups.md").exit_code == 0
    assert cli("models", "list").exit_code == 0
    assert cli("models", "path", "embed").exit_code == 1
    assert hub.requests == []

    code = (
        "import sys\n"
        "from tansaku.cli.main import main\n"
        "for argv in (['search', 'restore'], ['status'], ['models', 'list'], ['models', 'path', 'embed']):\n"
        "    main(argv)\n"
        "print('huggingface_hub' in sys.modules, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert proc.stderr.strip().splitlines()[-1] == "False"
    assert hub.requests == []
