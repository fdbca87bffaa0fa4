"""Issue 49: how much of the full model's gain comes back if it only re-ranks fast mode's answer?

    python benchmarks/rerank_pilot.py --devset | --fold A|B [--top 30] [--weights 0.5,1,2]

Fast mode (BM25 + the static tier) gives its first ``--top`` hits; the full model (the bundled
MiniLM, as codesight embeds a query and a chunk) embeds those hits and the query, and the hits are
re-ordered by RRF of fast mode's order and the full model's cosine order (the full model's list at
each weight of ``--weights``; ``inf`` means the full model's order alone). NDCG@10 is scored as
``codesight eval`` scores it. The chunks' vectors are cached by text under ``--cache`` (default
/tmp/rerank-cache), so every weight and a later run reuse them.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))


def suites(args: argparse.Namespace) -> list[tuple[Path, Path, str]]:
    if args.devset:
        dev = ROOT.parent / "shared/eval/devset"
        src = ROOT / ".cache/devset/src"
        return [
            (dev / "rich.json", src / "rich-13.9.4", ""),
            (dev / "jinja2.json", src / "jinja2-3.1.4", ""),
            (dev / "commander.json", src / "commander-12.1.0/package", ""),
        ]
    from codesight_tui.core.apps.evaluation import load_collection

    found, _ = load_collection(ROOT / ".cache/polyglot", fold=args.fold)
    return [(s.queries, s.root, s.prefix) for s in found]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devset", action="store_true")
    ap.add_argument("--fold")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--weights", default="0.5,1,2,inf")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/rerank-cache"))
    args = ap.parse_args()

    from codesight_tui.core.apps.evaluation import load_queries, score
    from codesight_tui.core.config import Settings
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.index.embedder import in_process
    from codesight_tui.core.ingest.chunker import embed_text
    from codesight_tui.core.modes import Vectors
    from codesight_tui.core.process.models import model_info

    emb = in_process(model_info(Settings()), "cpu", 32)
    args.cache.mkdir(parents=True, exist_ok=True)
    weights = [float(w) for w in args.weights.split(",")]
    per_file: dict[str, list[float]] = {"fast": [], **{f"w={w:g}": [] for w in weights}}  # each file's mean
    cats: dict[str, dict[str, list[float]]] = {}
    embedded = 0
    t0 = time.perf_counter()
    for queries_file, root, prefix in suites(args):
        queries = load_queries(queries_file, prefix)
        cs = CodeSight(root)
        cs.index(embed=False, static=True)
        rows: dict[str, list[float]] = {k: [] for k in per_file}
        for q in queries:
            hits = list(cs.search(q.text, top_k=args.top, mode="hybrid", vectors=Vectors.STATIC))
            texts = [embed_text(h.path, h.scope, h.content) for h in hits]
            keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
            missing = [(k, t) for k, t in zip(keys, texts, strict=True) if not (args.cache / f"{k}.npy").is_file()]
            if missing:
                vecs = emb.encode([t for _, t in missing])
                embedded += len(missing)
                for (k, _), v in zip(missing, vecs, strict=True):
                    np.save(args.cache / f"{k}.npy", v.astype(np.float32))
            qv = emb.encode_query(q.text)
            sims = np.array([float(np.load(args.cache / f"{k}.npy") @ qv) for k in keys]) if keys else np.zeros(0)
            model_rank = {i: r for r, i in enumerate(np.argsort(-sims, kind="stable"), start=1)}
            variants = {"fast": hits}
            for w in weights:
                if w == float("inf"):
                    order = sorted(range(len(hits)), key=lambda i: model_rank[i])
                else:
                    fused = {i: 1 / (60 + i + 1) + w / (60 + model_rank[i]) for i in range(len(hits))}
                    order = sorted(range(len(hits)), key=lambda i: (-fused[i], i))
                variants[f"w={w:g}"] = [hits[i] for i in order]
            for name, ranked in variants.items():
                nd = score(ranked[:10], q.targets)["ndcg@10"]
                rows[name].append(nd)
                cats.setdefault(name, {}).setdefault(q.category, []).append(nd)
        cs.close()
        for name, vals in rows.items():
            per_file[name].append(float(np.mean(vals)))
        print(f"{root.name}: " + "  ".join(f"{n} {np.mean(v):.3f}" for n, v in rows.items()), flush=True)
    print(f"\n{embedded:,} chunks embedded in {time.perf_counter() - t0:.0f} s")
    for name, files in per_file.items():
        c = "  ".join(f"{k} {np.mean(v):.3f}" for k, v in sorted(cats[name].items()))
        print(f"{name:>8}: NDCG@10 {np.mean(files):.4f}   (per query, by category: {c})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
