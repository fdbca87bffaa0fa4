"""Core engine benchmark on a real mid-size codebase: prints figures, never pass/fail.

    python benchmarks/bench_core.py                 # Django 5.1.4 sdist (fetched from PyPI once)
    python benchmarks/bench_core.py --corpus DIR    # any tree

Reports: time until lexical search works, total index time, embedding throughput (pipeline vs a
bare SentenceTransformer.encode of the same texts, same run), no-op and one-file-changed re-index
(in-process and as a fresh CLI process), hybrid query latency p50/p95 over >= 100 queries, peak RSS.

The shared embedding cache under benchmarks/.data/cache is kept between runs, so only the first
run pays for embedding the whole corpus; the throughput figures always use an empty cache.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
DJANGO = "django==5.1.4"
EXCLUDE = ["locale/", "/tests/"]

NL_QUERIES = [
    "parse a date string into a datetime",
    "escape html special characters",
    "read settings from environment variables",
    "hash a password with a salt",
    "check whether a password matches",
    "send an email message",
    "paginate a list of items",
    "compress the response body",
    "generate a random secret token",
    "validate an email address",
    "cache a value with a timeout",
    "convert a string to a url slug",
    "open a database connection",
    "roll back a transaction on error",
    "render a template with a context",
    "load templates from the file system",
    "serialize objects to json",
    "parse the query string of a request",
    "set a cookie on the response",
    "sign a value to detect tampering",
    "redirect to another url",
    "resolve a url path to a view",
    "register a signal handler",
    "format a number with separators",
    "translate a message into the active language",
    "detect the timezone of a datetime",
    "upload a file to storage",
    "compute the size of a file",
    "build a sql where clause",
    "order query results by a field",
    "count rows matching a filter",
    "migrate the database schema",
    "create a table for a model",
    "add a column to a table",
    "run a management command",
    "log an error with a traceback",
    "handle a 404 not found error",
    "protect against cross site request forgery",
    "check user permissions",
    "log a user in",
    "log a user out",
    "reset a forgotten password",
    "store session data",
    "expire old sessions",
    "minify static files",
    "collect static files",
    "find the path of a static asset",
    "validate a form field",
    "clean form input data",
    "display form errors",
    "limit the number of requests",
    "retry a failed operation",
    "split a string into tokens",
    "wrap long text lines",
    "normalize unicode text",
    "compare two version numbers",
    "read a file in chunks",
    "lazy evaluation of an object",
    "thread safe lazy initialization",
    "decorator that caches a method result",
]


def rss_mb(who=resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def fetch_django() -> Path:
    target = DATA / "corpus" / "Django-5.1.4"
    if target.is_dir():
        return target
    dl = DATA / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", DJANGO, "-d", str(dl)],
        check=True,
    )
    (DATA / "corpus").mkdir(parents=True, exist_ok=True)
    with tarfile.open(next(dl.glob("*jango-5.1.4.tar.gz"))) as tf:
        tf.extractall(DATA / "corpus", filter="data")
    return target


def lexical_ready(corpus: Path, query: str):
    """Index ``corpus`` without vectors and run one BM25 query: ``(cs, report, hits, seconds)``,
    the seconds from start until lexical search answers."""
    from codesight_tui import CodeSight

    t0 = time.perf_counter()
    cs = CodeSight(corpus)
    report = cs.index(embed=False)
    hits = cs.search(query, mode="bm25")
    return cs, report, hits, time.perf_counter() - t0


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--exclude", action="append", default=None)
    ap.add_argument("--sample", type=int, default=512, help="chunks for the throughput comparison")
    ap.add_argument("--queries", type=int, default=120)
    ap.add_argument("--no-full-embed", action="store_true", help="skip embedding the whole corpus")
    ap.add_argument(
        "--queries-only",
        action="store_true",
        help="only the query latencies, on the index the last run left (updated first)",
    )
    args = ap.parse_args()

    corpus = args.corpus.resolve() if args.corpus else fetch_django()
    exclude = args.exclude if args.exclude is not None else (EXCLUDE if args.corpus is None else [])
    run_dir = DATA / "run"
    if not args.queries_only:
        shutil.rmtree(run_dir, ignore_errors=True)
    os.environ["CODESIGHT_DATA_DIR"] = str(run_dir / "data")
    os.environ["CODESIGHT_CACHE_DIR"] = str(DATA / "cache")
    os.environ["CODESIGHT_EXCLUDE"] = __import__("json").dumps(exclude)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch

    from codesight_tui import CodeSight
    from codesight_tui.core.index.cache import EmbeddingCache
    from codesight_tui.core.index.indexer import index_vectors
    from codesight_tui.core.ingest.chunker import doc_text, embed_text

    print(f"corpus: {corpus}  exclude={exclude}")
    print(f"machine: {os.cpu_count()} cpus, torch {torch.__version__}, threads {torch.get_num_threads()}")

    if args.queries_only:
        cs = CodeSight(corpus)
        cs.index()
        query_latency(cs, args.queries)
        print(f"\n[memory] peak RSS: this process {rss_mb():.0f} MB")
        return 0

    # 1. Lexical phase: how long until search answers?
    cs, lex, first, t_lexical = lexical_ready(corpus, "render a template")
    print(
        f"\n[lexical] {lex.files:,} files, {lex.chunks:,} chunks; lexical search works after {t_lexical:.2f}s"
        f" (first query returned {len(first)} hits)"
    )

    # 2. Throughput: the pipeline versus a bare encode of the same texts, same run, empty cache.
    t_load, emb = timed(cs.embedder)
    print(f"\n[model] loaded {emb.name} on {emb.device} in {t_load:.2f}s")
    rows = cs.store.pending(args.sample)
    # The pipeline embeds each chunk's text and, where it has comments or docstrings, its doc view:
    # the bare encode gets the same texts.
    chunk_texts = [embed_text(r.path, r.scope, r.content) for r in rows]
    doc_texts = [d for r in rows if (d := doc_text(r.path, r.scope, r.content, r.language)) is not None]
    texts = chunk_texts + doc_texts
    emb.model.encode(texts[:32], batch_size=32)  # warm-up
    bare_encode = lambda tx: emb.model.encode(tx, batch_size=emb.batch_size, normalize_embeddings=True)  # noqa: E731
    t_bare1, _ = timed(lambda: bare_encode(texts))
    tmp_cache = EmbeddingCache(Path(tempfile.mkdtemp()), emb.name, emb.dim)
    t_pipe, rep = timed(lambda: index_vectors(cs.store, cs.storage.vectors, emb, tmp_cache, limit=len(rows)))
    t_bare2, _ = timed(lambda: bare_encode(texts))
    bare = len(texts) / ((t_bare1 + t_bare2) / 2)
    pipe = (rep.embedded + rep.doc_views) / t_pipe
    print(
        f"[throughput] {len(rows)} chunks + {len(doc_texts)} doc views = {len(texts)} texts: pipeline {pipe:.1f}"
        f" texts/s ({rep.embedded / t_pipe:.1f} chunks/s), bare encode {bare:.1f} texts/s"
        f" (runs {len(texts) / t_bare1:.1f} / {len(texts) / t_bare2:.1f}); ratio {pipe / bare:.2f}"
    )
    t_chunks, _ = timed(lambda: bare_encode(chunk_texts))
    t_docs, _ = timed(lambda: bare_encode(doc_texts))
    print(
        f"[doc views] {len(doc_texts) / len(rows):.0%} of chunks have one; bare encode of the chunks' texts"
        f" {t_chunks:.1f}s, of the doc views {t_docs:.1f}s: doc views add {t_docs / t_chunks:.0%} embedding time"
    )

    # 3. The rest of the corpus (shared cache: only the first benchmark run embeds for real).
    if not args.no_full_embed:
        t_full, full = timed(lambda: cs.index())
        total = t_lexical + t_pipe + t_full
        print(
            f"\n[full] vectors for the rest: {full.embedded:,} embedded, {full.cache_hits:,} from cache in"
            f" {t_full:.1f}s; total index time {total:.1f}s"
        )
    counts = cs.store.counts()
    print(
        f"[index] {counts['chunks']:,} chunks, {counts['vectors']:,} vectors; on disk"
        f" {(cs.store.size_bytes() + cs.storage.vectors.size_bytes()) / 1e6:.1f} MB"
    )

    # 4. No-op re-index, in-process and as a fresh CLI process.
    noop = [timed(lambda: cs.index())[0] for _ in range(3)]
    env = dict(os.environ)
    cli_noop, _ = timed(
        lambda: subprocess.run(
            [sys.executable, "-m", "codesight_tui", "index", str(corpus)], env=env, capture_output=True, check=True
        )
    )
    print(
        f"\n[no-op] re-index of {counts.get('files', lex.files):,} files:"
        f" in-process median {statistics.median(noop) * 1000:.0f} ms; fresh CLI process {cli_noop:.2f}s"
    )

    # 5. One file changed: append a function, re-index, then restore it.
    victim = sorted(corpus.rglob("*.py"), key=lambda p: p.stat().st_size)[len(list(corpus.rglob("*.py"))) // 2]
    original = victim.read_bytes()
    try:
        victim.write_bytes(original + b"\n\ndef codesight_bench_marker(x):\n    return x * 2\n")
        t_one, one = timed(lambda: cs.index())
        victim.write_bytes(original + b"\n\ndef codesight_bench_marker_cli(x):\n    return x * 3\n")
        cli_one, _ = timed(
            lambda: subprocess.run(
                [sys.executable, "-m", "codesight_tui", "index", str(corpus)], env=env, capture_output=True, check=True
            )
        )
    finally:
        victim.write_bytes(original)
        cs.index()
    print(
        f"[one file] {victim.relative_to(corpus)}: in-process (model warm) {t_one * 1000:.0f} ms"
        f" ({one.embedded} chunk(s) embedded); fresh CLI process {cli_one:.2f}s (includes loading the model)"
    )

    query_latency(cs, args.queries)
    print(
        f"\n[memory] peak RSS: this process {rss_mb():.0f} MB; CLI children {rss_mb(resource.RUSAGE_CHILDREN):.0f} MB"
    )
    return 0


def query_latency(cs, n_queries: int) -> None:
    """6. Query latency, warm, query embedding included."""
    counts = cs.store.counts()
    rng = random.Random(7)
    scopes = [s for (s,) in cs.store.conn.execute("SELECT DISTINCT scope FROM chunks WHERE scope != '' ORDER BY id")]
    idents = [s.split(" > ")[-1].split(" ", 1)[-1].split(",")[0] for s in rng.sample(scopes, min(len(scopes), 60))]
    queries = (NL_QUERIES + idents)[: max(n_queries, 100)]
    while len(queries) < n_queries:
        queries.append(rng.choice(NL_QUERIES) + " " + rng.choice(idents))
    for q in queries[:5]:
        cs.search(q)
    stack = cs.settings
    for mode in ("hybrid", "hybrid-plain", "bm25", "vector"):
        cs.settings = stack.model_copy(update={"ranking": "plain"}) if mode == "hybrid-plain" else stack
        lat = []
        for q in queries:
            t = time.perf_counter()
            cs.search(q, mode=mode.split("-")[0])
            lat.append((time.perf_counter() - t) * 1000)
        print(
            f"[query] {mode:<12} over {len(queries)} queries on {counts['chunks']:,} chunks:"
            f" p50 {pct(lat, 50):.1f} ms, p95 {pct(lat, 95):.1f} ms"
        )


if __name__ == "__main__":
    raise SystemExit(main())
