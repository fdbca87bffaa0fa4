"""How fast `codesight grep` answers, against `rg` in the same run, and what its index costs.

    python benchmarks/grep_speed.py [--corpus django|polyglot|scale|DIR] [--copies N] [--patterns 40]
                                    [--exe PATH] [--cost-runs 3]

Corpora: ``django`` (Django 5.1.4's sdist, whole), ``polyglot`` (the 49 polyglot repositories
joined into one tree), ``scale`` (bench_scale.py's 10,000-file tree), or a directory; ``--copies N``
puts N copies of it under one root (hard links: a monorepo of N times the size).

Patterns: selective ones drawn from the corpus (an identifier of 6 or more characters: a required
literal of 3 or more), and patterns with no trigram (``\\w+\\(\\)``, ``[0-9]{4}`` ...). For each:

- ``served``: a fresh ``codesight grep PATTERN`` process through the warm service, as a user runs it
  (``--exe``: the console script of a regular install);
- ``in process``: the same search in a warm process (the TUI, MCP, the Python API), asking what the
  served one asks (each line and its first match); ``+ definitions``: each line's enclosing
  definition too, as the TUI and MCP ask (they cap the lines: 1,000 and the tool's limit);
- ``rg``: ``rg --no-config -n --hidden --no-require-git --no-ignore-parent PATTERN``, output to a pipe.

Costs (``--cost-runs``, 0 to skip): the lexical phase in process with and without the trigram
table (median of the runs, alternated, each from nothing), and the table's size on disk.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import fetch_django, pct  # noqa: E402

NO_TRIGRAM = [r"\w+\(\)", r"[0-9]{4}", r"\)\s*\{$", r"^\s+#", r"=>\s\w", r"\t\t\t\t", r"[A-Z]{2}_\d", r";;$"]
IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{5,40}\b")
RG = ["--no-config", "-n", "--hidden", "--no-require-git", "--no-ignore-parent"]


def corpus_of(name: str, copies: int, work: Path) -> Path:
    if name == "django":
        source = fetch_django()
    elif name == "polyglot":
        source = Path(".cache/polyglot/repos")
    elif name == "scale":
        import bench_scale

        source = bench_scale.fetch()
    else:
        source = Path(name)
    root = work / "tree"
    root.mkdir()
    for k in range(max(1, copies)):
        subprocess.run(["cp", "-al", str(source.resolve()), str(root / f"copy{k}")], check=True)
    return root


def draw(root: Path, n: int, rng: random.Random) -> list[str]:
    files = [
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix in {".py", ".go", ".rs", ".js", ".ts", ".java", ".c", ".rb", ".php"}
    ]
    words: list[str] = []
    for p in rng.sample(files, min(len(files), 200)):
        try:
            words += IDENT.findall(p.read_text(encoding="utf-8", errors="ignore")[:20000])
        except OSError:
            continue
    pool = sorted(set(words))
    return rng.sample(pool, min(n, len(pool)))


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    t = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, env=env, cwd=str(cwd))
    return (time.perf_counter() - t) * 1000, out


def caught_up(exe: str, env: dict[str, str], limit: float = 300) -> None:
    """Wait until the service's watcher has taken in its first walk."""
    import json

    end = time.monotonic() + limit
    while time.monotonic() < end:
        out = subprocess.run([exe, "service", "status", "--json"], env=env, capture_output=True, text=True).stdout
        repos = json.loads(out).get("repositories", []) if out.strip().startswith("{") else []
        if repos and all(r.get("caught_up") for r in repos):
            return
        time.sleep(0.5)
    print("the service's watcher did not catch up: timings below read every file's state")


def line(name: str, ms: list[float], base: list[float] | None = None) -> str:
    out = f"{name:<34} p50 {pct(ms, 50):8.1f} ms   p95 {pct(ms, 95):8.1f} ms"
    return out + (f"   ({pct(ms, 50) / pct(base, 50):.2f}x rg's p50)" if base else "")


