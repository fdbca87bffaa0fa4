"""What checking an index for damage costs on the 10,000-file scale tree (issue 34, item 3).

    python benchmarks/bench_integrity.py [--corpus DIR]

The scale tree of ``bench_scale.py`` (Django, SQLAlchemy, SymPy, Transformers: 10,000+ files) gets a
lexical index (BM25 only: the check reads SQLite, whose size the vectors do not change). Then:
- ``Store.probe()``, which every index run now makes (median of 20);
- SQLite's ``PRAGMA quick_check``, which a run makes once every ``integrity_check_hours``;
- a no-op ``codesight index --no-embed`` in a fresh process, which includes the probe.
Prints figures only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_scale import fetch  # noqa: E402

from codesight_tui import CodeSight  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", help="a tree to use instead of the scale tree")
    args = ap.parse_args()
    root = Path(args.corpus) if args.corpus else fetch()
    data = HERE / ".data" / "integrity-data"
    env = {**os.environ, "CODESIGHT_DATA_DIR": str(data), "CODESIGHT_STATIC_MODEL": "off"}
    os.environ.update(env)
    cli = [sys.executable, "-m", "codesight_tui", "index", str(root), "--no-embed", "--yes"]
    t0 = time.perf_counter()
    subprocess.run(cli, check=True, capture_output=True, env=env)
    first = time.perf_counter() - t0
    cs = CodeSight(root)
    st = cs.status(check_disk=False)
    print(
        f"tree: {root} ({st['files']:,} files, {st['chunks']:,} chunks); index.db {st['db_bytes'] / 1e6:.0f} MB;"
        f" lexical index {first:.1f} s (or less: reused)"
    )
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        assert cs.store.probe() is None
        times.append((time.perf_counter() - t0) * 1000)
    print(f"probe (every index run): median {statistics.median(times):.2f} ms, max {max(times):.2f} ms")
    t0 = time.perf_counter()
    assert cs.store.quick_check() is None
    qc = time.perf_counter() - t0
    print(f"quick_check (once per integrity_check_hours): {qc:.2f} s ({qc * 1000 / (st['db_bytes'] / 1e6):.1f} ms/MB)")
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run(cli, check=True, capture_output=True, env={**env, "CODESIGHT_INTEGRITY_CHECK_HOURS": "1000"})
        runs.append(time.perf_counter() - t0)
    print(
        f"no-op `codesight index --no-embed` in a fresh process (probe included): median {statistics.median(runs):.2f} s"
    )
    cs.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
