"""Issue 51: what the symbols cost the lexical phase's workers, file work only.

    python benchmarks/bench_extract.py [--corpus DIR] [--files 2000] [--rounds 3] [--variant DIR]

``prepare_batch`` (read, mask secrets, parse, chunk, and the symbols) over ``--files`` of the
corpus's walked files (seeded), in one process, as an indexing worker runs it: once to warm up,
then three times, the best CPU kept. Measured without symbols (``extract_rows`` replaced by
nothing), with them, and with them from ``--variant`` (a copy of the package with a trial change,
put first on ``PYTHONPATH``), each in its own process, alternated ``--rounds`` times.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

RUN = """
import gc, random, sys, time
from pathlib import Path
from codesight_tui.core.index import indexer
from codesight_tui.core.ingest.chunker import Chunker
from codesight_tui.core.ingest.tokens import DEFAULT_MODEL, TokenCounter, resolve_model
from codesight_tui.core.ingest.walker import walk
entries = list(walk(Path(sys.argv[1]), max_file_size=1_000_000, exclude=[]))
random.Random(0).shuffle(entries)
info = resolve_model(DEFAULT_MODEL)
chunker = Chunker(TokenCounter(info.tokenizer_file), info.max_seq_length - 2)
if sys.argv[3] == "without":
    indexer.extract_rows = lambda *a: None
gc.freeze()
gc.set_threshold(20_000, 20, 20)
batches = list(indexer.file_batches(entries[: int(sys.argv[2])]))
best = float("inf")
for k in range(4):
    t = time.process_time()
    for b in batches:
        indexer.prepare_batch(chunker, b)
    if k:
        best = min(best, time.process_time() - t)
print(f"{best:.2f}")
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=ROOT / "benchmarks" / ".data" / "scale" / "corpus")
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variant", type=Path, default=None)
    args = ap.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"no corpus at {args.corpus}: benchmarks/bench_scale.py makes the 10,000-file tree")
    kinds = [("without symbols", ROOT, "without"), ("with symbols", ROOT, "with")]
    if args.variant is not None:
        kinds.append((f"with symbols, {args.variant}", args.variant.resolve(), "with"))
    best: dict[str, float] = {}
    for r in range(args.rounds):
        for label, path, mode in kinds:
            env = dict(os.environ, PYTHONPATH=str(path))
            out = subprocess.run(
                [sys.executable, "-c", RUN, str(args.corpus), str(args.files), mode],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            cpu = float(out.stdout.split()[-1])
            best[label] = min(best.get(label, cpu), cpu)
            print(f"round {r + 1}: {label}: {cpu:.2f} s of CPU", flush=True)
    base = best["without symbols"]
    for label, cpu in best.items():
        print(f"best, {label}: {cpu:.2f} s (x{cpu / base:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
