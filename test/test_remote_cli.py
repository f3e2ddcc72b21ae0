"""Endpoint models through the CLI against a real loopback server (stdlib, scripted): `models
add|list|path`, `embed` and its summary, consent before text leaves the machine, `status`,
`doctor`, `vsearch`, and each endpoint failure as its own error with its exit code."""

from __future__ import annotations

import socket
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from tansaku.models import registry

from .openai_server import Script, ScriptedServer, free_port

pytestmark = pytest.mark.usefixtures("no_model_env")


def _user_models(config_path: Path) -> dict:
    return tomllib.loads(registry.user_models_path(config_path).read_text(encoding="utf-8"))


def test_models_add_saves_the_reference_and_no_key(cli: Callable, config_path: Path, monkeypatch):
    monkeypatch.setenv("TANSAKU_API_KEY", "sk-never-stored")
    result = cli("models", "add", "embed", "http://127.0.0.1:8080/v1/#all-minilm")
    assert result.exit_code == 0, result.stderr
    assert "now uses http://127.0.0.1:8080/v1#all-minilm in every index" in result.stdout
    assert "TANSAKU_API_KEY" in result.stdout
    saved = registry.user_models_path(config_path).read_text(encoding="utf-8")
    assert tomllib.loads(saved)["models"]["embed"] == "http://127.0.0.1:8080/v1#all-minilm"
    assert "sk-never-stored" not in saved
    listed = cli("models", "list", "--json").json()
    embed = next(m for m in listed["models"] if m["role"] == "embed")
    assert embed["endpoint"] == {
        "base_url": "http://127.0.0.1:8080/v1",
        "model": "all-minilm",
        "loopback": True,
    }
    assert embed["local_path"] is None and embed["present"] is True
    text = cli("models", "list").stdout
    assert (
        "embed     remote" in text.replace("  ", " ").replace("embed remote", "embed     remote")
        or " remote " in text
    )
    assert "served at http://127.0.0.1:8080/v1, this machine" in text
    path = cli("models", "path", "embed", "--json")
    assert path.exit_code == 1 and path.error()["code"] == "MODEL_MISSING"
    assert "there is no local file" in path.error()["message"]


def test_models_add_refuses_a_key_in_the_url(cli: Callable, config_path: Path):
    result = cli("models", "add", "embed", "https://me:sk-secret@api.example.org/v1#m", "--json")
    assert result.exit_code == 2 and result.error()["code"] == "USAGE"
    assert "sk-secret" not in result.stderr
    assert not registry.user_models_path(config_path).exists()


def test_a_bad_endpoint_in_the_config_is_config_invalid(cli: Callable, config_path: Path):
    registry.user_models_path(config_path).parent.mkdir(parents=True, exist_ok=True)
    registry.user_models_path(config_path).write_text('[models]\nembed = "http://127.0.0.1:8080/v1"\n')
    result = cli("models", "list", "--json")
    assert result.exit_code == 2 and result.error()["code"] == "CONFIG_INVALID"
    assert "names no model" in result.error()["message"]


def test_embed_through_the_endpoint_reports_what_it_sent(
    cli: Callable, indexed: Path, remote_embed: str, server: ScriptedServer
):
    result = cli("embed")
    assert result.exit_code == 0, result.stderr
    assert f"model: {remote_embed} (plain prompts)" in result.stdout
    assert "8 dimensions" in result.stdout
    sent = server.posts("/v1/embeddings")
    texts = sum(len(r.body["input"]) for r in sent)
    assert f"sent {texts} texts (" in result.stdout
    assert (
        f"to http://127.0.0.1:{server.port}/v1 (this machine) in {len(server.log)} requests;" in result.stdout
    )
    assert " tokens; " in result.stdout and "s waiting on it" in result.stdout
    again = cli("embed", "--json").json()
    # Nothing pending: only the check that the model is served and the probe that learns the
    # dimensions are sent.
    assert again["remote"]["requests"] == 2 and again["remote"]["texts"] == 1
    assert again["remote"]["loopback"] is True
    assert sum(c["embedded"] for c in again["collections"]) == 0
    status = cli("status").stdout
    where = f"http://127.0.0.1:{server.port}/v1"
    assert f"embedding model: fake-embed at {where}, an endpoint on this machine, 8 dims" in status
    found = cli("vsearch", "restore a snapshot", "--json")
    assert found.exit_code == 0, found.stderr
    assert found.json()["results"]
    assert server.posts("/v1/embeddings")[-1].body["input"] == ["restore a snapshot"]


