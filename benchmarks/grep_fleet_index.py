"""What a fleet store's exact search could narrow with (issue 68 item 7, measured before chosen):
LanceDB's FM-index (``lancedb.index.Fm``: ``contains(content, 'needle')`` on raw bytes) against
the same filter with no index, over the chunks of a local index copied into a LanceDB table.

    python benchmarks/grep_fleet_index.py [--index-db PATH] [--rows N] [--patterns 30]

Prints the table's size, the index's build time and size, and per pattern kind the p50 of a
``contains`` filter that returns the matching chunks' ids and paths, with and without the index,
with the rows each returns (both must agree).
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{5,40}\b")


def main() -> int:
    import lancedb
    import pyarrow as pa
    from lancedb.index import Fm

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-db", default=None, help="a codesight index.db (default: the scale tree's, if built)")
    ap.add_argument("--rows", type=int, default=0, help="at most this many chunks (0: all)")
    ap.add_argument("--patterns", type=int, default=30)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    db = Path(args.index_db) if args.index_db else next(Path("benchmarks/.data/tui/data-exact").glob("*/index.db"))
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    sql = "SELECT id, path, content FROM chunks ORDER BY id" + (f" LIMIT {args.rows}" if args.rows else "")
    ids, paths, texts = [], [], []
    for cid, path, content in conn.execute(sql):
        ids.append(cid)
        paths.append(path)
        texts.append(content)
    size = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    print(f"{len(ids):,} chunks, {size / 1e6:.0f} MB of text, from {db}")
    rng = random.Random(args.seed)
    words = sorted({w for t in rng.sample(texts, min(2000, len(texts))) for w in IDENT.findall(t)})
    patterns = rng.sample(words, min(args.patterns, len(words)))
    work = Path(tempfile.mkdtemp(prefix="csfm-"))
    try:
        store = lancedb.connect(str(work))
        data = pa.table({"id": ids, "path": paths, "content": texts})
        indexed = store.create_table("chunks", data)
        plain = store.create_table("bare", data)  # the same rows, no index: every filter scans
        bare = sum(p.stat().st_size for p in (work / "chunks.lance").rglob("*") if p.is_file())
        t0 = time.perf_counter()
        indexed.create_index("content", config=Fm())
        built = time.perf_counter() - t0
        with_index = sum(p.stat().st_size for p in (work / "chunks.lance").rglob("*") if p.is_file())
        print(f"table {bare / 1e6:.0f} MB; FM-index built in {built:.1f} s, {(with_index - bare) / 1e6:.0f} MB")
        timings: dict[str, list[float]] = {"fm": [], "scan": []}
        agree = 0
        for word in patterns:
            where = "contains(content, '" + word.replace("'", "''") + "')"
            got = {}
            for name, tbl in (("fm", indexed), ("scan", plain)):
                t = time.perf_counter()
                rows = tbl.search().where(where).select(["id", "path"]).limit(None).to_list()
                timings[name].append((time.perf_counter() - t) * 1000)
                got[name] = {r["id"] for r in rows}
            agree += got["fm"] == got["scan"]
            print(
                f"  {word:<32} {len(got['fm']):>6} chunks   fm {timings['fm'][-1]:8.1f} ms   scan {timings['scan'][-1]:8.1f} ms"
            )
        print(f"same chunks with and without the index: {agree}/{len(patterns)}")
        for name, ms in timings.items():
            print(f"{name:<5} p50 {statistics.median(ms):8.1f} ms   max {max(ms):8.1f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
