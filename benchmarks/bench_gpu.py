"""GPU embedding throughput: the codesight pipeline against a bare SentenceTransformer.encode.

    python benchmarks/bench_gpu.py --corpus DIR --encode          # model only (no LanceDB needed)
    python benchmarks/bench_gpu.py --corpus DIR --index           # end to end: codesight index
    python benchmarks/bench_gpu.py --corpus DIR --encode --index  # both

``--encode`` chunks the corpus exactly as indexing does, then embeds the same texts (the text
indexing embeds: file + scope header + code) with (a) a bare ``SentenceTransformer.encode`` in fp16
at batch 256, the issue's reference, and (b) codesight's embedder, in the same run, and prints
chunks/s and their ratio, a few batch-size / tokenizer-thread variants, and the cosine of the fp16
vectors to fp32 ones. ``--index`` runs the whole two-phase index of the corpus through the Python
API (the code the CLI runs) with an empty data directory and an empty embedding cache, and prints
lexical time, embedding chunks/s, the ANN build, and hybrid query latency. Prints figures, never
pass/fail. It runs on a CPU too (slowly; use ``--texts`` to keep it short).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUERIES = [
    "load pretrained weights from a checkpoint",
    "split text into tokens",
    "rotary position embedding",
    "beam search decoding",
    "attention mask for padding",
    "save the model to a directory",
    "learning rate schedule",
    "convert a tensor to half precision",
    "download a file from the hub",
    "cache key value states",
    "layer normalization",
    "top k sampling of logits",
    "resize the token embeddings",
    "gradient checkpointing",
    "parse command line arguments",
    "compute the loss for language modeling",
    "batch collate function",
    "quantize a linear layer",
    "warn about a deprecated argument",
    "read a json config file",
]


def corpus_texts(root: Path, info, limit: int) -> list[str]:
    """The unique texts indexing would embed for ``root``, in walk order, at most ``limit``."""
    from codesight_tui.core.ingest.chunker import Chunker, embed_text
    from codesight_tui.core.ingest.tokens import TokenCounter
    from codesight_tui.core.ingest.walker import read_text, walk
    from codesight_tui.core.languages import detect_language

    chunker = Chunker(TokenCounter(info.tokenizer_file), info.max_seq_length - 2)
    seen: dict[str, None] = {}
    files = []
    for e in walk(root):
        text, _ = read_text(e.abs_path)
        if text is not None:
            files.append((e.rel_path, detect_language(e.rel_path), text))
    for k in range(0, len(files), 200):
        for chunks in chunker.chunk_many(files[k : k + 200]):
            for c in chunks:
                seen.setdefault(embed_text(c.path, c.scope, c.content))
        if len(seen) >= limit:
            break
    return list(seen)[:limit]


def best_of(n: int, fn) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def run_encode(args, info) -> None:
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from codesight_tui.core.index.embedder import SentenceTransformerEmbedder, tokenizer_threads

    t = time.perf_counter()
    texts = corpus_texts(Path(args.corpus), info, args.texts)
    chars = statistics.mean(len(x) for x in texts)
    print(
        f"texts: {len(texts):,} unique chunk texts from {args.corpus} (mean {chars:.0f} chars), "
        f"chunked in {time.perf_counter() - t:.1f} s",
        flush=True,
    )

    emb = SentenceTransformerEmbedder(info, args.device)
    emb.overlap = emb.overlap or args.overlap
    dev = emb.device
    name = torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"
    print(
        f"device: {dev} ({name}); torch {torch.__version__}; cpu cores {os.cpu_count()}; "
        f"tokenizer threads {tokenizer_threads()}; batch {emb.batch_size}",
        flush=True,
    )

    bare = SentenceTransformer(info.load_from, device=dev)
    if dev == "cuda":
        bare.half()

    def bare_encode():
        # as a fresh process runs it: the Rust tokenizer's own parallelism on (codesight's
        # embedder turns it off and tokenises in its own threads)
        os.environ["TOKENIZERS_PARALLELISM"] = "true"
        try:
            bare.encode(
                texts, batch_size=256, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
            sync()
        finally:
            os.environ["TOKENIZERS_PARALLELISM"] = "false"

    def ours(step: int = 4096):  # the indexer hands the embedder windows of this size on a GPU
        for k in range(0, len(texts), step):
            emb.encode(texts[k : k + step])
        sync()

    bare.encode(texts[:512], batch_size=256)  # warm-up: kernels, allocator
    emb.encode(texts[:512])
    t_bare = best_of(args.repeat, bare_encode)
    t_ours = best_of(args.repeat, ours)
    n = len(texts)
    print(
        f"bare SentenceTransformer.encode ({'fp16 on cuda' if dev == 'cuda' else dev}, batch 256): {n / t_bare:,.0f} chunks/s ({t_bare:.2f} s)"
    )
    print(
        f"codesight embedder (batch {emb.batch_size}, {tokenizer_threads()} tokenizer threads): "
        f"{n / t_ours:,.0f} chunks/s ({t_ours:.2f} s)"
    )
    print(f"ratio codesight / bare: {t_bare / t_ours:.2f}", flush=True)

    if emb.overlap and args.variants:
        for threads in sorted({4, tokenizer_threads(), 12, min(15, (os.cpu_count() or 2))}):
            for bs in (256, 512):
                emb._tok_pool = ThreadPoolExecutor(threads)
                emb.batch_size = bs
                emb.encode(texts[: bs * 2])  # warm the new pool's tokenizers and this batch shape
                tv = best_of(1, ours)
                print(f"  variant: batch {bs:5d}, {threads:2d} threads: {n / tv:8,.0f} chunks/s", flush=True)
        emb._tok_pool, emb.batch_size = None, SentenceTransformerEmbedder(info, args.device).batch_size

        # What the CPU side alone can feed: tokenising every text in the pool, no model.
        bs = emb.batch_size
        for threads in (1, tokenizer_threads()):
            pool = ThreadPoolExecutor(threads)
            emb._tok_pool = pool
            tt = best_of(
                1, lambda pool=pool: list(pool.map(emb._features, [texts[k : k + bs] for k in range(0, n, bs)]))
            )
            print(f"tokenising alone ({threads} threads): {n / tt:,.0f} texts/s")
        emb._tok_pool = None

    # fp16 quality: the same texts through the fp32 model on the same device.
    sample = texts[: min(2000, n)]
    v16 = emb.encode(sample)
    ref16 = bare.encode(sample, batch_size=256, normalize_embeddings=True, convert_to_numpy=True)
    if dev == "cuda":
        full = SentenceTransformer(info.load_from, device=dev).float()
        v32 = full.encode(sample, batch_size=256, normalize_embeddings=True, convert_to_numpy=True)
        c32 = (v16 * v32).sum(1)
        print(f"cosine fp16 (codesight) vs fp32: mean {c32.mean():.5f}, min {c32.min():.5f} over {len(sample):,} texts")
    c = (v16 * np.asarray(ref16, dtype=np.float32)).sum(1)
    print(f"cosine codesight vs bare encode: mean {c.mean():.6f}, min {c.min():.6f}", flush=True)


def model_only_rss(info, args) -> float:
    """Peak RSS (MB) of a fresh process that loads the embedder and embeds 2,000 short texts: what
    the model and its runtime (on a GPU, CUDA's libraries) cost before any index work. Read from
    VmHWM: a child's ru_maxrss starts from its parent's, since the kernel carries it across exec."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from codesight_tui.core.index.embedder import SentenceTransformerEmbedder;"
        "from codesight_tui.core.ingest.tokens import resolve_model;"
        "e = SentenceTransformerEmbedder(resolve_model(sys.argv[2]), sys.argv[3]);"
        "e.encode([f'def f{i}(x):\\n    return x + {i}' for i in range(2000)]);"
        "print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')) / 1024)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).resolve().parents[1]), info.load_from, args.device],
        capture_output=True,
        text=True,
    )
    try:
        return float(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return float("nan")


def run_index(args, info) -> None:
    from codesight_tui import CodeSight
    from codesight_tui.core.config import Settings

    home = Path(tempfile.mkdtemp(prefix="codesight-gpu-"))
    settings = Settings(
        data_dir=home / "data", cache_dir=home / "cache", embedding_model=info.load_from, device=args.device
    )
    marks: dict[str, float] = {}

    def progress(p) -> None:
        now = time.perf_counter()
        if p.phase == "embed":
            marks.setdefault("embed_start", now)
            if p.done and p.done >= p.total:
                marks.setdefault("embed_end", now)
        elif p.phase == "lexical":
            marks["lexical"] = now

    cs = CodeSight(args.corpus, settings=settings, lexical_processes=True)  # as the CLI runs it
    t0 = time.perf_counter()
    r = cs.index(progress=progress)
    wall = time.perf_counter() - t0
    emb_loop = marks.get("embed_end", t0 + wall) - marks.get("embed_start", t0)
    print(
        f"index (empty data dir and cache): {r.files:,} files, {r.chunks:,} chunks; lexical {r.lexical_seconds:.1f} s; "
        f"model load + embed + ANN {r.embed_seconds:.1f} s; total {wall:.1f} s"
    )
    print(
        f"  embedded {r.embedded:,} chunks ({r.cache_hits:,} cache hits) in {emb_loop:.1f} s of embedding loop: "
        f"{r.embedded / emb_loop:,.0f} chunks/s end to end (read SQLite -> tokenise -> model -> cache -> LanceDB -> mark)"
    )
    tail = wall - (marks.get("embed_end", t0 + wall) - t0)
    print(f"  after the last batch (compaction + ANN index): {tail:.1f} s; device {cs.embedder().device}", flush=True)
    print(
        f"  peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB; "
        f"a process that only loads the model on {args.device} and embeds 2,000 texts: {model_only_rss(info, args):,.0f} MB",
        flush=True,
    )

    t = time.perf_counter()
    r2 = cs.index(force=True)
    print(
        f"index --force (warm cache): {time.perf_counter() - t:.1f} s, embedded {r2.embedded}, cache hits {r2.cache_hits:,}"
    )

    def p50(fn) -> tuple[float, float]:
        for q in QUERIES[:3]:
            fn(q)
        lat = []
        for _ in range(3):
            for q in QUERIES:
                t = time.perf_counter()
                fn(q)
                lat.append((time.perf_counter() - t) * 1000)
        lat.sort()
        return statistics.median(lat), lat[int(len(lat) * 0.95)]

    emb = cs.embedder()
    for label, fn in (
        ("hybrid search", lambda q: cs.search(q)),
        ("query embedding", emb.encode_query),
        ("vector search", lambda q: cs.search(q, mode="vector")),
        ("bm25 search", lambda q: cs.search(q, mode="bm25")),
    ):
        a, b = p50(fn)
        print(f"{label}: p50 {a:.1f} ms, p95 {b:.1f} ms ({len(QUERIES) * 3} queries, {r.chunks:,} chunks)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--model", default=None, help="model name or path (default: the configured one)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--texts", type=int, default=20000, help="texts for the encode comparison")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="passes over the texts (best kept); later passes gain from the tokenizers' word caches",
    )
    ap.add_argument("--encode", action="store_true")
    ap.add_argument("--variants", action="store_true", help="also try batch sizes and thread counts")
    ap.add_argument("--index", action="store_true")
    ap.add_argument("--overlap", action="store_true", help="use the overlapped (GPU) path on a CPU too")
    args = ap.parse_args()

    from codesight_tui.core.config import Settings
    from codesight_tui.core.ingest.tokens import resolve_model

    info = resolve_model(args.model or Settings().embedding_model)
    print(f"model: {info.name} (from {info.load_from})", flush=True)
    if args.encode:
        run_encode(args, info)
    if args.index:
        run_index(args, info)


if __name__ == "__main__":
    main()
