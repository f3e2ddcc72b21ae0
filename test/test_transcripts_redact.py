"""Secrets redaction: what must go, what must survive, and the counts per kind.

Key-shaped test strings are assembled at run time (prefix + filler) so this file holds nothing a
secret scanner would flag, and the filler makes them plainly fake.
"""

from __future__ import annotations

import random
import string
from dataclasses import replace
from pathlib import Path

import pytest

from tansaku.sources.transcripts import claude, codex
from tansaku.sources.transcripts.redact import redact
from tansaku.sources.transcripts.redact_units import redact_report

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
FAKE = "0" * 24

POSITIVES = [
    ("openai_key", "key is sk-" + "test-" + FAKE, "sk-test-"),
    ("openai_key", "sk-" + "proj-" + "Ab3" + FAKE, "Ab3000"),
    ("anthropic_key", "ANTHROPIC=sk-" + "ant-api03-" + FAKE, "api03"),
    ("github_token", "token ghp" + "_" + "FAKE" + "0" * 32, "FAKE0000"),
    ("github_token", "gho" + "_" + "0" * 36, "gho_"),
    ("github_token", "github" + "_pat_" + "11FAKE" + "0" * 20, "github_pat"),
    ("aws_access_key", "aws AKIA" + "FAKE" + "0" * 12 + " here", "AKIA"),
    ("slack_token", "xox" + "b-" + "fake-" + "0" * 10, "xoxb"),
    ("google_api_key", "AIza" + "Fake" + "0" * 31, "AIza"),
    ("bearer_token", "Authorization: Bearer fake-bearer-" + FAKE, "fake-bearer"),
    ("url_password", "postgres://ann:fake-password-1@db.local:5432/app", "fake-password-1"),
    ("secret_assignment", "export DB_PASSWORD='not-a-real-one'", "not-a-real-one"),
    ("secret_assignment", "MY_SERVICE_TOKEN=abc123fake", "abc123fake"),
    ("secret_assignment", "password: hunter2-fake", "hunter2-fake"),
    ("secret_assignment", '{"client_secret": "fake-secret-value"}', "fake-secret-value"),
    (
        "private_key",
        "-----BEGIN " + "OPENSSH PRIVATE KEY-----\nAAAAfake\n-----END OPENSSH PRIVATE KEY-----",
        "AAAAfake",
    ),
    (
        "jwt",
        "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiJmYWtlIn0" + ".fakeSignature0000",
        "fakeSignature",
    ),
]


@pytest.mark.parametrize(("kind", "text", "secret_part"), POSITIVES)
def test_secrets_are_replaced_by_a_marker_and_counted(kind: str, text: str, secret_part: str):
    result = redact(text)
    assert secret_part not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert result.counts == {kind: 1}


NEGATIVES = [
    "def load(path: str) -> dict:\n    token = tokens[0]\n    return json.loads(path)",
    "MAX_TOKENS = 900\nAPI_KEY_ENV = None",
    "api_key = os.environ['OPENAI_API_KEY']",
    "TOKEN=${GITHUB_TOKEN} ./deploy.sh",
    "export OPENAI_API_KEY=<your-key-here>",
    "see https://example.com:8080/docs/page?q=1#top and ssh git@github.com:ann/proj.git",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main)",
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "session 550e8400-e29b-41d4-a716-446655440000",
    "/usr/lib/python3.11/site-packages/tansaku/sources/transcripts/claude.py",
    "~/Projects2025/MyLongApplicationName/src/main/java/com/example/Main.java",
    "class AbstractSingletonProxyFactoryBean2Manager: pass",
    "pip install scikit-learn; the sk-learn-style-naming-convention is fine",
    "The bearer of bad news arrived; a password is required.",
    "为什么索引会过期？密码不应该出现在日志里。",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_text_survives(text: str):
    result = redact(text)
    assert result.text == text
    assert result.counts == {}


def test_only_the_secret_part_of_a_match_is_replaced():
    assert redact("psql postgres://ann:fake-pw-9@db:5432/app").text == (
        "psql postgres://ann:[REDACTED:url_password]@db:5432/app"
    )
    assert redact("curl -H 'Authorization: Bearer fake-" + FAKE + "' x").text == (
        "curl -H 'Authorization: Bearer [REDACTED:bearer_token]' x"
    )


def test_high_entropy_tokens_are_redacted_but_hex_hashes_are_not():
    rng = random.Random(13)
    alphabet = string.ascii_letters + string.digits + "+/"
    tokens = ["".join(rng.choice(alphabet) for _ in range(40)) for _ in range(200)]
    redacted = sum(redact(f"value {token} end").counts.get("high_entropy", 0) for token in tokens)
    assert redacted >= 195  # the documented miss rate is under 1%
    hex_digest = "".join(rng.choice("0123456789abcdef") for _ in range(64))
    assert redact(hex_digest).counts == {}


def test_counts_add_up_per_kind():
    text = "\n".join(
        [
            "A=sk-" + "test-" + FAKE,
            "B=sk-" + "test-1" + FAKE,
            "DB_PASSWORD=fake-pw-1",
            "ok line",
        ]
    )
    result = redact(text)
    assert result.counts == {"openai_key": 2, "secret_assignment": 1}
    assert result.total == 3
    assert result.text.endswith("ok line")


MAIN = FIXTURES / "claude" / "-home-ann-proj" / "5b1f0c2e-7d4a-4c1b-9e3f-2a6d8c0b1e47.jsonl"


def fixture_reports():
    rollout = next((FIXTURES / "codex" / "sessions").rglob("rollout-*7c9e6679*.jsonl"))
    return [claude.parse(MAIN.read_bytes(), str(MAIN)), codex.parse(rollout.read_bytes(), str(rollout))]


def test_fixture_tool_output_secrets_are_redacted_and_the_text_around_them_kept():
    totals: dict[str, int] = {}
    redacted_text = []
    for report in fixture_reports():
        clean = redact_report(report)
        for kind, count in clean.turn_counts.items():
            totals[kind] = totals.get(kind, 0) + count
        redacted_text.extend(turn.text for turn in clean.report.turns)
    joined = "\n".join(redacted_text)
    assert totals == {
        "openai_key": 2,
        "github_token": 1,
        "url_password": 1,
        "aws_access_key": 1,
        "slack_token": 1,
        "bearer_token": 1,
    }
    for secret in ("sk-test-", "ghp_", "fake-password-123", "AKIAFAKE", "xoxb-", "fake-bearer-token"):
        assert secret not in joined
    for kept in (
        "EDITOR=vim",
        "LOG_LEVEL=debug",
        "OPENAI_API_KEY=",
        "db.local:5432/app",
        "Why does the index",
    ):
        assert kept in joined


def test_a_run_prompt_is_redacted_in_every_copy_and_counted_once():
    report = claude.parse(MAIN.read_bytes(), str(MAIN))
    first = next(t for t in report.turns if t.kind == "text" and t.role == "user")
    secret_prompt = first.run_prompt + " my key is sk-" + "test-" + FAKE
    turn = replace(first, text=secret_prompt, run_prompt=secret_prompt)
    run = replace(report.runs[0], prompt=secret_prompt)
    clean = redact_report(replace(report, turns=(turn,), runs=(run,)))
    (cleaned,) = clean.report.turns
    assert "sk-test-" not in cleaned.text and "sk-test-" not in cleaned.run_prompt
    assert "sk-test-" not in clean.report.runs[0].prompt
    assert clean.turn_counts == {"openai_key": 1}
