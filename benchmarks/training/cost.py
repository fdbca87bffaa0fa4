"""Issue 49's costs of a static model: a query's embedding (p50/p95, ms) and chunks embedded per
second, for the shipped model and the distilled one, on the same texts in the same run.

    python benchmarks/training/cost.py [--chunks 20000]

Texts: codesight's own source, cut by its chunker and written as the index embeds them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

QUERIES = [
    "where do we retry failed uploads",
    "RetryPolicy",
    "evict the least recently used entry when full",
    "parse the config file",
    "open the hit in the editor at its line",
    "compute haversine distance",
    "walk the tree and skip ignored files",
    "stream the answer from the LLM",
]


def texts(n: int) -> list[str]:
    from codesight_tui.core.ingest.chunker import Chunker, embed_text
    from codesight_tui.core.ingest.tokens import TokenCounter, resolve_model
    from codesight_tui.core.languages import detect_language

    info = resolve_model("minilm")
    chunker = Chunker(TokenCounter(info.tokenizer_file), info.max_seq_length - 2)
    out: list[str] = []
    while len(out) < n:
        for path in sorted((ROOT / "codesight_tui").rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            for c in chunker.chunk(rel, detect_language(rel), path.read_text()):
                out.append(embed_text(rel, c.scope, c.content))
    return out[:n]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=20_000)
    args = ap.parse_args()
    from codesight_tui.core.config import Settings
    from codesight_tui.core.index.static import PACKAGED_DIR, StaticEmbedder
    from codesight_tui.core.process.models import model_info, static_model_path

    distilled = static_model_path(Settings(static_model="distilled"), model_info(Settings()))  # the fleet's
    chunks = texts(args.chunks)
    for name, path in (("shipped", PACKAGED_DIR), ("distilled", distilled)):
        model = StaticEmbedder(path)
        for q in QUERIES:  # warm
            model.encode_query(q)
        times = []
        for _ in range(25):
            for q in QUERIES:
                t = time.perf_counter()
                model.encode_query(q)
                times.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        for k in range(0, len(chunks), 512):
            model.encode(chunks[k : k + 512])
        rate = len(chunks) / (time.perf_counter() - t)
        size = (path / "model.safetensors").stat().st_size / 1e6
        print(
            f"{name:9} query p50 {statistics.median(times):.3f} ms, p95 {sorted(times)[int(0.95 * len(times))]:.3f} ms;"
            f" {rate:,.0f} chunks/s over {len(chunks):,}; model.safetensors {size:.1f} MB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
