"""What LanceDB versions left between compactions cost: disk and search time (issue 34, item 18).

    python benchmarks/bench_versions.py [--edits 15,50,100] [--repeat 200]

A copy of codesight's own source is indexed with a deterministic 384-dimension embedder (the full
model's size, without its minutes of CPU: what is measured is the table, not the model). Then, for
each count of edits, that many one-line edits are each followed by an index run, as a watcher
would do; the table's versions, its bytes on disk and the p50/p95 of a vector search are printed,
then the same after a forced compaction. Prints figures only.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from codesight_tui import CodeSight  # noqa: E402


class Embedder:
    name = "bench/hash-384"
    dim = 384
    device = "cpu"
    max_seq_length = 256

    def encode(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.split():
                h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-9)

    def encode_query(self, text):
        return self.encode([text])[0]


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def latency(cs: CodeSight, repeat: int) -> tuple[float, float]:
    times = []
    for i in range(repeat):
        t0 = time.perf_counter()
        cs.search(f"retry failed upload {i % 7}", mode="vector")
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edits", default="15,50,100")
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="codesight-versions-"))
    try:
        for n in (int(x) for x in args.edits.split(",")):
            root = work / f"repo-{n}"
            shutil.copytree(
                HERE.parent / "codesight_tui", root / "codesight_tui", ignore=shutil.ignore_patterns("__pycache__")
            )
            (root / ".git").mkdir()
            cs = CodeSight(
                root, embedder=Embedder(), data_dir=work / f"data-{n}", cache_dir=work / "cache", static_model="off"
            )
            cs.index()
            cs.storage.vectors.optimize(compact=True)
            base_v, base_b = cs.status(check_disk=False)["vector_versions"], dir_bytes(cs.storage.vectors.directory)
            target = root / "codesight_tui" / "core" / "walker.py"
            for i in range(n):
                with open(target, "a") as fh:
                    fh.write(f"# edit {i}\n")
                cs.index(paths=["codesight_tui/core/walker.py"])
            st = cs.status(check_disk=False)
            versions, size = st["vector_versions"], dir_bytes(cs.storage.vectors.directory)
            p50, p95 = latency(cs, args.repeat)
            cs.storage.vectors.optimize(compact=True)
            time.sleep(11)  # past KEEP_VERSIONS_S, so that compaction may drop the old versions
            cs.storage.vectors.optimize(compact=True)
            after_v, after_b = cs.status(check_disk=False)["vector_versions"], dir_bytes(cs.storage.vectors.directory)
            c50, c95 = latency(cs, args.repeat)
            print(
                f"{n:>4} edits ({st['vectors']:,} vectors): versions {base_v} -> {versions}, vectors"
                f" {base_b / 1e6:.2f} -> {size / 1e6:.2f} MB, vector search p50 {p50:.2f} ms p95 {p95:.2f} ms;"
                f" compacted: versions {after_v}, {after_b / 1e6:.2f} MB, p50 {c50:.2f} ms p95 {c95:.2f} ms",
                flush=True,
            )
            cs.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
