"""Issue 51's costs: what the symbol tables add to an index run and to index.db, and how fast
def / refs / callers / callees answer warm.

    python benchmarks/bench_navigate.py [--corpus DIR] [--before REV]

The lexical phase and index.db are measured twice in one run: this tree, and ``--before`` (a
commit without symbols, checked out in a temporary worktree and imported from there), each on a
fresh data directory, lexical phase only. Then 200 names with definitions are sampled (seeded), and
each of definitions / references / callers / callees is timed warm, in process (what the warm
service spends on a call): p50 and p95.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_core import EXCLUDE, fetch_django  # noqa: E402

INDEX = """
import json, resource, sys, time
from codesight_tui import CodeSight
cs = CodeSight(sys.argv[1], exclude={exclude!r} or None, lexical_processes=True)
own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
report = cs.index(embed=False)
cs.close()
own2, kids2 = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
cpu = lambda a, b: b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime
print(json.dumps({{"lexical_s": report.lexical_seconds, "files": report.files, "chunks": report.chunks,
                  "main_cpu": cpu(own, own2), "workers_cpu": cpu(kids, kids2)}}))
"""


def index_once(corpus: Path, pythonpath: Path, exclude: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as data:
        env = dict(os.environ, CODESIGHT_DATA_DIR=data, PYTHONPATH=str(pythonpath), CODESIGHT_SERVICE="off")
        out = subprocess.run(
            [sys.executable, "-c", INDEX.format(exclude=exclude), str(corpus)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=tempfile.gettempdir(),
        )
        got = json.loads(out.stdout.strip().splitlines()[-1])
        dbs = list(Path(data).rglob("index.db"))
        got["index_db_mb"] = sum(p.stat().st_size for p in dbs) / 1e6
        return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--before", default="e61a2ae")
    ap.add_argument("--names", type=int, default=200)
    ap.add_argument("--runs", type=int, default=2, help="index runs of each tree (the best is kept)")
    args = ap.parse_args()
    corpus = args.corpus.resolve() if args.corpus else fetch_django()
    exclude = [] if args.corpus else EXCLUDE  # Django as bench_core indexes it; any other tree whole
    with tempfile.TemporaryDirectory() as wt:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", wt, args.before], check=True)
        try:
            rows: dict[str, list[dict[str, float]]] = {"before": [], "now": []}
            for _ in range(args.runs):  # alternated, so both see the same machine
                rows["before"].append(index_once(corpus, Path(wt), exclude))
                rows["now"].append(index_once(corpus, ROOT, exclude))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", wt], check=False)
    best = {k: min(v, key=lambda r: r["lexical_s"]) for k, v in rows.items()}
    med = {k: statistics.median(r["lexical_s"] for r in v) for k, v in rows.items()}
    # CPU of the index run, its process and its workers (which have exited by the end of the run):
    # on a shared 2-core box the wall clock of one run moves by 10-20%, its CPU much less.
    cpu = {k: statistics.median(r["main_cpu"] + r["workers_cpu"] for r in v) for k, v in rows.items()}
    for k, r in best.items():
        print(
            f"{k:>6}: lexical {r['lexical_s']:.1f} s, index.db {r['index_db_mb']:.1f} MB ({r['files']} files,"
            f" {r['chunks']} chunks)  runs: {[round(x['lexical_s'], 1) for x in rows[k]]}; CPU, median:"
            f" {cpu[k]:.1f} s ({statistics.median(x['main_cpu'] for x in rows[k]):.1f} s the run's process,"
            f" {statistics.median(x['workers_cpu'] for x in rows[k]):.1f} s its workers)"
        )
    print(
        f"lexical phase x{best['now']['lexical_s'] / best['before']['lexical_s']:.3f} best,"
        f" x{med['now'] / med['before']:.3f} median; its CPU x{cpu['now'] / cpu['before']:.3f};"
        f" index.db x{best['now']['index_db_mb'] / best['before']['index_db_mb']:.3f}"
    )

    sys.path.insert(0, str(ROOT))
    from codesight_tui import CodeSight
    from codesight_tui.core.store import symbols

    with tempfile.TemporaryDirectory() as data:
        os.environ["CODESIGHT_DATA_DIR"] = data
        cs = CodeSight(corpus, exclude=exclude or None, lexical_processes=True)
        cs.index(embed=False)
        c = cs.store.conn
        print("tables:", symbols.counts(c))
        names = [n for (n,) in c.execute("SELECT DISTINCT d.name FROM defs d ORDER BY d.name")]
        rng = random.Random(51)
        sample = rng.sample(names, min(args.names, len(names)))
        for action in ("definitions", "references", "callers", "callees") if sample else ():
            for name in sample[:10]:  # warm the pages
                cs.follow(action, name)
            times = []
            sizes = []
            for name in sample:
                t0 = time.perf_counter()
                nav = cs.follow(action, name)
                times.append((time.perf_counter() - t0) * 1000)
                sizes.append(len(nav))
            times.sort()
            print(
                f"{action:>11}: p50 {statistics.median(times):.2f} ms, p95 {times[int(len(times) * 0.95)]:.2f} ms,"
                f" max {times[-1]:.1f} ms; places per answer median {statistics.median(sizes):.0f},"
                f" max {max(sizes)} ({len(sample)} names)"
            )
        cs.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
