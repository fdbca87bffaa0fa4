"""How long callers and callees take to answer: 100 seeded definitions of a repository, each asked
once, on an index built in a data directory of its own.

    python benchmarks/nav_answers.py REPO DATA_DIR [--seed 7] [--count 100]

Prints p50, p95, the slowest and the total for each. Run it from a checkout to time that checkout's
code (its package is imported first): two checkouts, one data directory each, give before and after.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path)
    ap.add_argument("data", type=Path)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--count", type=int, default=100)
    args = ap.parse_args()
    os.environ["CODESIGHT_DATA_DIR"] = str(args.data)
    from codesight_tui import CodeSight

    cs = CodeSight(args.repo.resolve(), lexical_processes=False)
    try:
        cs.index(embed=False)
        defs = cs.store.conn.execute(
            "SELECT f.path, d.line FROM defs d JOIN sym_files f ON f.id = d.file_id"
            " WHERE d.kind IN ('def', 'func', 'async def') ORDER BY f.path, d.line"
        ).fetchall()
        sample = random.Random(args.seed).sample(defs, min(args.count, len(defs)))
        for action in ("callers", "callees"):
            times = []
            for path, line in sample:
                t = time.perf_counter()
                getattr(cs, action)(f"{path}:{line}")
                times.append((time.perf_counter() - t) * 1000)
            times.sort()
            print(
                f"{args.repo.name} {action}: p50 {statistics.median(times):.1f} ms,"
                f" p95 {times[int(len(times) * 0.95) - 1]:.1f} ms, slowest {times[-1]:.1f} ms, total {sum(times):.0f} ms"
            )
    finally:
        cs.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
