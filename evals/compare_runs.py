"""Two `tansaku bench --json` runs of the same set, compared query by query.

    .venv/bin/python evals/compare_runs.py A.json B.json [--rounds 5000]

For each mode both runs measured: MRR@10 of each, the mean of A - B over the queries both
answered, and its 95% bootstrap interval (``eval.metrics.paired_difference``). An interval that
holds 0 means the set cannot tell the two apart. Not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def reciprocal_ranks(path: Path) -> dict[tuple[str, str], float]:
    report = json.loads(path.read_text(encoding="utf-8"))
    return {(q["mode"], q["id"]): float(q["reciprocal_rank"]) for q in report["queries"]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--rounds", type=int, default=5000)
    args = parser.parse_args(argv)

    from tansaku.eval.metrics import mean, paired_difference

    a, b = reciprocal_ranks(args.a), reciprocal_ranks(args.b)
    shared = sorted(a.keys() & b.keys())
    if not shared:
        print(f"no query of {args.a} was measured in the same mode in {args.b}", file=sys.stderr)
        return 1
    for mode in dict.fromkeys(m for m, _ in shared):
        keys = [k for k in shared if k[0] == mode]
        left, right = [a[k] for k in keys], [b[k] for k in keys]
        diff, low, high = paired_difference(left, right, rounds=args.rounds)
        verdict = "cannot tell apart" if low <= 0.0 <= high else ("A better" if low > 0 else "B better")
        print(
            f"{mode}: {len(keys)} queries, MRR@10 A {mean(left):.3f} B {mean(right):.3f}, "
            f"A - B {diff:+.3f} (95% interval {low:+.3f} to {high:+.3f}): {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
