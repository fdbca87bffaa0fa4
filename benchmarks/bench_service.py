"""A fresh `codesight search` process end to end: through the warm service, in its own process,
and `rg` in the same run, on Django 5.1.4 (its sdist from PyPI without locale/ and tests/).

    python benchmarks/bench_service.py [--runs 100] [--corpus DIR]

Every timing is a whole process as a shell runs it (fork, exec, answer, exit), with its output
going to a pipe: the console script `codesight` of this environment, `codesight search QUERY`
(BM25 and the static tier, the default) in plain text and with `--json`, against `rg -n -i WORD`
(one word of the query). Bytecode caching is on, as on a user's machine. Queries rotate through bench_core's 60 plain-English ones. The first
call on a machine with no service (it answers in its own process and starts one as it exits) is
timed against a call with the service switched off, alternately, with the service stopped
before each. The index and data directory are temporary; the static model comes from the usual
cache (distilled there once).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import EXCLUDE, NL_QUERIES, fetch_django, pct  # noqa: E402


def timed(argv: list[str], env: dict, cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(cwd))
    return (time.perf_counter() - t) * 1000, out


def summary(name: str, ms: list[float], base: list[float] | None = None) -> str:
    line = f"{name:<34} p50 {pct(ms, 50):7.1f} ms   p95 {pct(ms, 95):7.1f} ms   mean {statistics.mean(ms):7.1f} ms"
    if base:
        line += f"   ({pct(ms, 50) / pct(base, 50):.1f}x rg's p50)"
    return line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=None, help="a tree to search (default: Django 5.1.4)")
    ap.add_argument("--runs", type=int, default=100, help="calls per variant (default 100)")
    ap.add_argument("--first", type=int, default=10, help="first calls with no service, per variant (default 10)")
    ap.add_argument(
        "--exe",
        default=None,
        help="the codesight console script to time (default: the one on PATH);"
        " e.g. that of a regular, non-editable install",
    )
    args = ap.parse_args()
    exe = args.exe or shutil.which("codesight")
    rg = shutil.which("rg")
    if exe is None:
        sys.exit("no codesight console script on PATH: activate the environment first")
    work = Path(tempfile.mkdtemp(prefix="csbench-"))
    corpus = work / "repo"
    shutil.copytree(
        args.corpus.resolve() if args.corpus else fetch_django(),
        corpus,
        ignore=shutil.ignore_patterns("locale", "tests") if not args.corpus else None,
    )
    subprocess.run(["git", "init", "-q", str(corpus)], check=True)
    run_dir = Path(tempfile.mkdtemp(prefix="csr-", dir="/tmp"))
    env = dict(
        os.environ, CODESIGHT_DATA_DIR=str(work / "data"), XDG_RUNTIME_DIR=str(run_dir), CODESIGHT_SERVICE="auto"
    )
    off = dict(env, CODESIGHT_SERVICE="off")
    env.pop("NO_COLOR", None)
    for e in (env, off):  # as a user's Python runs: it caches compiled modules (this sandbox turns that off)
        e.pop("PYTHONDONTWRITEBYTECODE", None)
    files = sum(1 for p in corpus.rglob("*") if p.is_file() and ".git" not in p.parts)
    t0 = time.perf_counter()
    subprocess.run([exe, "index", str(corpus), "--static-only"], env=off, check=True, capture_output=True)
    print(f"console script: {exe}")
    print(
        f"corpus: {files:,} files (excluded {', '.join(EXCLUDE)}); indexed with the static tier in"
        f" {time.perf_counter() - t0:.0f} s; load {os.getloadavg()[0]:.2f}",
        flush=True,
    )

    def stop() -> None:
        subprocess.run([exe, "service", "stop"], env=env, capture_output=True)

    def query(i: int) -> str:
        return NL_QUERIES[i % len(NL_QUERIES)]

    try:
        # The first call with no service, against the in-process path: alternately, service stopped.
        first, alone = [], []
        for i in range(args.first):
            stop()
            ms, out = timed([exe, "search", query(i)], env, corpus)
            assert out.returncode == 0, out.stderr
            first.append(ms)
            end = time.monotonic() + 30  # the service it started: up, then stopped, before the next timing
            while (
                time.monotonic() < end
                and '"running": true'
                not in subprocess.run(
                    [exe, "service", "status", "--json"], env=env, capture_output=True, text=True
                ).stdout
            ):
                time.sleep(0.1)
            stop()
            time.sleep(0.5)
            ms, out = timed([exe, "search", query(i)], off, corpus)
            alone.append(ms)
        subprocess.run([exe, "service", "start"], env=env, check=True, capture_output=True)
        timed([exe, "search", query(0)], env, corpus)  # the engine's first load (index, static vectors)
        time.sleep(5.0)  # the watcher's first walk, and the service's copy of the BM25 postings (2.5 s)
        times: dict[str, list[float]] = {
            "rg": [],
            "served": [],
            "served --json": [],
            "in process": [],
            "in process --json": [],
        }
        same = 0
        for i in range(args.runs):
            q = query(i)
            word = max(q.split(), key=len)
            if rg:
                times["rg"].append(timed([rg, "-n", "-i", word], env, corpus)[0])
            ms, served = timed([exe, "search", q], env, corpus)
            times["served"].append(ms)
            times["served --json"].append(timed([exe, "search", q, "--json"], env, corpus)[0])
            ms, here = timed([exe, "search", q], off, corpus)
            times["in process"].append(ms)
            times["in process --json"].append(timed([exe, "search", q, "--json"], off, corpus)[0])
            same += served.stdout == here.stdout and served.returncode == here.returncode
        status = subprocess.run([exe, "service", "status"], env=env, capture_output=True, text=True).stdout
    finally:
        stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(run_dir, ignore_errors=True)
    base = times["rg"] or None
    print(f"{args.runs} calls each, one query at a time, variants interleaved; load {os.getloadavg()[0]:.2f}")
    for name, ms in times.items():
        if ms:
            print(summary(name, ms, base if name != "rg" else None))
    print(f"served answers identical to in-process ones: {same}/{args.runs}")
    print(summary("first call, no service (starts one)", first))
    print(summary("same call, service off", alone))
    print(f"served p50 is {pct(times['in process'], 50) / pct(times['served'], 50):.1f}x faster than in process")
    print(status.strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
