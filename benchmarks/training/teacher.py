"""Issue 49: the full model's vectors of the training pairs, for the static tier's distillation term.

    python benchmarks/training/teacher.py [--where start] [--sample N]

Embeds each pair's description and code with the bundled full model, exactly as codesight embeds a
query and a chunk (``core.index.embedder.in_process``: the ONNX export where there is one, the
model's own 256-token window): every pair, or ``--sample N`` of them drawn with a fixed seed (on
this CPU the model embeds about 30 code texts a second, so all 144,514 take about an hour and a half). Vectors go to
``$CODESIGHT_TRAIN_DIR/teacher-<pairs>/{query,doc}-NNNN.npy`` (fp16, 8,192 rows a shard, each written
whole then renamed), so a run stopped anywhere resumes at its first missing shard.
``train_static.py --teacher W`` reads them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
WORK = Path(os.environ.get("CODESIGHT_TRAIN_DIR", Path.home() / ".cache" / "codesight-train"))
SHARD = 8192


def load_pairs(path: Path, where: str) -> list[dict[str, str]]:
    pairs = [json.loads(line) for line in path.read_text().splitlines()]
    if where:
        pairs = [p for p in pairs if p.get("where", "start") in where.split(",")]
    return pairs


def sample(n: int, k: int) -> np.ndarray:
    """Which of ``n`` pairs the teacher embeds: all, or ``k`` drawn with seed 0, in order."""
    return np.arange(n) if not k or k >= n else np.sort(np.random.default_rng(0).choice(n, k, replace=False))


def teacher_dir(pairs_file: Path, where: str, n: int, k: int) -> Path:
    key = hashlib.sha1(f"{pairs_file.stat().st_size}:{where}:{n}:{k}".encode()).hexdigest()[:10]
    return WORK / f"teacher-{key}"


def load(pairs_file: Path, where: str, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(which pairs, their queries' vectors, their docs' vectors)`` as ``main`` made them for
    ``--sample k`` of these ``n`` pairs, or None if not all embedded yet."""
    d = teacher_dir(pairs_file, where, n, k)
    rows = sample(n, k)
    shards = (len(rows) + SHARD - 1) // SHARD
    parts: dict[str, list[np.ndarray]] = {"query": [], "doc": []}
    for side, out in parts.items():
        for j in range(shards):
            f = d / f"{side}-{j:04d}.npy"
            if not f.is_file():
                return None
            out.append(np.load(f))
    return rows, np.concatenate(parts["query"]), np.concatenate(parts["doc"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=Path, default=WORK / "pairs.jsonl")
    ap.add_argument("--where", default="start")
    ap.add_argument("--sample", type=int, default=0, help="embed this many pairs, drawn with a fixed seed")
    args = ap.parse_args()

    from codesight_tui.core.config import Settings
    from codesight_tui.core.index.embedder import in_process
    from codesight_tui.core.process.models import model_info

    everything = load_pairs(args.pairs, args.where)
    pairs = [everything[i] for i in sample(len(everything), args.sample)]
    d = teacher_dir(args.pairs, args.where, len(everything), args.sample)
    d.mkdir(parents=True, exist_ok=True)
    emb = in_process(model_info(Settings()), "cpu", 32)
    print(f"{len(pairs):,} pairs -> {d} ({emb.name}, {emb.max_seq_length} tokens)", flush=True)
    t0 = time.perf_counter()
    for side in ("query", "doc"):
        for k in range(0, len(pairs), SHARD):
            f = d / f"{side}-{k // SHARD:04d}.npy"
            if f.is_file():
                continue
            t1 = time.perf_counter()
            vecs = emb.encode([p[side] for p in pairs[k : k + SHARD]]).astype(np.float16)
            tmp = f.with_suffix(".tmp.npy")
            np.save(tmp, vecs)
            tmp.rename(f)
            print(
                f"{side} {k + len(vecs):,}/{len(pairs):,}: {len(vecs) / (time.perf_counter() - t1):.0f} texts/s",
                flush=True,
            )
    print(f"done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
