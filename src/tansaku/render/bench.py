"""Terminal text for `tansaku bench`: one table per mode, rows per query kind."""

from __future__ import annotations

from tansaku.render.admin import table
from tansaku.render.shared import RenderOptions
from tansaku.types import BenchReport

HEADER = ["KIND", "N", "HIT@1", "HIT@3", "HIT@5", "HIT@10", "MRR@10", "NDCG@10", "P50 MS", "P95 MS"]


def render(report: BenchReport, opts: RenderOptions) -> str:
    lines = [f"query set: {report.query_set}", f"collection: {report.collection}"]
    for mode in report.modes:
        rows = [HEADER]
        for s in report.summaries:
            if s.mode != mode:
                continue
            rows.append(
                [
                    s.kind,
                    str(s.queries),
                    *(
                        f"{v:.3f}"
                        for v in (s.hit_at_1, s.hit_at_3, s.hit_at_5, s.hit_at_10, s.mrr_at_10, s.ndcg_at_10)
                    ),
                    f"{s.latency_p50_ms:.1f}",
                    f"{s.latency_p95_ms:.1f}",
                ]
            )
        lines += ["", f"mode: {mode}", *table(rows, right=frozenset(range(1, len(HEADER))))]
    misses = [o for o in report.queries if o.first_relevant_rank is None]
    if misses:
        lines += ["", f"not found in the top 10 ({len(misses)}):"]
        lines += [f"  [{o.mode}] {o.id} {o.query!r} -> wanted {o.relevant[0]}" for o in misses]
    for warning in report.warnings:
        lines.append(f"warning [{warning.code}]: {warning.message}")
    git = report.record.get("git")
    commit = git.get("commit", "")[:12] if isinstance(git, dict) else "unknown"
    lines += ["", f"tansaku {report.record.get('tansaku_version')} @ {commit}, {report.record.get('date')}"]
    return "\n".join(lines) + "\n"