def test_switching_the_served_model_marks_vectors_stale(
    cli: Callable, indexed: Path, server: ScriptedServer, monkeypatch
):
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", server.url())
    assert cli("embed").exit_code == 0
    other = ScriptedServer(model="other-embed", dims=8)
    try:
        monkeypatch.setenv("TANSAKU_EMBED_MODEL", other.url())
        status = cli("status", "--json").json()
        row = next(c for c in status["collections"] if c["collection"]["name"] == "sample")
        assert row["vectors"] == 0 and row["stale_vectors"] > 0, row
        assert cli("embed").exit_code == 0
        row = next(
            c for c in cli("status", "--json").json()["collections"] if c["collection"]["name"] == "sample"
        )
        assert row["vectors"] > 0 and row["stale_vectors"] == 0
    finally:
        other.close()


def test_vectors_of_new_dimensions_at_query_time_are_endpoint_dimensions(
    cli: Callable, indexed: Path, remote_embed: str, server: ScriptedServer
):
    assert cli("embed").exit_code == 0
    server.dims = 12  # the server now serves another model under the same name
    result = cli("vsearch", "snapshot", "--json")
    assert result.exit_code == 3
    assert result.error()["code"] == "ENDPOINT_DIMENSIONS"
    assert (
        "answers 12-dimension vectors for 'fake-embed', but the index holds that model's vectors at 8"
        in (result.error()["message"])
    )
    assert "tansaku embed" in result.error()["hint"]


def test_embed_stops_with_the_endpoints_error(
    cli: Callable, indexed: Path, monkeypatch, server: ScriptedServer
):
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", f"http://127.0.0.1:{free_port()}/v1#m")
    down = cli("embed", "--json")
    assert down.exit_code == 3 and down.error()["code"] == "ENDPOINT_UNREACHABLE"
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", server.url(model="missing"))
    missing = cli("embed", "--json")
    assert missing.exit_code == 1 and missing.error()["code"] == "ENDPOINT_MODEL_MISSING"
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", server.url())
    server.then(Script(), Script(status=429, headers={"Retry-After": "900"}, body={"error": "quota"}))
    limited = cli("embed", "--json")
    assert limited.exit_code == 3 and limited.error()["code"] == "ENDPOINT_RATE_LIMITED"
    # Every chunk was left pending (not recorded as failed): the next run does them.
    assert cli("embed", "--json").exit_code == 0
    monkeypatch.setenv("TANSAKU_REMOTE_TIMEOUT", "0.3")
    server.then(Script(pause=2))
    slow = cli("vsearch", "snapshot", "--json")
    assert slow.exit_code == 3 and slow.error()["code"] == "ENDPOINT_TIMEOUT"


