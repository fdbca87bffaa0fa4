"""In-process search latency of the default answer (BM25 and the static tier), as the warm service
and the TUI run it: the 60 plain-English questions of bench_core, each asked REPEAT times, on an
index built once (Django 5.1.4 by default). Prints p50, p95 and the share of answers that held a
file-level hit. With --how, each is asked as a question ("how do we parse a date string into a
datetime"), which ranking step 8 reads the first page's symbols for.

    python benchmarks/search_latency.py [--corpus DIR] [--data DIR] [--repeat 5] [--how]

Run it from two checkouts on the same --data (an index both can read) to compare two versions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import NL_QUERIES, fetch_django, pct  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=None, help="a tree to search (default: Django 5.1.4)")
    ap.add_argument("--data", type=Path, required=True, help="the data directory of its index")
    ap.add_argument("--repeat", type=int, default=5, help="times each question is asked (default 5)")
    ap.add_argument("--how", action="store_true", help='ask each as a question: "how do we ..."')
    args = ap.parse_args()
    questions = [f"how do we {q}" for q in NL_QUERIES] if args.how else NL_QUERIES
    from codesight_tui import CodeSight
    from codesight_tui.core.config import Settings

    corpus = args.corpus.resolve() if args.corpus else fetch_django()
    cs = CodeSight(corpus, settings=Settings(data_dir=args.data))
    cs.index(embed=False)
    for q in questions:  # warm: the resident BM25 copy, the static table, caches
        cs.search(q, top_k=10)
    ms: list[float] = []
    whole = 0
    for _ in range(args.repeat):
        for q in questions:
            t = time.perf_counter()
            hits = cs.search(q, top_k=10)
            ms.append((time.perf_counter() - t) * 1000)
            whole += any(getattr(h, "grain", "chunk") != "chunk" for h in hits)
    print(f"{len(ms)} searches: p50 {pct(ms, 50):.2f} ms, p95 {pct(ms, 95):.2f} ms, mean {statistics.mean(ms):.2f} ms")
    print(f"answers with a file-level hit: {whole} of {len(ms)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
