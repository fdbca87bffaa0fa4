"""Scale benchmark: a 10,000+ file, 100,000+ chunk tree made of real packages. Prints figures.

    python benchmarks/bench_scale.py [--embed-seconds 60] [--corpus DIR]

Corpus (sdists from PyPI, fetched once into benchmarks/.data/scale): Django 5.1.4 (whole sdist,
tests and locale included), SQLAlchemy 2.0.36, SymPy 1.13.3 and Transformers 4.46.3, side by side
in one tree. Reports the time until lexical search works, files and chunks, disk size, peak RSS,
no-op re-index (in-process and a fresh CLI process), real embedding throughput and RSS for
--embed-seconds, and hybrid query latency at 100,000+ vectors.

Embedding 100k chunks for real takes over an hour on a 2-core CPU. For the query-latency step the
chunks the model did not reach get stand-in vectors: the real vector of a randomly chosen
embedded chunk plus gaussian noise, renormalised (the latency of vector search does not depend on
the values; recall of the approximate index is measured on real vectors by bench_ann.py).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import DATA, NL_QUERIES, lexical_ready, pct, query_latency, rss_mb  # noqa: E402

PACKAGES = ["django==5.1.4", "sqlalchemy==2.0.36", "sympy==1.13.3", "transformers==4.46.3"]


def fetch() -> Path:
    root = DATA / "scale" / "corpus"
    if root.is_dir() and any(root.iterdir()):
        return root
    dl = DATA / "scale" / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", *PACKAGES, "-d", str(dl)],
        check=True,
    )
    root.mkdir(parents=True, exist_ok=True)
    for tgz in dl.glob("*.tar.gz"):
        with tarfile.open(tgz) as tf:
            tf.extractall(root, filter="data")
    return root


def lexical_runs(corpus: Path, run_dir: Path, runs: int) -> int:
    """Time the CLI's lexical phase from nothing, ``runs`` times: wall clock from process start to
    exit (search works from then on), and the CPU of the writer and its chunking workers."""
    print(f"corpus: {corpus}; machine: {os.cpu_count()} cpus")
    walls = []
    for k in range(runs):
        shutil.rmtree(run_dir, ignore_errors=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "codesight_tui", "index", "--no-embed", "--json", str(corpus)],
            check=True,
            capture_output=True,
            text=True,
            env=dict(os.environ),
        )
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        import json

        rep = json.loads(out.stdout)
        cpu_u, cpu_s = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
        walls.append(wall)
        print(
            f"[lexical] run {k + 1}: {rep['files']:,} files, {rep['chunks']:,} chunks; process wall {wall:.1f}s"
            f" (lexical phase {rep['lexical_seconds']:.1f}s); CPU {cpu_u:.1f}s user + {cpu_s:.1f}s sys"
            f" = {(cpu_u + cpu_s) / wall:.2f} cores busy"
        )
    print(f"[lexical] best {min(walls):.1f}s, median {sorted(walls)[len(walls) // 2]:.1f}s over {runs} runs")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embed-seconds", type=float, default=60.0)
    ap.add_argument("--queries", type=int, default=120)
    ap.add_argument("--corpus", type=Path, default=None, help="any tree instead of the four packages")
    ap.add_argument(
        "--queries-only",
        action="store_true",
        help="only query latency (bench_core's query set), on the index the last run left",
    )
    ap.add_argument(
        "--lexical-only",
        type=int,
        default=0,
        metavar="RUNS",
        help="only the lexical phase: RUNS fresh `codesight index --no-embed` processes, timed",
    )
    args = ap.parse_args()

    corpus = args.corpus.resolve() if args.corpus else fetch()
    run_dir = DATA / "scale" / "run"
    if not args.queries_only:
        shutil.rmtree(run_dir, ignore_errors=True)
    os.environ["CODESIGHT_DATA_DIR"] = str(run_dir / "data")
    os.environ["CODESIGHT_CACHE_DIR"] = str(run_dir / "cache")  # empty: everything is embedded for real
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    if args.lexical_only:
        return lexical_runs(corpus, run_dir, args.lexical_only)
    if args.queries_only:
        from codesight_tui import CodeSight

        query_latency(CodeSight(corpus), args.queries)
        print(f"\n[memory] peak RSS: this process {rss_mb():.0f} MB")
        return 0

    from codesight_tui.core.index.cache import EmbeddingCache
    from codesight_tui.core.index.indexer import index_vectors

    n_files = sum(1 for p in corpus.rglob("*") if p.is_file())
    print(f"corpus: {corpus} ({n_files:,} files on disk); machine: {os.cpu_count()} cpus")

    cs, lex, hits, t_lex = lexical_ready(corpus, "parse a date string")
    print(
        f"\n[lexical] {lex.files:,} files indexed, {lex.chunks:,} chunks; lexical search works after {t_lex:.1f}s"
        f" ({len(hits)} hits); skipped {dict(lex.skipped)}"
    )
    print(f"[lexical] peak RSS so far {rss_mb():.0f} MB; SQLite index {cs.store.size_bytes() / 1e6:.0f} MB")

    noop = []
    for _ in range(3):
        t = time.perf_counter()
        cs.index(embed=False)
        noop.append(time.perf_counter() - t)
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "codesight_tui", "index", "--no-embed", str(corpus)],
        check=True,
        capture_output=True,
        env=dict(os.environ),
    )
    cli = time.perf_counter() - t
    print(
        f"[no-op] re-index of {lex.files:,} files: in-process {min(noop):.2f}s (best of 3);"
        f" fresh CLI process {cli:.2f}s"
    )

    # Real embedding for a while: throughput and memory of the full pipeline.
    emb = cs.embedder()
    cache = EmbeddingCache(Path(os.environ["CODESIGHT_CACHE_DIR"]), emb.name, emb.dim)
    t = time.perf_counter()
    done = 0
    while time.perf_counter() - t < args.embed_seconds:
        rep = index_vectors(cs.store, cs.storage.vectors, emb, cache, limit=256)
        done += rep.embedded
        if not rep.embedded:
            break
    el = time.perf_counter() - t
    print(
        f"\n[embed] {done:,} chunks embedded for real in {el:.0f}s ({done / el:.1f} chunks/s);"
        f" peak RSS {rss_mb():.0f} MB"
    )

    # Stand-in vectors for the rest, then the approximate index.
    t = time.perf_counter()
    rng = np.random.default_rng(7)
    real_ids = [i for (i,) in cs.store.conn.execute("SELECT id FROM chunks WHERE embedded = 1")]
    base = cs.storage.vectors.table().to_arrow().column("vector").combine_chunks()
    base = np.asarray(base.values.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(base), -1)
    pending = cs.store.conn.execute("SELECT id, language, embed_key FROM chunks WHERE embedded = 0").fetchall()
    for k in range(0, len(pending), 20_000):
        part = pending[k : k + 20_000]
        v = base[rng.integers(0, len(base), len(part))] + rng.normal(0, 0.05, (len(part), base.shape[1]))
        v = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
        cache.put_many([(key, vec) for (_, _, key), vec in zip(part, v, strict=False)])  # as a real run leaves it
        cs.storage.vectors.add([i for i, _, _ in part], [lang or "" for _, lang, _ in part], v)
        cs.store.mark_embedded([i for i, _, _ in part])
    cs.storage.vectors.optimize()
    t_fill = time.perf_counter() - t
    t = time.perf_counter()
    built = cs.storage.vectors.ensure_ann()
    print(
        f"[vectors] {len(real_ids):,} real + {len(pending):,} stand-in vectors written in {t_fill:.0f}s;"
        f" ANN index {'built' if built else 'not built'} in {time.perf_counter() - t:.0f}s"
    )
    counts = cs.store.counts()
    disk = cs.store.size_bytes() + cs.storage.vectors.size_bytes()
    print(f"[index] {counts['chunks']:,} chunks, {counts['vectors']:,} vectors; on disk {disk / 1e6:.0f} MB")

    queries = (NL_QUERIES * 3)[: args.queries]
    idents = [
        "QuerySet",
        "Session",
        "Matrix",
        "PreTrainedModel",
        "AutoTokenizer",
        "get_object_or_404",
        "create_engine",
        "simplify",
        "Trainer",
        "select_related",
    ]
    queries = queries[: args.queries - 30] + (idents * 3)
    for q in queries[:5]:
        cs.search(q)
    for mode in ("hybrid", "bm25", "vector"):
        lat = []
        for q in queries:
            t = time.perf_counter()
            cs.search(q, mode=mode)
            lat.append((time.perf_counter() - t) * 1000)
        print(
            f"[query] {mode:<6} over {len(queries)} queries on {counts['chunks']:,} chunks:"
            f" p50 {pct(lat, 50):.1f} ms, p95 {pct(lat, 95):.1f} ms"
        )
    print(f"\n[memory] peak RSS: this process {rss_mb():.0f} MB; CLI child {rss_mb(resource.RUSAGE_CHILDREN):.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