def costs(root: Path, runs: int, work: Path) -> None:
    """The lexical phase with and without the trigram table, alternated, each from nothing."""
    from codesight_tui.core.config import Settings
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.store.store import Store

    with_grams, without = [], []
    size = 0
    real = Store.ensure_grams
    for k in range(runs * 2):
        grams_on = k % 2 == 0
        Store.ensure_grams = real if grams_on else (lambda self: False)  # type: ignore[method-assign]
        data = work / f"cost{k}"
        cs = CodeSight(root, settings=Settings(data_dir=data, cache_dir=work / "cache", static_model="off"))
        t = time.perf_counter()
        cs.index(embed=False)
        (with_grams if grams_on else without).append(time.perf_counter() - t)
        if grams_on and not size:
            size = sum(
                r[0] or 0
                for r in cs.store.conn.execute(
                    "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'chunks_grams%' OR name LIKE 'lines_grams%'"
                    " OR name IN ('grams_whole', 'grams_lines', 'grams_lines_path')"
                )
            )
            total = (cs.context.index_dir / "index.db").stat().st_size
            source = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        cs.close()
        shutil.rmtree(data, ignore_errors=True)
    Store.ensure_grams = real  # type: ignore[method-assign]
    a, b = statistics.median(with_grams), statistics.median(without)
    print(f"lexical phase, median of {runs}: {a:.1f} s with the trigram table, {b:.1f} s without ({a / b - 1:+.0%})")
    print(
        f"trigram table on disk: {size / 1e6:.1f} MB ({size / source:.0%} of the {source / 1e6:.0f} MB of files;"
        f" index.db {total / 1e6:.0f} MB in all)"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="django")
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--patterns", type=int, default=40)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--exe", default=None, help="the console script to time (default: codesight on PATH)")
    ap.add_argument("--cost-runs", type=int, default=3)
    args = ap.parse_args()
    exe, rg = args.exe or shutil.which("codesight"), shutil.which("rg")
    if exe is None or rg is None:
        sys.exit("needs the codesight console script and rg on PATH")
    work = Path(tempfile.mkdtemp(prefix="csgrep-"))
    run_dir = Path(tempfile.mkdtemp(prefix="csr-", dir="/tmp"))
    try:
        root = corpus_of(args.corpus, args.copies, work)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        files = sum(1 for p in root.rglob("*") if p.is_file() and ".git" not in p.parts)
        print(f"corpus {args.corpus} x{args.copies}: {files:,} files; load {os.getloadavg()[0]:.2f}", flush=True)
        if args.cost_runs:
            costs(root, args.cost_runs, work)
        env = dict(
            os.environ, CODESIGHT_DATA_DIR=str(work / "data"), XDG_RUNTIME_DIR=str(run_dir), CODESIGHT_SERVICE="auto"
        )
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("NO_COLOR", None)
        t0 = time.perf_counter()
        subprocess.run(
            [exe, "index", str(root), "--no-embed"],
            env=dict(env, CODESIGHT_SERVICE="off"),
            check=True,
            capture_output=True,
        )
        print(f"indexed (lexical) in {time.perf_counter() - t0:.0f} s", flush=True)
        rng = random.Random(args.seed)
        selective = draw(root, args.patterns, rng)
        subprocess.run([exe, "service", "start"], env=env, check=True, capture_output=True)
        timed([exe, "grep", selective[0]], env, root)  # the engine's first load, and its watcher
        caught_up(exe, env)  # the watcher's first walk done: it knows what is not indexed
        from codesight_tui.core.config import Settings
        from codesight_tui.core.engine import CodeSight
        from codesight_tui.core.search.contract import GrepOptions, SearchRequest

        cs = CodeSight(root, settings=Settings(data_dir=work / "data"))
        watcher = cs.watch(embed=False, static=False)  # in process as in the TUI: a watcher knows what changed
        while not watcher.idle():
            time.sleep(0.2)
        cs.search(SearchRequest(selective[0], limit=10**9, grep=GrepOptions()))
        # The served request's twin: the lines as the plain printer shows them (the first match of
        # each). "+ definitions": as the TUI and MCP ask, each line with its enclosing definition.
        LINES = GrepOptions(scopes=False, every_span=False)
        results: dict[str, dict[str, list[float]]] = {}
        same = 0
        for kind, patterns in (("selective", selective), ("no trigram", NO_TRIGRAM)):
            times = results.setdefault(kind, {"rg": [], "served": [], "in process": [], "+ definitions": []})
            for p in patterns:
                ms, theirs = timed([rg, *RG, "-e", p, "."], env, root)
                times["rg"].append(ms)
                ms, _served = timed([exe, "grep", p], env, root)
                times["served"].append(ms)
                for name, options in (("in process", LINES), ("+ definitions", GrepOptions())):
                    t = time.perf_counter()
                    mine = cs.search(SearchRequest(p, limit=10**9, grep=options))
                    times[name].append((time.perf_counter() - t) * 1000)
                same += len(mine) == theirs.stdout.count(b"\n")
        watcher.stop()
        cs.close()
        print(
            f"load {os.getloadavg()[0]:.2f}; answers with rg's line count: {same}/{len(selective) + len(NO_TRIGRAM)}"
            " (rg also reads the files codesight leaves out by design: over the size cap, secrets, binaries;"
            " grep_parity.py compares line by line over the files indexed)"
        )
        for kind, times in results.items():
            print(f"{kind} patterns ({len(selective) if kind == 'selective' else len(NO_TRIGRAM)}):")
            for name, ms in times.items():
                print("  " + line(name, ms, times["rg"] if name != "rg" else None))
    finally:
        subprocess.run(
            [exe, "service", "stop"], env=dict(os.environ, XDG_RUNTIME_DIR=str(run_dir)), capture_output=True
        )
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
