"""Where a served `codesight search` spends its time, on Django 5.1.4 (bench_service.py's corpus):
the interpreter's start, the client's imports, the whole served call, a warm client's round trip
(the socket, the service's dispatch and the call), and inside the service the search and the
printing, each the median of ``--runs`` calls.

    python benchmarks/service_breakdown.py [--runs 40] [--exe PATH/bin/codesight]

``--exe``: the console script of the install to time (a regular install, as users have; its
Python is the one beside it). The index and data directory are temporary.
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
from bench_core import EXCLUDE, NL_QUERIES, fetch_django  # noqa: E402

INSIDE = r"""
import io, statistics, sys, time
from codesight_tui import cli
from codesight_tui.core.apps.workspace import EngineOptions, Workspace
from codesight_tui.core.search.contract import SearchRequest
from codesight_tui.core.modes import Vectors
repo, runs, queries = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
space = Workspace(EngineOptions(resident_bm25=True))
cs = space.engine(__import__("pathlib").Path(repo))
def search(q):
    return space.search(SearchRequest(q, tier=Vectors.STATIC), [cs.root])
for q in queries[:5]:
    search(q)  # warm, as the service is
t_search, t_call = [], []
for i in range(runs):
    q = queries[i % len(queries)]
    t = time.perf_counter(); search(q); t_search.append((time.perf_counter() - t) * 1000)
    ctx = cli.Context(out=io.StringIO(), err=io.StringIO(), workspace=space)
    t = time.perf_counter(); cli.run(["search", q, "--path", repo], context=ctx); t_call.append((time.perf_counter() - t) * 1000)
print(statistics.median(t_search), statistics.median(t_call))
"""


ROUND_TRIP = r"""
import os, statistics, sys, time
from codesight_tui import client
runs, argv = int(sys.argv[1]), sys.argv[2:]
message = {"v": client.PROTOCOL, "install": client.install_key(), "env": client.env_digest(), "argv": argv,
           "cwd": os.getcwd(), "tty": False, "ask": False}
client.request(message, lambda m: None)  # warm
times = []
for _ in range(runs):
    t = time.perf_counter(); client.request(message, lambda m: None); times.append((time.perf_counter() - t) * 1000)
print(statistics.median(times))
"""


def median_ms(argv: list[str], env: dict[str, str], runs: int, cwd: str) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--exe", default=shutil.which("codesight"))
    args = ap.parse_args()
    exe = Path(args.exe)
    python = str(exe.parent / "python")
    corpus = fetch_django()
    work = Path(tempfile.mkdtemp(prefix="csbreak-"))
    repo = work / "repo"
    shutil.copytree(corpus, repo, ignore=shutil.ignore_patterns(*[p.strip("/") for p in EXCLUDE]))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = dict(
        os.environ, CODESIGHT_DATA_DIR=str(work / "data"), XDG_RUNTIME_DIR=str(work / "run"), CODESIGHT_SERVICE="auto"
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user's Python runs: compiled modules cached
    env.pop("NO_COLOR", None)
    (work / "run").mkdir(mode=0o700)
    off = dict(env, CODESIGHT_SERVICE="off")
    subprocess.run([str(exe), "index", str(repo), "--static-only"], env=off, check=True, capture_output=True)
    subprocess.run([str(exe), "service", "start"], env=env, check=True, capture_output=True)
    try:
        q = NL_QUERIES[0]
        start = median_ms([python, "-c", "pass"], env, args.runs, str(repo))
        client = median_ms([python, "-c", "import codesight_tui.client"], env, args.runs, str(repo))
        served = median_ms([str(exe), "search", q], env, args.runs, str(repo))
        out = subprocess.run(
            [python, "-c", INSIDE, str(repo), str(args.runs), *NL_QUERIES],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        search, call = float(out[0]), float(out[1])
        trip = float(
            subprocess.run(
                [python, "-c", ROUND_TRIP, str(args.runs), "search", q],
                env=env,
                cwd=str(repo),
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
    finally:
        subprocess.run([str(exe), "service", "stop"], env=env, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"medians of {args.runs}, {exe}; load {os.getloadavg()[0]:.2f}")
    print(f"  served `codesight search` end to end  {served:6.1f} ms")
    print(f"  the interpreter's start (-c pass)     {start:6.1f} ms")
    print(f"  + the client's imports                {client - start:6.1f} ms")
    print(f"  the call in the service (cli.run)     {call:6.1f} ms, of which the search {search:.1f} ms")
    print(f"    parsing, checks and printing        {call - search:6.1f} ms")
    print(f"  a warm client's round trip            {trip:6.1f} ms (the socket, the service's dispatch and the call)")
    print(f"  the rest: the client's message, output and exit {served - client - trip:6.1f} ms")


if __name__ == "__main__":
    main()
