"""Secret shapes beyond the first provider keys: more providers, headers, command-line flags and
passwords written in prose, each with the test its value must pass to be redacted.

Measured on evals/redaction/labelled.jsonl (evals/RESULTS-redaction.md): these rules are what
took our recall past detect-secrets' keyword and entropy plugins without a dependency.

Decisions:
- A provider's key is redacted by its prefix and length alone (``glpat-``, ``hf_``, ``npm_``...).
- A value given to a secret-named flag, header, XML element or keyword-argument is redacted unless
  it is plainly not a secret: a reference (``$TOKEN``, ``<token>``, ``{{ var }}``), a metavar in
  help text (``--password PASSWORD``), a number or a flag word, or code (``form.password``,
  ``password=password``).
- A password in prose (``the db password is CorrectHorseBattery9``) is redacted only when the
  word after it looks like a password: six or more characters holding a digit and a letter, or a
  letter and a symbol, or capitals after the first letter. ``the password is incorrect`` and
  ``the token is expired`` survive. Without a verb (``the password ZebraCrossing88``) the value
  must hold letters and digits, eight or more, and not be hex (a hash or a uuid).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import NamedTuple


class Rule(NamedTuple):
    kind: str
    pattern: re.Pattern[str]
    group: int  # the group to replace, or 0 for the whole match
    # Lower-case strings one of which the text must hold for the rule to be tried at all: most
    # turns hold none, and a substring test is much cheaper than a failed regex scan.
    triggers: tuple[str, ...] = ()


_BOUNDARY = r"(?<![A-Za-z0-9_\-])"
_END = r"(?![A-Za-z0-9_\-])"
_NOT_A_REFERENCE = r"(?![$<\[*{%(])"
# A value in a command or a sentence: up to the first space, quote or closing bracket.
_VALUE = r"([^\s\"'`,;()<>\[\]{}]{3,})"

# (kind, shape, the lower-case literal the shape holds)
_PROVIDERS: list[tuple[str, str, str]] = [
    ("gitlab_token", r"glpat-[A-Za-z0-9_\-]{20,}", "glpat-"),
    ("digitalocean_token", r"do[por]_v1_[a-f0-9]{64}", "_v1_"),
    ("databricks_token", r"dapi[a-f0-9]{32}(?:-[0-9])?", "dapi"),
    ("stripe_key", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", "k_"),
    ("sendgrid_key", r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", "sg."),
    ("npm_token", r"npm_[A-Za-z0-9]{36}", "npm_"),
    ("pypi_token", r"pypi-AgE[A-Za-z0-9_\-]{50,}", "pypi-"),
    ("huggingface_token", r"hf_[A-Za-z0-9]{30,}", "hf_"),
    ("vault_token", r"hv[sb]\.[A-Za-z0-9_\-]{20,}", "hv"),
    ("shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", "shp"),
    ("linear_key", r"lin_api_[A-Za-z0-9]{30,}", "lin_api_"),
    ("telegram_bot_token", r"[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}", ":aa"),
    ("mailgun_key", r"key-[a-f0-9]{32}", "key-"),
]

_FLAG_NAME = (
    r"(?:password|passwd|pass|token|secret|api[-_]?key|auth[-_]?token|access[-_]?token|client[-_]secret)"
)
_HEADER_NAME = (
    r"(?:x-[a-z0-9-]*)?(?:api[-_]?key|apikey|auth[-_]?token|access[-_]?token|private-token|[a-z]+-token)"
)
_PROSE_NAME = r"(?:password|passphrase|passwd|passcode|pw|pwd|api[ _-]?key|access key|token|secret(?: key)?)"

_PASSWORD_WORDS = ("pass", "pw", "token", "secret", "key")

SHAPED_RULES: list[Rule] = [
    *(Rule(kind, re.compile(_BOUNDARY + shape + _END), 0, (literal,)) for kind, shape, literal in _PROVIDERS),
    Rule(
        "slack_webhook",
        re.compile(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9]+/[A-Za-z0-9]+/([A-Za-z0-9]{16,})"
        ),
        1,
        ("hooks.slack",),
    ),
    # ?access_token=...&: the value only.
    Rule(
        "url_token",
        re.compile(
            r"(?i)[?&](?:access_token|auth_token|api_?key|apikey|token|client_secret|password|secret)="
            + _NOT_A_REFERENCE
            + r"([^&\s#\"'<>]{8,})"
        ),
        1,
        ("=",),
    ),
    # X-API-Key: ..., PRIVATE-TOKEN: ..., "x-api-key": "..." (a header anywhere in a line).
    Rule(
        "api_key_header",
        re.compile(
            r"(?i)(?:api[-_]?key|apikey|auth[-_]?token|access[-_]?token|-token)[\"']?\s*:\s*[\"']?"
            + _NOT_A_REFERENCE
            + r"([A-Za-z0-9._~+/=\-]{8,})"
        ),
        1,
        ("key", "token"),
    ),
    # password='...' and api_key = "..." in code, any case, anywhere: the quoted value. The name
    # ends there or at a separator (db_password_2, not tokenizer = "bert-base").
    Rule(
        "secret_assignment",
        re.compile(
            r"(?i)(?:password|passwd|passphrase|secret|token|api_?key|access_?key|private_?key)"
            r"(?:[_-]\w*)?\s*=\s*([\"'])" + _NOT_A_REFERENCE + r"([^\"'\s]{3,})\1"
        ),
        2,
        _PASSWORD_WORDS,
    ),
    # <password>...</password>, <apiKey>...</apiKey>
    Rule(
        "secret_assignment",
        re.compile(
            r"(?i)<([\w.-]*(?:password|passwd|secret|token|api_?key|apikey)[\w.-]*)>"
            + _NOT_A_REFERENCE
            + r"([^<\s]{3,})</\1>"
        ),
        2,
        ("</",),
    ),
    # --password=..., --token ...
    Rule(
        "cli_password",
        re.compile(
            r"(?i)(?<![\w-])--?" + _FLAG_NAME + r"(?:=|[ \t]+)[\"']?" + _NOT_A_REFERENCE + r"(?!-)" + _VALUE
        ),
        1,
        _PASSWORD_WORDS,
    ),
    # mysql -pSECRET, sshpass -p SECRET, docker login -p SECRET, curl -u user:SECRET
    Rule(
        "cli_password",
        re.compile(
            r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]*?[ \t]-p[\"']?" + _NOT_A_REFERENCE + _VALUE
        ),
        1,
        ("mysql", "mariadb"),
    ),
    Rule(
        "cli_password",
        re.compile(
            r"\b(?:sshpass|(?:docker|podman|helm[ \t]+registry|oras)[ \t]+login|twine[ \t]+upload)\b"
            r"[^\n|;&]*?[ \t]-p[ \t]+[\"']?" + _NOT_A_REFERENCE + _VALUE
        ),
        1,
        ("sshpass", "login", "twine"),
    ),
    Rule(
        "cli_password",
        re.compile(
            r"\b(?:curl|wget|http)\b[^\n|;&]*?[ \t](?:-u|--user)[ \t=]+[\"']?[^\s:\"'$]+:"
            + _NOT_A_REFERENCE
            + _VALUE
        ),
        1,
        ("-u", "--user"),
    ),
    # password=... in a connection string or an option list (host=db password=x dbname=app).
    Rule(
        "cli_password",
        re.compile(r"(?i)(?<![\w.\-])(?:password|passwd|pwd)=" + _NOT_A_REFERENCE + r"(?![\"'])" + _VALUE),
        1,
        ("pass", "pwd"),
    ),
    # Prose: "the db password is X", "Password: X", "wifi password = X", "密码是 X".
    Rule(
        "prose_password",
        re.compile(
            r"(?i)\b"
            + _PROSE_NAME
            + r"(?:[ \t]+(?:is|was|are|were)[ \t]*:?|[ \t]*[:=])[ \t]*[\"'`]?"
            + _NOT_A_REFERENCE
            + _VALUE
        ),
        1,
        _PASSWORD_WORDS,
    ),
    Rule(
        "prose_password_bare",
        re.compile(r"(?i)\b(?:password|passphrase|passwd|passcode)[ \t]+" + _NOT_A_REFERENCE + _VALUE),
        1,
        ("pass",),
    ),
    Rule(
        "prose_password",
        re.compile(r"(?:密码|口令|密钥|令牌)[ \t]*(?:是|为|：|:)[ \t]*([^\s，。、；,;\"'`]{3,})"),
        1,
        ("密码", "口令", "密钥", "令牌"),
    ),
]

_NUMBER_OR_FLAG = re.compile(r"(?i)[0-9.]+|true|false|none|null|nil|yes|no|on|off|required|optional")
_METAVAR = re.compile(r"[A-Z][A-Z0-9_]*")
_CODE = re.compile(r"[a-z_][a-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+")
_HEX = re.compile(r"[0-9a-fA-F\-]+")


def _strip(value: str) -> str:
    # Sentence punctuation after a word is not part of it; "!" and "?" often are part of a password.
    return value.rstrip(".:")


def _given_value(value: str) -> bool:
    """A value given to a secret-named flag, header or key: a secret unless plainly not one."""
    value = _strip(value)
    return not (
        len(value) < 3
        or _NUMBER_OR_FLAG.fullmatch(value)
        or _METAVAR.fullmatch(value)
        or _CODE.fullmatch(value)
    )


def looks_like_password(value: str) -> bool:
    value = _strip(value)
    if len(value) < 6:
        return False
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    symbols = any(not c.isalnum() and c not in "-_./" for c in value)
    inner_capitals = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    return letters and (digits or symbols or inner_capitals)


def _bare_password(value: str) -> bool:
    value = _strip(value)
    return (
        len(value) >= 8
        and any(c.isalpha() for c in value)
        and any(c.isdigit() for c in value)
        and not _HEX.fullmatch(value)
    )


# Per kind, whether a matched value is to be redacted (kinds not named here always are).
VALUE_TESTS: dict[str, Callable[[str], bool]] = {
    "api_key_header": _given_value,
    "cli_password": _given_value,
    "prose_password": looks_like_password,
    "prose_password_bare": _bare_password,
}
# What a kind is reported as (the bare prose form is one kind for the user).
REPORTED_KIND = {"prose_password_bare": "prose_password"}


def decoded_text(token: str) -> str | None:
    """The text ``token`` is base64 of, when it is ordinary text (a harmless payload rather than
    a key): printable UTF-8 with the spaces of prose or the quotes of JSON. Else None."""
    core = token.rstrip("=")
    padded = core + "=" * (-len(core) % 4)
    altchars = b"-_" if ("-" in core or "_" in core) else None
    try:
        text = base64.b64decode(padded, altchars=altchars, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if len(text) < 12 or sum(1 for c in text if c.isprintable()) / len(text) < 0.97:
        return None
    return text if (" " in text or '":' in text) else None
