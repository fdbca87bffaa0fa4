"""The static tier (issue 18): distillation time, static vectors after the lexical phase, and the
latency of a fresh `codesight search` process. Prints figures, never pass/fail.

    python benchmarks/bench_static.py                  # Django 5.1.4 (bench_core's corpus) + a 1,000-file slice
    python benchmarks/bench_static.py --corpus DIR     # any tree
    python benchmarks/bench_static.py --scale          # bench_scale's 10,000+ file tree: static time and RSS

Each corpus is indexed from nothing by `codesight index --static-only` in a child process (wall time,
lexical and static phases, peak RSS of the process), then searched by fresh processes: the default
fast path (BM25 + static, no torch) and `--full` (the full model loads in the process).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import DATA, EXCLUDE, NL_QUERIES, fetch_django  # noqa: E402


def distill_time(dest: Path) -> float:
    from codesight_tui.core.index.static import distill
    from codesight_tui.core.ingest.tokens import resolve_model

    shutil.rmtree(dest, ignore_errors=True)
    return distill(Path(resolve_model("minilm").load_from), dest)


def index_static(corpus: Path, env: dict) -> dict:
    """One `codesight index --static-only` from nothing, under /usr/bin/time for its own peak RSS
    (the index process and its chunking workers, each counted on its own)."""
    rss_file = Path(tempfile.mktemp(suffix=".rss"))
    t = time.perf_counter()
    out = subprocess.run(
        [
            "/usr/bin/time",
            "-f",
            "%M",
            "-o",
            str(rss_file),
            sys.executable,
            "-m",
            "codesight_tui",
            "index",
            "--static-only",
            "--json",
            str(corpus),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    wall = time.perf_counter() - t
    rep = json.loads(out.stdout)
    rss = int(rss_file.read_text().split()[-1]) / 1024
    rss_file.unlink()
    return {"wall": wall, "rss": rss, **rep}


def cold_searches(corpus: Path, env: dict, queries: list[str], extra: list[str]) -> list[float]:
    times = []
    for q in queries:
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "codesight_tui", "search", q, "--path", str(corpus), "--json", *extra],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            cwd=corpus,
        )
        times.append(time.perf_counter() - t)
    return times


def slice_of(corpus: Path, n: int, dest: Path) -> Path:
    """The first ``n`` source files of ``corpus`` (sorted paths), copied to ``dest``."""
    if dest.is_dir():
        return dest
    files = sorted(p for p in corpus.rglob("*.py") if p.is_file())[:n]
    for p in files:
        target = dest / p.relative_to(corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, target)
    (dest / ".git").mkdir(exist_ok=True)  # its own root
    return dest


def report(name: str, corpus: Path, env: dict, runs: int, full_runs: int) -> None:
    rep = index_static(corpus, env)
    print(
        f"[{name}] {rep['files']:,} files, {rep['chunks']:,} chunks: `index --static-only` {rep['wall']:.1f}s"
        f" (lexical {rep['lexical_seconds']:.1f}s, static {rep['static_seconds']:.1f}s ="
        f" {rep['static_embedded'] / max(rep['static_seconds'], 1e-9):,.0f} chunks/s);"
        f" peak RSS of the index process {rep['rss']:,.0f} MB"
    )
    qs = NL_QUERIES[:runs]
    fast = cold_searches(corpus, env, qs, [])
    print(
        f"[{name}] fresh `codesight search` (BM25 + static, no torch): p50 {statistics.median(fast) * 1000:.0f} ms,"
        f" max {max(fast) * 1000:.0f} ms over {len(fast)} processes"
    )
    if full_runs:
        full = cold_searches(corpus, env, qs[:full_runs], ["--full"])
        print(
            f"[{name}] fresh `codesight search --full` (loads torch and MiniLM): p50"
            f" {statistics.median(full) * 1000:.0f} ms over {len(full)} processes;"
            f" ratio {statistics.median(full) / statistics.median(fast):.1f}x"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--scale", action="store_true", help="bench_scale's tree instead (static time and RSS)")
    ap.add_argument("--runs", type=int, default=20, help="fresh search processes per corpus")
    ap.add_argument("--full-runs", type=int, default=3, help="fresh --full search processes per corpus")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="codesight-static-"))
    model = work / "static-model"
    seconds = distill_time(model)
    print(f"distillation of the bundled MiniLM (PCA 256, CPU, {os.cpu_count()} cpus): {seconds:.1f}s")
    env = dict(
        os.environ,
        CODESIGHT_DATA_DIR=str(work / "data"),
        CODESIGHT_CACHE_DIR=str(work / "cache"),
        CODESIGHT_STATIC_MODEL=str(model),
        HF_HUB_OFFLINE="1",
        # each search in a process of its own, as measured: a warm service would answer
        # the second call on (benchmarks/bench_service.py times that)
        CODESIGHT_SERVICE="off",
    )
    try:
        if args.scale:
            from bench_scale import fetch

            root = fetch()
            (root / ".git").mkdir(exist_ok=True)  # its own root, not the repository around benchmarks/
            report("scale", root, env, args.runs, args.full_runs)
        elif args.corpus:
            report(args.corpus.name, args.corpus.resolve(), env, args.runs, args.full_runs)
        else:
            django = fetch_django()
            (django / ".git").mkdir(exist_ok=True)  # its own root, not the repository around benchmarks/
            report(
                "1,000 files", slice_of(django, 1000, DATA / "corpus" / "django-1000"), env, args.runs, args.full_runs
            )
            report("Django", django, dict(env, CODESIGHT_EXCLUDE=json.dumps(EXCLUDE)), args.runs, args.full_runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
