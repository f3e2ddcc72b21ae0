"""Secrets redaction for transcript text, applied before anything is indexed.

Tool output in agent sessions routinely contains credentials (``env``, ``cat .env``, curl
commands). Each rule replaces what it finds with ``[REDACTED:<kind>]`` and is counted per kind.
Rules run from the most specific to the most general, so a key with a known shape is named by its
provider rather than caught by the entropy rule.

Decisions:
- Hex-only strings (git SHAs, SHA-256 digests, UUIDs) are never redacted by the entropy rule:
  transcripts are full of them and they are what people search for. A hex secret is still caught
  when it sits in a ``KEY=value`` line, a bearer header or a URL password.
- The entropy rule needs 32+ characters mixing upper case, lower case and digits, at least
  ``ENTROPY_BITS_PER_CHAR`` bits of Shannon entropy per character, and not made of words (runs of
  3+ lower-case letters covering ``MAX_WORDISH_SHARE`` of it: CamelCase names, relative paths), nor
  the tail of a path or file name (after ``/``, ``~`` or ``.``). Under 1% of random 32-64
  character base64 tokens escape this rule (measured); it backs up the shaped rules.
- ``key = value`` in any case is only redacted at the start of a line with a bare value (dotenv,
  INI, YAML), so code such as ``token = tokens[0]`` survives; upper-case ``KEY=value`` (shell
  and environment style) is redacted anywhere; JSON ``"password": "..."`` pairs need a quoted value.
- A value that is a reference (``$TOKEN``, ``${TOKEN}``, ``<your-key>``) or already redacted is
  kept.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from .secret_shapes import REPORTED_KIND, SHAPED_RULES, VALUE_TESTS, Rule, decoded_text

ENTROPY_MIN_LENGTH = 32
ENTROPY_BITS_PER_CHAR = 4.0


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True)
class Redaction:
    text: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


# Secret-looking names: the part of a variable or key name that says it holds a secret.
_SECRET_NAME = (
    r"(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|AUTH_?KEY)"
)
# What the lower-cased text must hold for a secret-named assignment to be possible.
_NAME_WORDS = ("token", "secret", "pass", "key", "credential")
_BOUNDARY = r"(?<![A-Za-z0-9_\-])"
_END = r"(?![A-Za-z0-9_\-])"
_NOT_A_REFERENCE = r"(?![$<\[*])"

_RULES: list[Rule] = [
    Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|[A-Za-z0-9+/=\s\\:,-]*)",
            re.S,
        ),
        0,
        ("private key",),
    ),
    Rule("anthropic_key", re.compile(_BOUNDARY + r"sk-ant-[A-Za-z0-9_\-]{20,}" + _END), 0, ("sk-ant-",)),
    # OpenAI: sk-, sk-proj-, sk-svcacct-...; the tail must hold a digit so kebab-case words that
    # happen to start with "sk-" are not keys.
    Rule(
        "openai_key",
        re.compile(_BOUNDARY + r"sk-(?=[A-Za-z_\-]*[0-9])[A-Za-z0-9_\-]{20,}" + _END),
        0,
        ("sk-",),
    ),
    Rule(
        "github_token",
        re.compile(_BOUNDARY + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})" + _END),
        0,
        ("gh", "github_pat_"),
    ),
    Rule(
        "aws_access_key",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),
        0,
        ("akia", "asia"),
    ),
    Rule("slack_token", re.compile(_BOUNDARY + r"xox[abprs]-[A-Za-z0-9\-]{10,}" + _END), 0, ("xox",)),
    Rule("google_api_key", re.compile(_BOUNDARY + r"AIza[0-9A-Za-z_\-]{35}" + _END), 0, ("aiza",)),
    Rule(
        "jwt",
        re.compile(_BOUNDARY + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}" + _END),
        0,
        ("eyj",),
    ),
    Rule(
        "bearer_token",
        re.compile(
            r"(?i)\b(?:authorization:\s*(?:bearer|token)|bearer)\s+"
            + _NOT_A_REFERENCE
            + r"([A-Za-z0-9._~+/=\-]{16,})"
        ),
        1,
        ("bearer",),
    ),
    Rule("basic_auth", re.compile(r"(?i)\bauthorization:\s*basic\s+([A-Za-z0-9+/=]{8,})"), 1, ("basic",)),
    # scheme://user:password@host (or redis://:password@host): only the password goes.
    Rule(
        "url_password",
        re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s:/@]*:" + _NOT_A_REFERENCE + r"([^\s@/]+)@"),
        1,
        ("://",),
    ),
    # Shell and environment style, anywhere: OPENAI_API_KEY=..., export DB_PASSWORD="...".
    Rule(
        "secret_assignment",
        re.compile(
            r"(?<![A-Za-z0-9_])[A-Z0-9_]*"
            + _SECRET_NAME
            + r"[A-Z0-9_]*\s*=\s*[\"']?"
            + _NOT_A_REFERENCE
            + r"([^\s\"'`]{3,})"
        ),
        1,
        _NAME_WORDS,
    ),
    # dotenv, INI, YAML at the start of a line, any case, bare value to the end of the line.
    Rule(
        "secret_assignment",
        re.compile(
            r"(?im)^[ \t]*(?:export[ \t]+)?[a-z0-9_.\-]*"
            + _SECRET_NAME
            + r"[a-z0-9_]*[ \t]*[=:][ \t]*[\"']?"
            + _NOT_A_REFERENCE
            + r"([^\s\"'()\[\]{},;]{3,})[\"']?[ \t]*$"
        ),
        1,
        _NAME_WORDS,
    ),
    # JSON and Python literals: "password": "...", 'api_key': '...'.
    Rule(
        "secret_assignment",
        re.compile(
            r"(?i)([\"'])[a-z0-9_.\-]*"
            + _SECRET_NAME
            + r"[a-z0-9_]*\1\s*:\s*([\"'])"
            + _NOT_A_REFERENCE
            + r"([^\"'\s]{3,})\2"
        ),
        3,
        _NAME_WORDS,
    ),
    # More shapes (secret_shapes.py), after the ones above so those name what they find.
    *SHAPED_RULES,
]

_ENTROPY_CANDIDATE = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/=_\-]{" + str(ENTROPY_MIN_LENGTH) + ",}")
_HEX_LIKE = re.compile(r"[0-9a-fA-F\-]+")
_WORDISH_RUN = re.compile(r"[A-Z]?[a-z]{3,}")
# A CamelCase or snake_case name made of words (AbstractProxyFactoryBean2) or a relative path
# (Users/AnnSmith/Projects2025) has high entropy too; random keys rarely hold long runs of
# lower-case letters (in 40 random base64 characters they cover about 15%).
MAX_WORDISH_SHARE = 0.6


# Long base64 that is not secret by what precedes it: npm/SRI digests (sha512-...), data: URIs
# (;base64,...), SSH public keys (ssh-ed25519 AAAA...).
_DIGEST_PREFIX = re.compile(r"sha(?:1|256|384|512)-")
_PUBLIC_CONTEXT = re.compile(
    r"(?:;base64,|(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com) )$"
)


def shannon_entropy(text: str) -> float:
    counts = Counter(text)
    length = len(text)
    return -sum(count / length * math.log2(count / length) for count in counts.values())


def _looks_like_secret(token: str, text: str, start: int) -> bool:
    core = token.rstrip("=")
    if len(core) < ENTROPY_MIN_LENGTH or _HEX_LIKE.fullmatch(core):
        return False
    if not (
        any(c.isupper() for c in core) and any(c.islower() for c in core) and any(c.isdigit() for c in core)
    ):
        return False
    if start > 0 and text[start - 1] in "/~.":
        return False  # the tail of a path or a file name
    if _DIGEST_PREFIX.match(core) or _PUBLIC_CONTEXT.search(text, max(0, start - 24), start):
        return False  # a subresource-integrity digest, a data: URI, an SSH public key
    letters = core.replace("/", "")
    wordish = sum(len(run) for run in _WORDISH_RUN.findall(core))
    if wordish / max(len(letters), 1) >= MAX_WORDISH_SHARE:
        return False  # a name or a relative path made of words
    return shannon_entropy(core) >= ENTROPY_BITS_PER_CHAR


# Values of secret-named keys that are plainly not secrets: numbers (MAX_TOKENS = 900), flags,
# and code (API_KEY=os.getenv(...)).
_NOT_SECRET_VALUE = re.compile(r"(?i)[0-9.]+|true|false|none|null|yes|no|.*[()].*")


def _is_assigned_secret(value: str) -> bool:
    return not _NOT_SECRET_VALUE.fullmatch(value)


_VALUE_TESTS: dict[str, Callable[[str], bool]] = {"secret_assignment": _is_assigned_secret, **VALUE_TESTS}


def _replace_group(kind: str, group: int, tally: Counter[str]) -> Callable[[re.Match[str]], str]:
    test = _VALUE_TESTS.get(kind)
    reported = REPORTED_KIND.get(kind, kind)

    def substitute(match: re.Match[str]) -> str:
        if test is not None and not test(match.group(group)):
            return match.group(0)
        tally[reported] += 1
        if group == 0:
            return marker(reported)
        whole = match.group(0)
        start, end = match.start(group) - match.start(0), match.end(group) - match.start(0)
        return whole[:start] + marker(reported) + whole[end:]

    return substitute


def redact(text: str) -> Redaction:
    tally: Counter[str] = Counter()
    lowered = text.lower()
    for rule in _RULES:
        kind, pattern, group, triggers = rule
        if triggers and not any(trigger in lowered for trigger in triggers):
            continue
        text = pattern.sub(_replace_group(kind, group, tally), text)

    def entropy_substitute(match: re.Match[str]) -> str:
        if not _looks_like_secret(match.group(0), match.string, match.start()):
            return match.group(0)
        payload = decoded_text(match.group(0))
        if payload is not None and not redact(payload).counts:
            return match.group(0)  # base64 of harmless text (what it says holds no secret)
        tally["high_entropy"] += 1
        return marker("high_entropy")

    text = _ENTROPY_CANDIDATE.sub(entropy_substitute, text)
    return Redaction(text, dict(tally))
