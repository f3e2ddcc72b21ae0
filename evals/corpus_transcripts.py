"""Generate a deterministic corpus of agent session transcripts (Claude Code and Codex formats).

    .venv/bin/python evals/corpus_transcripts.py [OUT_DIR] [--sessions N] [--messages N] [--seed N]

Defaults: 2,000 sessions and 500,000 messages (records that become turns), half of the sessions
in each format, in ``evals/cache/transcripts`` (gitignored): ``claude/<project-slug>/<uuid>.jsonl``
and ``codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``. Each session is runs of a user
prompt, assistant text, a tool call and its result, with thinking now and then, injected context
and meta records (not turns), a Chinese prompt in about 5% of sessions and a fake secret in about
2%. Everything comes from ``random.Random(seed, session number)``: the same arguments give
byte-identical files. ``append(root, fraction)`` adds that share of new lines to the most
recent sessions (what an agent writes between two updates).
"""

from __future__ import annotations

import argparse
import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent / "cache" / "transcripts"
DEFAULT_SEED = 13
START = datetime(2025, 6, 1, tzinfo=UTC)
PROJECTS = [
    f"/home/dev/{name}" for name in ("api", "web", "infra", "search", "mobile", "data", "docs", "cli")
]
WORDS = [
    "index",
    "stale",
    "watcher",
    "rename",
    "folder",
    "cache",
    "update",
    "query",
    "vector",
    "embed",
    "chunk",
    "token",
    "migration",
    "schema",
    "lock",
    "writer",
    "reader",
    "timeout",
    "retry",
    "backoff",
    "deploy",
    "build",
    "test",
    "fixture",
    "snapshot",
    "parser",
    "record",
    "offset",
    "append",
    "rewrite",
    "archive",
    "session",
    "project",
    "prompt",
    "answer",
    "error",
    "trace",
    "stack",
    "memory",
    "thread",
    "process",
    "signal",
    "pipe",
    "socket",
    "request",
    "response",
    "header",
    "cookie",
    "config",
    "toml",
    "yaml",
    "json",
    "csv",
    "markdown",
    "heading",
    "snippet",
    "score",
    "rank",
]
TOOLS = ("Bash", "Read", "Edit", "Grep")
CHINESE = ("为什么索引会过期", "请检查配置文件", "压缩算法的选择", "数据库迁移失败")


