"""Exact vs approximate (ANN) vector search in LanceDB: recall@10 against exact search, and latency.

    python benchmarks/bench_ann.py        # needs the Django index left by bench_core.py

Tables: the 24,992 real MiniLM vectors of the Django benchmark index, and a 100,000-row table made
of those real vectors plus 75,008 perturbed copies (real vector + gaussian noise, renormalised):
embedding 100k chunks for real takes over an hour on this CPU, and exact-search latency does not
depend on the values. Queries: 120 real query embeddings (plain-language questions and
identifiers), each fetching --limit rows (default 40, the retriever depth searches use).
Recall@N = share of the exact top N that the index returns in its top N.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import DATA, NL_QUERIES, pct  # noqa: E402


def load_real() -> np.ndarray:
    import lancedb

    dirs = list((DATA / "run" / "data").glob("*/vectors.lance"))
    if not dirs:
        raise SystemExit("run benchmarks/bench_core.py first (it leaves the Django index this reads)")
    t = lancedb.connect(str(dirs[0])).open_table("chunks")
    col = t.to_arrow().column("vector").combine_chunks()
    return np.asarray(col.values.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(col), -1)


def make_table(db, name: str, vecs: np.ndarray):
    import pyarrow as pa

    flat = pa.array(np.ascontiguousarray(vecs, dtype=np.float32).ravel())
    data = pa.table(
        {
            "id": pa.array(np.arange(len(vecs)), pa.int64()),
            "vector": pa.FixedSizeListArray.from_arrays(flat, vecs.shape[1]),
        }
    )
    return db.create_table(name, data, mode="overwrite")


def run_queries(table, queries: np.ndarray, limit: int, **knobs) -> tuple[list[list[int]], list[float]]:
    out, lat = [], []
    for q in queries:
        t0 = time.perf_counter()
        b = table.search(q).distance_type("cosine").limit(limit)
        if knobs.get("exact"):
            b = b.bypass_vector_index()
        if "nprobes" in knobs:
            b = b.nprobes(knobs["nprobes"])
        if knobs.get("refine"):
            b = b.refine_factor(knobs["refine"])
        if "ef" in knobs:
            b = b.ef(knobs["ef"])
        ids = b.select(["id", "_distance"]).to_arrow().column("id").to_pylist()
        lat.append((time.perf_counter() - t0) * 1000)
        out.append(ids)
    return out, lat


def main() -> int:
    import argparse

    import lancedb

    from codesight_tui.core.config import DEFAULT_MODEL
    from codesight_tui.core.index.embedder import SentenceTransformerEmbedder
    from codesight_tui.core.ingest.tokens import resolve_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=40, help="rows fetched per query (the retriever depth)")
    limit = ap.parse_args().limit
    real = load_real()
    emb = SentenceTransformerEmbedder(resolve_model(DEFAULT_MODEL), device="cpu")
    texts = (
        NL_QUERIES
        + [
            "QuerySet",
            "get_object_or_404",
            "CsrfViewMiddleware",
            "slugify",
            "reverse_lazy",
            "cached_property",
            "Paginator",
            "ModelForm",
            "atomic",
            "urlencode",
        ]
        * 6
    )
    queries = emb.encode(texts[:120])
    rng = np.random.default_rng(7)
    extra = real[rng.integers(0, len(real), 100_000 - len(real))] + rng.normal(
        0, 0.03, (100_000 - len(real), real.shape[1])
    )
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    big = np.vstack([real, extra.astype(np.float32)])
    tmp = Path(tempfile.mkdtemp())
    db = lancedb.connect(str(tmp))
    try:
        for name, vecs in (("real 24,992", real), ("100,000 (real + perturbed)", big)):
            table = make_table(db, "t", vecs)
            run_queries(table, queries[:5], limit, exact=True)
            truth, lat = run_queries(table, queries, limit, exact=True)
            print(f"\n[{name}] exact: p50 {pct(lat, 50):.1f} ms, p95 {pct(lat, 95):.1f} ms")
            parts = max(16, int(len(vecs) ** 0.5))
            for itype, extra_args, settings in (
                (
                    "IVF_PQ",
                    {"num_partitions": parts, "num_sub_vectors": 48},
                    [
                        {"nprobes": 20, "refine": 0},
                        {"nprobes": 40, "refine": 3},
                        {"nprobes": 40, "refine": 5},
                        {"nprobes": 40, "refine": 10},
                    ],
                ),
                (
                    "IVF_HNSW_SQ",
                    {"num_partitions": max(4, parts // 8)},
                    [{"nprobes": 4, "ef": 100}, {"nprobes": 8, "ef": 200}],
                ),
            ):
                t0 = time.perf_counter()
                table.create_index(metric="cosine", index_type=itype, replace=True, **extra_args)
                build = time.perf_counter() - t0
                for knobs in settings:
                    run_queries(table, queries[:5], limit, **knobs)
                    got, lat = run_queries(table, queries, limit, **knobs)
                    recall = statistics.mean(len(set(g) & set(t)) / len(t) for g, t in zip(got, truth, strict=False))
                    top10 = statistics.mean(
                        len(set(g[:10]) & set(t[:10])) / 10 for g, t in zip(got, truth, strict=False)
                    )
                    print(
                        f"  {itype:<12} {extra_args} {knobs}: build {build:.1f}s, recall@{limit} {recall:.3f},"
                        f" recall@10 {top10:.3f},"
                        f" p50 {pct(lat, 50):.1f} ms, p95 {pct(lat, 95):.1f} ms"
                    )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
