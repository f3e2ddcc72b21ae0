"""The reference keyword run: plain FTS5 BM25 over the query's words OR-ed, and no other rule.

    .venv/bin/python evals/bm25_or.py SET.jsonl [-c COLLECTION] [--index PATH] [--json OUT]

Every ranking change to `tansaku search` is measured beside this run (issue 9: a plain BM25-OR
beat the foundation's query rules on every kind of query). It reads the same index as the
evals (`evals/cache/evals.sqlite` by default) but none of tansaku's search code: the words are
the query's runs of letters and digits (as FTS5's unicode61 tokenizer splits them; Chinese is cut
into words by the same segmenter that built the index, without which nothing would match), each
is quoted, they are joined with OR, and the documents come back in `bm25()` order with every
text column weighted 1 (path, title and body; a headings column, where the schema has one,
weighs 0 because it repeats body text).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from tansaku.eval import metrics  # noqa: E402
from tansaku.eval.harness import load_set  # noqa: E402
from tansaku.text.cjk import has_cjk, segment_query_words  # noqa: E402

MODE = "bm25-or"
_WORD = re.compile(r"[^\W_]+")


def query_words(query: str) -> list[str]:
    words: list[str] = []
    for word in _WORD.findall(query.lower()):
        words.extend(segment_query_words(word) if has_cjk(word) else [word])
    return list(dict.fromkeys(w for w in words if _WORD.fullmatch(w)))


def fts_columns(conn: Any) -> list[str]:
    return [row[1] for row in conn.execute("PRAGMA table_info(documents_fts)")]


def ranked_paths(conn: Any, query: str, collection: str, k: int, weights: str) -> list[str]:
    words = query_words(query)
    if not words:
        return []
    expression = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
    rows = conn.execute(
        f"SELECT d.path FROM documents_fts AS f JOIN documents AS d ON d.id = f.rowid"
        f" WHERE documents_fts MATCH ? AND d.collection = ?"
        f" ORDER BY bm25(documents_fts, {weights}), d.path LIMIT ?",
        (expression, collection, k),
    )
    return [row[0] for row in rows]


def summarise(outcomes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {"all": outcomes}
    for outcome in outcomes:
        groups.setdefault(outcome["kind"], []).append(outcome)
    summaries = []
    for kind, group in groups.items():
        ranked = [(o["ranked"], o["relevant"]) for o in group]
        summaries.append(
            {
                "mode": MODE,
                "kind": kind,
                "queries": len(group),
                "hit_at_1": metrics.mean([metrics.hit_at(r, rel, 1) for r, rel in ranked]),
                "hit_at_3": metrics.mean([metrics.hit_at(r, rel, 3) for r, rel in ranked]),
                "hit_at_5": metrics.mean([metrics.hit_at(r, rel, 5) for r, rel in ranked]),
                "hit_at_10": metrics.mean([metrics.hit_at(r, rel, 10) for r, rel in ranked]),
                "mrr_at_10": metrics.mean([metrics.reciprocal_rank(r, rel, 10) for r, rel in ranked]),
                "ndcg_at_10": metrics.mean([metrics.ndcg_at(r, rel, 10) for r, rel in ranked]),
                "zero_results": sum(1 for r, _ in ranked if not r),
            }
        )
    return summaries


def run(set_path: Path, collection: str, index: Path, k: int = 10) -> dict[str, Any]:
    import sqlean

    conn = sqlean.connect(f"file:{index}?mode=ro", uri=True)
    try:
        weights = ", ".join("0" if c in ("headings", "options") else "1" for c in fts_columns(conn))
        outcomes = []
        for q in load_set(set_path):
            ranked = ranked_paths(conn, q.query, collection, k, weights)
            outcomes.append(
                {"id": q.id, "kind": q.kind, "query": q.query, "ranked": ranked, "relevant": list(q.relevant)}
            )
    finally:
        conn.close()
    return {"query_set": str(set_path), "collection": collection, "summaries": summarise(outcomes),
            "outcomes": outcomes}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("query_set", type=Path)
    parser.add_argument("-c", "--collection", help="default: the set's corpus field")
    parser.add_argument("--index", type=Path, default=HERE / "cache" / "evals.sqlite")
    parser.add_argument("--json", type=Path, dest="json_out")
    args = parser.parse_args()
    collection = args.collection or json.loads(args.query_set.read_text().splitlines()[0])["corpus"]
    report = run(args.query_set, collection, args.index)
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    for s in report["summaries"]:
        print(
            f"{s['kind']:12} n={s['queries']:3}  Hit@1 {s['hit_at_1']:.3f}  Hit@3 {s['hit_at_3']:.3f}"
            f"  MRR@10 {s['mrr_at_10']:.3f}  zero {s['zero_results']}"
        )


if __name__ == "__main__":
    main()
