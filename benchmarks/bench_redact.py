"""The secret scan on the lexical hot path: codesight's ``core.redact`` against detect-secrets.

    python benchmarks/bench_redact.py [CORPUS] [--detect-secrets PYTHON]

CORPUS (default: the polyglot set's sources in .cache/polyglot, unpacked by ``benchmarks/eval_polyglot.sh``) is read
once into memory; every text file is then scanned by ``redact`` (what the indexer runs on every
file it reads), and, with ``--detect-secrets PYTHON`` (a Python with detect-secrets installed, e.g.
a scratch venv: ``python -m venv /tmp/ds && /tmp/ds/bin/pip install detect-secrets``), by
detect-secrets' own scan of the same files with its default plugins. Prints MB/s, files/s, what
each found, and the ratio, in one run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from codesight_tui.core.ingest.walker import read_text, walk  # noqa: E402
from codesight_tui.core.redact import redact  # noqa: E402

DETECT = r"""
import json, sys, time
from detect_secrets.core.secrets_collection import SecretsCollection
from detect_secrets.settings import default_settings
paths = [l for l in sys.stdin.read().splitlines() if l]
found = 0
with default_settings():
    t0 = time.perf_counter()
    for p in paths:
        c = SecretsCollection()
        c.scan_file(p)
        found += sum(len(v) for v in c.data.values())
    print(json.dumps({"seconds": time.perf_counter() - t0, "found": found}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default=str(HERE.parent / ".cache" / "polyglot" / "repos"))
    ap.add_argument("--detect-secrets", metavar="PYTHON", help="a Python with detect-secrets installed")
    ap.add_argument("--limit", type=int, default=0, help="at most this many files (0: all)")
    args = ap.parse_args()
    root = Path(args.corpus)
    if not root.is_dir():
        print(f"no corpus at {root}: run `bash benchmarks/eval_polyglot.sh --mode bm25` once, or name a directory")
        return 2
    texts: list[tuple[str, str]] = []
    for e in walk(root):
        text, _ = read_text(e.abs_path)
        if text is not None:
            texts.append((e.abs_path, text))
        if args.limit and len(texts) >= args.limit:
            break
    size = sum(len(t.encode()) for _, t in texts)
    t0 = time.perf_counter()
    masked = files = 0
    for _, text in texts:
        _, n = redact(text)
        masked += n
        files += n > 0
    ours = time.perf_counter() - t0
    print(f"corpus: {len(texts):,} text files, {size / 1e6:.1f} MB ({root})")
    print(
        f"codesight redact: {ours:.2f} s, {size / 1e6 / ours:.0f} MB/s, {len(texts) / ours:,.0f} files/s;"
        f" {masked} secrets masked in {files} files"
    )
    if args.detect_secrets:
        out = subprocess.run(
            [args.detect_secrets, "-c", DETECT], input="\n".join(p for p, _ in texts), capture_output=True, text=True
        )
        if out.returncode != 0:
            print("detect-secrets failed:", out.stderr.strip().splitlines()[-1:])
            return 1
        import json

        res = json.loads(out.stdout)
        print(
            f"detect-secrets scan_file (default plugins): {res['seconds']:.2f} s,"
            f" {size / 1e6 / res['seconds']:.1f} MB/s, {len(texts) / res['seconds']:,.0f} files/s;"
            f" {res['found']} findings"
        )
        print(f"ratio: redact is {res['seconds'] / ours:.0f}x faster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