def _sentence(rng: random.Random, topic: list[str], n: int) -> str:
    words = [rng.choice(topic) if rng.random() < 0.3 else rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _claude_session(rng: random.Random, sid: str, cwd: str, start: datetime, messages: int) -> list[dict]:
    records: list[dict] = [{"type": "summary", "summary": _sentence(rng, WORDS, 4), "leafUuid": "x"}]
    topic = rng.sample(WORDS, 5)
    moment, n = start, 0

    def base(kind: str) -> dict:
        nonlocal moment
        moment += timedelta(seconds=rng.randint(1, 90))
        return {
            "type": kind,
            "uuid": str(uuid.UUID(int=rng.getrandbits(128))),
            "cwd": cwd,
            "sessionId": sid,
            "timestamp": _ts(moment),
            "isSidechain": False,
        }

    while n < messages:
        prompt = rng.choice(CHINESE) if rng.random() < 0.02 else _sentence(rng, topic, rng.randint(6, 14))
        records.append({**base("user"), "message": {"role": "user", "content": prompt}})
        blocks: list[dict] = [{"type": "text", "text": _sentence(rng, topic, rng.randint(10, 40))}]
        if rng.random() < 0.3:
            blocks.insert(0, {"type": "thinking", "thinking": _sentence(rng, topic, 12)})
        tool = rng.choice(TOOLS)
        blocks.append(
            {"type": "tool_use", "id": "t", "name": tool, "input": {"command": _sentence(rng, topic, 4)}}
        )
        records.append({**base("assistant"), "message": {"role": "assistant", "content": blocks}})
        output = "\n".join(_sentence(rng, topic, rng.randint(5, 15)) for _ in range(rng.randint(1, 8)))
        if rng.random() < 0.01:
            output += "\nOPENAI_API_KEY=sk-proj-" + "".join(
                rng.choice("abcdefghijk0123456789") for _ in range(40)
            )
        result = {"type": "tool_result", "tool_use_id": "t", "content": output}
        records.append({**base("user"), "message": {"role": "user", "content": [result]}})
        if rng.random() < 0.05:
            records.append(
                {**base("user"), "isMeta": True, "message": {"role": "user", "content": "<x>meta</x>"}}
            )
        n += 3 + len(blocks) - 1
    return records


def _codex_session(rng: random.Random, sid: str, cwd: str, start: datetime, messages: int) -> list[dict]:
    moment = start
    topic = rng.sample(WORDS, 5)

    def rec(kind: str, payload: dict) -> dict:
        nonlocal moment
        moment += timedelta(seconds=rng.randint(1, 90))
        return {"timestamp": _ts(moment), "type": kind, "payload": payload}

    records = [
        rec("session_meta", {"id": sid, "cwd": cwd, "originator": "codex_cli_rs", "cli_version": "0.77.0"}),
        rec(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}],
            },
        ),
    ]
    n = 0
    while n < messages:
        prompt = rng.choice(CHINESE) if rng.random() < 0.02 else _sentence(rng, topic, rng.randint(6, 14))
        records.append(
            rec(
                "response_item",
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
            )
        )
        records.append(rec("event_msg", {"type": "user_message", "message": prompt}))
        args = json.dumps({"command": ["bash", "-lc", _sentence(rng, topic, 4)]})
        records.append(
            rec(
                "response_item", {"type": "function_call", "name": "shell", "arguments": args, "call_id": "c"}
            )
        )
        output = "\n".join(_sentence(rng, topic, rng.randint(5, 15)) for _ in range(rng.randint(1, 8)))
        records.append(
            rec("response_item", {"type": "function_call_output", "call_id": "c", "output": output})
        )
        text = _sentence(rng, topic, rng.randint(10, 40))
        records.append(
            rec(
                "response_item",
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
            )
        )
        n += 4
    return records


def session_paths(root: Path, number: int, sessions: int) -> tuple[Path, str, str, datetime]:
    rng = random.Random(f"{DEFAULT_SEED}:{number}:path")
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    cwd = PROJECTS[number % len(PROJECTS)]
    start = START + timedelta(minutes=number * 180 * 2000 // max(sessions, 1))
    if number % 2 == 0:
        path = root / "claude" / cwd.replace("/", "-") / f"{sid}.jsonl"
    else:
        day = start.strftime("%Y/%m/%d")
        path = (
            root / "codex" / "sessions" / day / f"rollout-{start.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl"
        )
    return path, sid, cwd, start


def generate(root: Path, sessions: int, messages: int, seed: int = DEFAULT_SEED) -> int:
    """Write the corpus; returns the number of records written."""
    per = max(4, messages // sessions)
    written = 0
    for number in range(sessions):
        path, sid, cwd, start = session_paths(root, number, sessions)
        rng = random.Random(f"{seed}:{number}")
        make = _claude_session if number % 2 == 0 else _codex_session
        records = make(rng, sid, cwd, start, per)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        written += len(records)
    return written


def append(root: Path, sessions: int, fraction: float, seed: int = DEFAULT_SEED, spread: int = 20) -> int:
    """Add ``fraction`` of the corpus's lines as new records to the last ``spread`` sessions."""
    total = sum(1 for _ in root.rglob("*.jsonl") for _ in _.open("rb"))
    wanted = max(1, int(total * fraction))
    added = 0
    chosen = list(range(max(0, sessions - spread), sessions))
    for i, number in enumerate(chosen):
        path, sid, cwd, start = session_paths(root, number, sessions)
        share = wanted // len(chosen) + (1 if i < wanted % len(chosen) else 0)
        rng = random.Random(f"{seed}:{number}:append:{path.stat().st_size}")
        make = _claude_session if number % 2 == 0 else _codex_session
        records = make(rng, sid, cwd, start + timedelta(days=1), share)
        records = records[1:] if number % 2 == 0 else records[2:]  # no second header
        with path.open("a", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        added += len(records)
    return added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--messages", type=int, default=500_000)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args()
    written = generate(args.out, args.sessions, args.messages, args.seed)
    print(f"{args.sessions} sessions, {written} records in {args.out}")


if __name__ == "__main__":
    main()
