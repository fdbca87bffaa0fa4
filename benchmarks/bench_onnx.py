"""The full model on a CPU: sentence-transformers on torch against the ONNX exports, in one run.

    python benchmarks/bench_onnx.py [--sample 600] [--corpus DIR] [--backends torch,onnx,onnx-int8]

The corpus is bench_scale.py's 10,000-file tree (Django, SQLAlchemy, SymPy and Transformers sdists,
fetched once). It is indexed lexically to count its chunks; ``--sample`` of them, chosen with a
fixed seed, are embedded by each backend in a fresh process of its own, one after another, through
codesight's own embedders (the ones ``index`` uses). Per backend: the one-off export, the model's
load time, texts/s, and the vectors' agreement with torch's (cosine, and how many of each text's
10 nearest neighbours among the sample stay the same). The time to full semantic on the whole tree
is the chunk count over that rate: embedding all of it for real takes hours per backend here.

Retrieval quality of each backend is the devset's, from ``bash benchmarks/eval_devset.sh --mode
hybrid`` with ``CODESIGHT_EMBEDDING_BACKEND`` set (see benchmarks/README.md, "ONNX").
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def child(backend: str, texts_file: Path, out: Path, cache: Path) -> None:
    """One backend in this fresh process: export (if not yet), load, embed; JSON on stdout."""
    from codesight_tui.core.index.embedder import in_process
    from codesight_tui.core.index.onnx_model import export, for_backend
    from codesight_tui.core.ingest.tokens import resolve_model

    texts = json.loads(texts_file.read_text())
    info = for_backend(resolve_model("minilm"), backend, "cpu", False, cache)
    export_s = export(info, Path(info.export_dir)) if info.export_dir else 0.0
    t = time.perf_counter()
    emb = in_process(info, "cpu")
    emb.encode(texts[:2])  # the first call's one-off setup is part of loading
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    vecs = emb.encode(texts)
    enc_s = time.perf_counter() - t
    q = []
    for text in texts[:50]:
        t = time.perf_counter()
        emb.encode_query(text[:80])
        q.append((time.perf_counter() - t) * 1000)
    np.save(out, vecs)
    print(
        json.dumps(
            {
                "export_s": export_s,
                "load_s": load_s,
                "rate": len(texts) / enc_s,
                "enc_s": enc_s,
                "batch": emb.batch_size,
                "query_ms": sorted(q)[len(q) // 2],
            }
        )
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=600)
    ap.add_argument("--corpus", type=Path)
    ap.add_argument("--backends", default="torch,onnx,onnx-int8")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        backend, texts_file, out, cache = args.child
        child(backend, Path(texts_file), Path(out), Path(cache))
        return 0

    from bench_scale import fetch

    from codesight_tui import CodeSight
    from codesight_tui.core.config import Settings
    from codesight_tui.core.index.indexer import embed_text

    corpus = args.corpus or fetch()
    print(f"corpus: {corpus}; machine: {os.cpu_count()} cpus; load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-onnx-") as tmp_s:
        tmp = Path(tmp_s)
        settings = Settings(data_dir=tmp / "data", cache_dir=tmp / "cache", static_model="off")
        t = time.perf_counter()
        with CodeSight(corpus, settings=settings) as cs:
            rep = cs.index(embed=False, static=False)
            rows = cs.store.conn.execute("SELECT path, scope, content FROM chunks ORDER BY id").fetchall()
        print(f"lexical index: {rep.files:,} files, {len(rows):,} chunks in {time.perf_counter() - t:.1f} s")
        random.seed(args.seed)
        texts = [embed_text(*r) for r in random.sample(rows, min(args.sample, len(rows)))]
        (tmp / "texts.json").write_text(json.dumps(texts))
        results: dict[str, dict] = {}
        vecs: dict[str, np.ndarray] = {}
        for backend in args.backends.split(","):
            out = tmp / f"{backend}.npy"
            proc = subprocess.run(
                [sys.executable, __file__, "--child", backend, str(tmp / "texts.json"), str(out), str(tmp / "cache")],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONWARNINGS": "ignore"},
            )
            results[backend] = json.loads(proc.stdout.strip().splitlines()[-1])
            vecs[backend] = np.load(out)
            r = results[backend]
            print(
                f"  {backend:10s} export {r['export_s']:5.1f} s  load {r['load_s']:5.2f} s  {r['rate']:6.1f} texts/s"
                f" (batch {r['batch']})  query p50 {r['query_ms']:.1f} ms",
                flush=True,
            )
    ref = vecs.get("torch")
    print(f"\n{len(texts):,} sampled chunks of {len(rows):,}; time to full semantic = chunks / rate + load")
    print(
        f"{'backend':10s} {'texts/s':>8s} {'vs torch':>8s} {'load s':>7s} {'full tree':>10s} {'cos mean':>9s}"
        f" {'cos min':>8s} {'nn@10':>6s}"
    )
    for backend, r in results.items():
        full_h = (len(rows) / r["rate"] + r["load_s"]) / 3600
        cos_mean = cos_min = nn = float("nan")
        if ref is not None:
            v = vecs[backend]
            cos = (v * ref).sum(1)
            cos_mean, cos_min = float(cos.mean()), float(cos.min())
            a, b = ref @ ref.T, v @ v.T
            nn = float(
                np.mean([len(set(np.argsort(-a[i])[1:11]) & set(np.argsort(-b[i])[1:11])) / 10 for i in range(len(v))])
            )
        speed = r["rate"] / results["torch"]["rate"] if "torch" in results else float("nan")
        print(
            f"{backend:10s} {r['rate']:8.1f} {speed:7.2f}x {r['load_s']:7.2f} {full_h:8.2f} h {cos_mean:9.4f}"
            f" {cos_min:8.4f} {nn:6.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
