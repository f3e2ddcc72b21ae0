"""What keyword scores mean: can a user threshold on them, and do files and sessions share a scale?

    .venv/bin/python evals/bench_scores.py --index evals [--level session] [--out FILE] [SET ...]

Runs every judged query of the sets (default: all of evals/sets) through `search` (top 10) on an
index that holds each set's corpora as collections named as the set's ``corpus`` field (see
docs/evals.md), and reports per set and over all:

- MRR@10 (the ranking; a scale change alone must leave it as it was within one collection kind);
- how well a score separates a judged answer from the other hits: the AUC (the chance that a
  judged answer in the top 10 outscores a hit that is not one), and for thresholds t the share of
  hits scoring at least t that are judged answers, and the share of the answers kept;
- the scores of first results that are not judged answers (a user's false alarms);
- for `query`'s probe (hybrid/run.py: PROBE_SCORE with the raw gap PROBE_RAW_GAP): how many
  queries it would let skip expansion at each candidate threshold, and in how many of them the
  first result is a judged answer.

Writes a JSON record (``--out``) that `--compare` can set beside another run's.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from tansaku.api import Tansaku
from tansaku.eval.harness import load_set
from tansaku.hybrid.trust import keyword_confidence

SETS = Path(__file__).parent / "sets"
THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9)
PROBE_THRESHOLDS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85)
PROBE_RAW_GAP = 0.5


def corpus_of(set_path: Path) -> str:
    """The set's ``corpus`` field: the collection (or comma-separated collections) it targets."""
    first = next(line for line in set_path.read_text(encoding="utf-8").splitlines() if line.strip())
    return str(json.loads(first)["corpus"])


def run_set(api: Tansaku, set_path: Path, level: str | None) -> list[dict[str, object]]:
    queries = load_set(set_path)
    corpus = corpus_of(set_path)
    several = "," in corpus
    names = corpus.split(",")
    rows = []
    for query in queries:
        if level is None:
            result = api.search(query.query, collections=names, limit=10, snippets=False)
        else:
            result = api.search_levels(query.query, collections=names, level=level, limit=10)
        hits = [
            {"path": f"{h.collection}/{h.path}" if several else h.path, "score": round(h.score, 4)}
            for h in result.hits
        ]
        relevant = set(query.relevant)
        for hit in hits:
            hit["relevant"] = hit["path"] in relevant
        rows.append({"id": query.id, "query": query.query, "kind": query.kind, "hits": hits})
    return rows


def mrr(rows: Sequence[dict]) -> float:
    total = 0.0
    for row in rows:
        for rank, hit in enumerate(row["hits"], start=1):
            if hit["relevant"]:
                total += 1.0 / rank
                break
    return total / len(rows) if rows else 0.0


def auc(rows: Sequence[dict]) -> float | None:
    good = [h["score"] for r in rows for h in r["hits"] if h["relevant"]]
    bad = [h["score"] for r in rows for h in r["hits"] if not h["relevant"]]
    if not good or not bad:
        return None
    wins = sum((g > b) + 0.5 * (g == b) for g in good for b in bad)
    return wins / (len(good) * len(bad))


def thresholds(rows: Sequence[dict]) -> dict[str, dict[str, float]]:
    hits = [h for r in rows for h in r["hits"]]
    answers = sum(h["relevant"] for h in hits)
    table = {}
    for t in THRESHOLDS:
        kept = [h for h in hits if h["score"] >= t]
        table[f"{t:.2f}"] = {
            "kept": len(kept),
            "precision": round(sum(h["relevant"] for h in kept) / len(kept), 3) if kept else 0.0,
            "answers_kept": round(sum(h["relevant"] for h in kept) / answers, 3) if answers else 0.0,
        }
    return table


def probe(rows: Sequence[dict]) -> dict[str, dict[str, int]]:
    table = {}
    for t in PROBE_THRESHOLDS:
        skipped = right = 0
        for row in rows:
            hits = row["hits"]
            if not hits or hits[0]["score"] < t:
                continue
            if keyword_confidence([h["score"] for h in hits[:2]]) < PROBE_RAW_GAP:
                continue
            skipped += 1
            right += bool(hits[0]["relevant"])
        table[f"{t:.2f}"] = {"skipped": skipped, "first_is_answer": right}
    return table


def summary(rows: Sequence[dict]) -> dict[str, object]:
    wrong_firsts = sorted(r["hits"][0]["score"] for r in rows if r["hits"] and not r["hits"][0]["relevant"])
    return {
        "queries": len(rows),
        "mrr@10": round(mrr(rows), 4),
        "auc": None if auc(rows) is None else round(auc(rows), 4),
        "wrong_first_scores": wrong_firsts,
        "thresholds": thresholds(rows),
        "probe": probe(rows),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="*", type=Path)
    parser.add_argument("--index", default=None, help="the tansaku index holding the corpora")
    parser.add_argument("--level", default=None, help="turn, run, session or project (transcript sets)")
    parser.add_argument("--out", type=Path, help="write the record here (JSON)")
    args = parser.parse_args(argv)
    api = Tansaku(args.index)
    known = {c.name for c in api.config().collection_list()}
    sets = args.sets or sorted(SETS.glob("*.jsonl"))
    per_set: dict[str, list[dict]] = {}
    for set_path in sets:
        corpus = corpus_of(set_path)
        if not set(corpus.split(",")) <= known:
            print(f"{set_path.stem}: skipped ({corpus} not all in the index)", file=sys.stderr)
            continue
        per_set[set_path.stem] = run_set(api, set_path, args.level)
    everything = [row for rows in per_set.values() for row in rows]
    record = {
        "level": args.level,
        "sets": {name: summary(rows) for name, rows in per_set.items()},
        "all": summary(everything),
        "queries": per_set,
    }
    for name, facts in [*record["sets"].items(), ("ALL", record["all"])]:
        t = facts["thresholds"]
        print(
            f"{name:28} n={facts['queries']:3} mrr={facts['mrr@10']:.3f} auc={facts['auc']}"
            f" p@0.5={t['0.50']['precision']:.2f}/{t['0.50']['answers_kept']:.2f}"
            f" p@0.85={t['0.85']['precision']:.2f}/{t['0.85']['answers_kept']:.2f}"
        )
    print("probe (threshold: skipped, first is an answer):", json.dumps(record["all"]["probe"]))
    if args.out:
        args.out.write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
