"""The static tier's phase alone: static vectors for every chunk of an index built once, timed
``--runs`` times (the static tables emptied before each run). Prints chunks a second.

    python benchmarks/bench_static_phase.py [--corpus DIR] [--runs 3]

The corpus (default: Django 5.1.4 whole, docs and ``.po`` catalogues included) is indexed once,
lexical phase only, into a temporary data directory. Compare two commits by running this script
with ``PYTHONPATH`` set to each checkout in turn, alternated.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import fetch_django  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    corpus = args.corpus.resolve() if args.corpus else fetch_django()
    with tempfile.TemporaryDirectory() as data:
        os.environ.update(CODESIGHT_DATA_DIR=data, CODESIGHT_SERVICE="off")
        from codesight_tui import CodeSight
        from codesight_tui.core.index.indexer import IndexReport, index_static
        from codesight_tui.core.index.static import PACKAGED_DIR, StaticEmbedder

        cs = CodeSight(corpus, lexical_processes=True)
        cs.index(embed=False)
        model = StaticEmbedder(PACKAGED_DIR)
        for _ in range(args.runs):
            cs.store.clear_static()
            report = IndexReport()
            t = time.perf_counter()
            index_static(cs.store, model, report=report)
            wall = time.perf_counter() - t
            print(
                f"static phase: {report.static_embedded:,} chunks in {wall:.2f} s"
                f" ({report.static_embedded / wall:,.0f} chunks/s)",
                flush=True,
            )
        cs.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
