"""Issue 35, item 8 (and issue 49's target): nine plain questions about urllib3 and jq, each asking
for one function. Prints the rank of that function in the first 10 hits, per mode.

    python benchmarks/item8.py [--modes bm25,fast] [--data benchmarks/.data/item8]

Sources: the urllib3 2.2.3 sdist and the jq 1.7.1 sources vendored in the ``jq`` 1.8.0 sdist, both
from PyPI (``pip download``, once). Each is indexed with BM25 and the static tier (what
``codesight index --static-only`` builds). A hit counts where its scope's last part defines the
function asked for. The questions are plain descriptions written for issue 35 (its report did not
give its own); none was tuned against.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

QUERIES = [
    ("urllib3", "compute how long to sleep before the next retry", "get_backoff_time"),
    ("urllib3", "backoff time between retries", "get_backoff_time"),
    ("urllib3", "exponential backoff delay for retries", "get_backoff_time"),
    ("urllib3", "return a connection to the pool", "_put_conn"),
    ("urllib3", "put a connection back into the pool after use", "_put_conn"),
    ("jq", "convert a string to a number", "f_tonumber"),
    ("jq", "tonumber builtin parse number from string", "f_tonumber"),
    ("jq", "grow the object hash table when it is full", "jvp_object_rehash"),
    ("jq", "rehash an object into more buckets", "jvp_object_rehash"),
]


def sources(data: Path) -> dict[str, Path]:
    roots = {"urllib3": data / "urllib3-2.2.3", "jq": data / "jq-1.7.1"}
    if all(p.is_dir() for p in roots.values()):
        return roots
    data.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "-q",
            "-d",
            str(data),
            "urllib3==2.2.3",
            "jq==1.8.0",
        ],
        check=True,
    )
    for name in ("urllib3-2.2.3.tar.gz", "jq-1.8.0.tar.gz", "jq-1.8.0/deps/jq-1.7.1.tar.gz"):
        with tarfile.open(data / name) as tar:
            tar.extractall(data, filter="data")
    return roots


def defines(scope: str, name: str) -> bool:
    last = scope.rsplit(" > ", 1)[-1]
    return any(label.split()[-1] == name for label in last.split(", ") if label.split())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default="bm25,fast")
    ap.add_argument("--data", type=Path, default=HERE / ".data" / "item8")
    args = ap.parse_args()

    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.modes import Vectors

    roots = sources(args.data)
    engines = {}
    for repo, root in roots.items():
        engines[repo] = CodeSight(root)
        engines[repo].index(embed=False, static=True)
    modes = args.modes.split(",")
    found = dict.fromkeys(modes, 0)
    print(f"{'query':<50} {'wanted':<18} " + " ".join(f"{m:>5}" for m in modes))
    for repo, query, name in QUERIES:
        ranks = []
        for mode in modes:
            hits = (
                engines[repo].search(query, top_k=10, mode="bm25")
                if mode == "bm25"
                else engines[repo].search(query, top_k=10, mode="hybrid", vectors=Vectors.STATIC)
            )
            rank = next((k for k, h in enumerate(hits, start=1) if defines(h.scope, name)), None)
            found[mode] += rank is not None
            ranks.append("-" if rank is None else str(rank))
        print(f"{query:<50} {name:<18} " + " ".join(f"{r:>5}" for r in ranks))
    print("in the top 10: " + ", ".join(f"{m} {n} of {len(QUERIES)}" for m, n in found.items()))
    for cs in engines.values():
        cs.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