def _outward_address() -> str | None:
    """This machine's address on its network (not loopback), if it has one."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))  # no packet is sent: this only picks a route
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


def test_the_first_embed_to_another_machine_asks_first(
    cli: Callable, indexed: Path, config_path: Path, monkeypatch
):
    address = _outward_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to stand for another machine")
    server = ScriptedServer(host="0.0.0.0")
    try:
        reference = server.url(host=address)
        assert cli("models", "add", "embed", reference).exit_code == 0
        asked = cli("embed", "--json")
        assert asked.exit_code == 2
        error = asked.error()
        assert error["code"] == "REMOTE_CONSENT_NEEDED"
        assert f"to http://{address}:{server.port}, another machine" in error["message"]
        assert "after redaction" in error["message"] and "--yes" in error["hint"]
        assert server.log == []  # nothing was sent
        agreed = cli("embed", "--yes")
        assert agreed.exit_code == 0, agreed.stderr
        assert "(another machine)" in agreed.stdout
        assert _user_models(config_path)["models"]["remote_ok"] == [f"http://{address}:{server.port}"]
        assert cli("embed").exit_code == 0  # recorded: not asked again
        doctor = cli("doctor", "--json").json()
        check = next(c for c in doctor if c["check"] == "model.embed")
        assert check["status"] == "ok" and "8 dims" in check["detail"]
    finally:
        server.close()


def test_a_config_flag_agrees_for_every_endpoint(cli: Callable, indexed: Path, config_path: Path):
    address = _outward_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to stand for another machine")
    server = ScriptedServer(host="0.0.0.0")
    try:
        path = registry.user_models_path(config_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f'[models]\nembed = "{server.url(host=address)}"\nremote_ok = true\n', encoding="utf-8"
        )
        assert cli("embed").exit_code == 0
    finally:
        server.close()


def test_doctor_checks_the_endpoint(cli: Callable, indexed: Path, server: ScriptedServer, monkeypatch):
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", server.url())
    assert cli("embed").exit_code == 0

    def embed_check() -> dict:
        checks = cli("doctor", "--json").json()
        return next(c for c in checks if c["check"] == "model.embed")

    ok = embed_check()
    assert ok["status"] == "ok" and "answers, 8 dims" in ok["detail"]
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", server.url(model="missing"))
    missing = embed_check()
    assert (
        missing["status"] == "fail"
        and "does not serve 'missing' (it serves: fake-embed)" in missing["detail"]
    )
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", server.url())
    server.dims = 16
    changed = embed_check()
    assert changed["status"] == "fail" and "have 8: the server's model changed" in changed["detail"]
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", f"http://127.0.0.1:{free_port()}/v1#m")
    down = embed_check()
    assert down["status"] == "fail" and "[ENDPOINT_UNREACHABLE]" in down["detail"]


def test_an_eval_run_records_an_endpoint_model_by_its_reference(remote_embed: str):
    from tansaku.api import Tansaku
    from tansaku.eval.harness import _models_record

    record = _models_record(Tansaku(), ["vsearch"])
    base = remote_embed.split("#")[0]
    assert record == {"embed": {"reference": remote_embed, "endpoint": base}}


def test_a_text_the_server_refuses_costs_that_chunk_only(
    cli: Callable, indexed: Path, remote_embed: str, server: ScriptedServer
):
    (indexed / "huge.md").write_text("# Huge\n\nUNEMBEDDABLE text the server refuses.\n", encoding="utf-8")
    assert cli("update").exit_code == 0
    server.too_long = "UNEMBEDDABLE"
    result = cli("embed", "--json")
    assert result.exit_code == 4, result.stderr
    sample = result.json()["collections"][0]
    assert sample["failed"] == [
        "huge.md#0: HttpStatus: "
        f"http://127.0.0.1:{server.port}/v1/embeddings answered HTTP 400:"
        ' {"error": {"message": "the input is longer than the context", "code": "context_length_exceeded"}}'
    ]
    assert sample["embedded"] == sample["pending"] - 1


def test_the_key_comes_from_the_variable_the_config_names_else_tansaku_api_key(
    cli: Callable, indexed: Path, config_path: Path, server: ScriptedServer, monkeypatch
):
    path = registry.user_models_path(config_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[models]\nembed = "{server.url()}"\nembed_api_key_env = "GPU_BOX_KEY"\n', encoding="utf-8"
    )
    monkeypatch.setenv("TANSAKU_API_KEY", "sk-everyone")
    monkeypatch.setenv("GPU_BOX_KEY", "sk-embed-only")
    assert cli("embed").exit_code == 0
    assert {r.headers.get("Authorization") for r in server.log} == {"Bearer sk-embed-only"}
    assert "sk-embed-only" not in path.read_text(encoding="utf-8")
    monkeypatch.delenv("GPU_BOX_KEY")
    assert cli("doctor", "--json").exit_code in (0, 4)
    assert server.log[-1].headers.get("Authorization") == "Bearer sk-everyone"


@pytest.mark.usefixtures("indexed")
def test_the_mcp_instructions_name_a_served_model_without_asking_it(
    remote_embed: str, server: ScriptedServer
):
    from tansaku.api import Tansaku
    from tansaku.serve.summary import instructions

    text = instructions(Tansaku())
    assert "embed remote (fake-embed at 127.0.0.1)" in text
    assert server.log == []


def test_a_model_embedded_again_at_new_dimensions_is_searched_at_those(
    cli: Callable, indexed: Path, remote_embed: str, server: ScriptedServer
):
    assert cli("embed").exit_code == 0
    server.dims = 12  # the server's model changed under the same name; embed redoes the vectors
    again = cli("embed", "--json")
    assert again.exit_code == 0 and again.json()["dims"] == 12
    status = cli("status").stdout
    assert "an endpoint on this machine, 12 dims" in status
    found = cli("vsearch", "snapshot", "--json")
    assert found.exit_code == 0, found.stderr
    row = cli("status", "--json").json()["collections"][0]
    assert row["vectors"] == row["chunks"] and row["stale_vectors"] == 0
    # And back: the first model's vectors are still there, and are the ones searched again.
    server.dims = 8
    assert cli("embed", "--json").json()["collections"][0]["embedded"] == 0
    back = cli("vsearch", "snapshot", "--json")
    assert back.exit_code == 0, back.stderr
    assert len(server.posts("/v1/embeddings")[-1].body["input"]) == 1
    doctor = {c["check"]: c for c in cli("doctor", "--json").json()}
    assert doctor["model.embed"]["status"] == "ok", doctor["model.embed"]
