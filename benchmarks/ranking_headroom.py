"""How much NDCG@10 is left to gain by ordering alone: the devset's oracle over each ranking's pool.

    python benchmarks/ranking_headroom.py [--devset DIR] [--cache DIR]

For each query it takes the top 10, 20 and 40 hits of a ranking and puts them in the best order
the query's targets allow (greedily: the hit that matches the most targets not yet matched first),
then scores the first ten with the same metric as ``codesight eval``. The gap between a ranking's
NDCG@10 and the oracle over its own top 40 is what a perfect reranker of those hits could add; the
gap between the top-10 and top-40 oracles is what the hits ranked 11-40 hold.

Rankings: the default (the ranking stack, 40 hits from each retriever) and plain RRF (k=60, 20
from each). It indexes the devset like ``benchmarks/eval_devset.sh`` (fetched on first use) in
the usual data directory, so a run after eval_devset.sh embeds nothing.
"""

from __future__ import annotations

import sys

from seed_baseline import devset_suites  # the devset's arguments and sources, shared

POOLS = (10, 20, 40)  # 10 first: it is also the ranking's own top 10


def oracle_order(results, targets):
    """``results`` reordered so that each next hit matches as many targets not yet matched as any
    other hit left; hits that match nothing new keep their order after those."""
    left, ordered, covered = list(results), [], set()
    while left:

        def gain(r, covered=covered):
            return {
                i for i, t in enumerate(targets) if i not in covered and t.matches(r.path, r.start_line, r.end_line)
            }

        best = max(left, key=lambda r: len(gain(r)))
        new = gain(best)
        if not new:
            break
        covered |= new
        ordered.append(best)
        left.remove(best)
    return ordered + left


def main() -> None:
    suites = devset_suites(__doc__)

    from codesight_tui.core.apps.evaluation import load_queries, score
    from codesight_tui.core.config import Settings, load_settings
    from codesight_tui.core.engine import CodeSight

    depth = Settings.model_fields["retriever_depth"].default
    rankings = {
        "final ranking": load_settings(ranking="stack", retriever_depth=depth),
        "plain RRF": load_settings(ranking="plain", retriever_depth=20),
    }
    # per ranking: per file: per category: list of (actual, oracle@10, oracle@20, oracle@40)
    table: dict[str, list[dict[str, list[tuple[float, ...]]]]] = {name: [] for name in rankings}
    for query_file, root in suites:
        queries = load_queries(query_file)
        for name, settings in rankings.items():
            cs = CodeSight(root, settings=settings)
            cs.index()
            per_cat: dict[str, list[tuple[float, ...]]] = {}
            for q in queries:
                # One search per pool size: a longer list folds more continuation chunks into
                # its hits (searcher grouping), so its first ten are not quite a top-10 search.
                pools = {n: cs.search(q.text, top_k=n) for n in POOLS}
                row = [score(pools[10], q.targets)["ndcg@10"]]
                row += [score(oracle_order(pools[n], q.targets), q.targets)["ndcg@10"] for n in POOLS]
                per_cat.setdefault(q.category, []).append(tuple(row))
                per_cat.setdefault("overall", []).append(tuple(row))
            table[name].append(per_cat)
            cs.close()

    cats = sorted({c for files in table.values() for f in files for c in f} - {"overall"}) + ["overall"]
    cols = ["NDCG@10"] + [f"oracle, top {n}" for n in POOLS]
    print("| Ranking | Category | " + " | ".join(cols) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in cols) + " |")
    for name, files in table.items():
        for c in cats:
            # mean per file, then across files, as codesight eval averages
            means = [[sum(r[k] for r in f[c]) / len(f[c]) for k in range(len(cols))] for f in files if c in f]
            vals = [sum(m[k] for m in means) / len(means) for k in range(len(cols))]
            print(f"| {name} | {c} | " + " | ".join(f"{v:.3f}" for v in vals) + " |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
