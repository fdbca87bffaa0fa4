"""MCP server and watch-mode benchmark (issue 19): prints figures, never pass/fail.

    python benchmarks/bench_mcp.py                       # Django 5.1.4 (bench_core's corpus)
    python benchmarks/bench_mcp.py --only latency,save --edits 1000

Sections (``--only`` picks some):
  latency   `codesight mcp` over stdio, driven by the SDK's client: warm `search` round trips,
            p50/p95, hybrid and bm25, on an index with every vector in place
  save      `codesight watch` running in its own process: from a file save to its new text being
            found by BM25 in another process, p50/p95
  cold      `search` on an unindexed 1,000-file repository (and an empty embedding cache): time
            from the call to the first answer, and from the server's start
  versions  N single-file edits under `codesight watch`, each searchable before the next: LanceDB
            versions and vector-store bytes afterwards

The corpus is indexed under benchmarks/.data/mcp (data) with the shared cache under
benchmarks/.data/cache; `save` and `versions` edit a private copy, never the corpus.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_core import DATA, EXCLUDE, NL_QUERIES, fetch_django, pct  # noqa: E402

CLI = [sys.executable, "-m", "codesight_tui"]


def env_for(data: Path, cache: Path, exclude: list[str]) -> dict:
    return dict(
        os.environ,
        CODESIGHT_DATA_DIR=str(data),
        CODESIGHT_CACHE_DIR=str(cache),
        CODESIGHT_EXCLUDE=json.dumps(exclude),
        CODESIGHT_PROGRESS="0",
    )


def line(text: str) -> None:
    print(text, flush=True)


async def mcp_client(root: Path, env: dict):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "codesight_tui", "mcp", "--root", str(root)], env=env, cwd=str(root)
    )
    return Client(params, read_timeout_seconds=600)


async def section_latency(corpus: Path, env: dict, rounds: int) -> None:
    async with await mcp_client(corpus, env) as client:
        t0 = time.perf_counter()
        r = await client.call_tool("search", {"query": "render a template", "top_k": 10})
        line(f"[latency] first search (server up, catch-up run started): {(time.perf_counter() - t0) * 1000:.0f} ms")
        while True:  # the catch-up run (a walk of an up-to-date tree) and the model load finish
            st = (await client.call_tool("status", {})).structured_content["state"]
            if not st["indexing"] and "ready" in st["model"]:
                break
            await client.call_tool("search", {"query": "warm up", "top_k": 1})
            await asyncio.sleep(0.5)
        line(
            f"[latency] index: {st['files']:,} files, {st['chunks']:,} chunks, vector coverage"
            f" {st['vector_coverage']:.0%}"
        )
        for mode in ("hybrid", "bm25"):
            times, server = [], []
            for _ in range(rounds):
                for q in NL_QUERIES:
                    t = time.perf_counter()
                    r = await client.call_tool("search", {"query": q, "top_k": 10, "mode": mode})
                    times.append((time.perf_counter() - t) * 1000)
                    assert not r.is_error, r.content
                    server.append(r.structured_content["elapsed_ms"])
            line(
                f"[latency] mcp search {mode:<6} over stdio, {len(times)} calls: round trip p50 {pct(times, 50):.1f} ms,"
                f" p95 {pct(times, 95):.1f} ms (the client's output-schema validation included);"
                f" in the server p50 {pct(server, 50):.1f} ms, p95 {pct(server, 95):.1f} ms"
            )


def private_copy(corpus: Path, work: Path, limit: int | None = None) -> Path:
    """A git repository holding the corpus (or its first ``limit`` files, in walk order)."""
    from codesight_tui.core.ingest.walker import walk

    dst = work / "repo"
    if limit is None:
        shutil.copytree(corpus, dst, symlinks=True)
    else:
        for e in list(walk(corpus, exclude=EXCLUDE))[:limit]:
            target = dst / e.rel_path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(e.abs_path, target)
    (dst / ".git").mkdir(exist_ok=True)
    return dst


def start_watch(repo: Path, env: dict) -> subprocess.Popen:
    proc = subprocess.Popen(
        [*CLI, "watch", str(repo), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    first = json.loads(proc.stdout.readline())  # the catch-up batch: the copy is indexed (vectors from the cache)
    proc.lines = []  # one JSON line per batch, read as they come (a full pipe would stop the watcher)

    def drain() -> None:
        for text in proc.stdout:
            proc.lines.append(text)

    import threading

    threading.Thread(target=drain, daemon=True).start()
    line(
        f"[watch] catch-up of the copy: {first['files_changed']:,} files in {first['seconds']:.1f}s,"
        f" {first['embedded']} embedded, {first['cache_hits']:,} from the cache"
    )
    return proc


def dump_stacks(pid: int) -> str:
    """The watcher's threads, where a save was not found in time (py-spy, when installed)."""
    spy = shutil.which("py-spy")
    if spy is None:
        return "(py-spy not installed: no stacks)"
    return subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True).stdout


def edit_and_find(repo: Path, files: list[Path], n: int, settle: float, watcher_pid: int | None = None):
    """Append a new function to a file, then poll BM25 (another process) until it is found."""
    from codesight_tui import CodeSight

    cs = CodeSight(repo)
    times = []
    for i in range(n):
        f = files[(i * 7919) % len(files)]
        # One word of letters only: a token no other chunk holds, whatever the identifier splitting.
        name = "zqmark" + "".join(chr(97 + int(d)) for d in f"{i:05d}{os.getpid() % 100000:05d}")
        with f.open("a") as fh:
            fh.write(f"\n\ndef {name}():\n    return {i}\n")
        t0 = time.perf_counter()
        rel = f.relative_to(repo).as_posix()
        while not any(h.path == rel for h in cs.search(name, mode="bm25", top_k=10)):
            if time.perf_counter() - t0 > 60:
                stacks = dump_stacks(watcher_pid) if watcher_pid else ""
                raise SystemExit(f"{rel}: not found 60 s after the save (edit {i})\n{stacks}")
            time.sleep(0.005)
        times.append(time.perf_counter() - t0)
        time.sleep(settle)
    return cs, times


def section_save(corpus: Path, env: dict, edits: int) -> None:
    with tempfile.TemporaryDirectory(prefix="cs-save-") as work:
        repo = private_copy(corpus, Path(work))
        proc = start_watch(repo, env)
        try:
            files = sorted(p for p in repo.rglob("*.py") if "/tests/" not in str(p) and "locale" not in str(p))
            _, times = edit_and_find(repo, files, edits, settle=0.3, watcher_pid=proc.pid)
        finally:
            proc.send_signal(2)
            proc.wait(timeout=60)
        line(
            f"[save] save -> found by BM25 (watcher in its own process), {len(times)} edits:"
            f" p50 {pct(times, 50) * 1000:.0f} ms, p95 {pct(times, 95) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms"
        )


async def section_cold(corpus: Path, files: int) -> None:
    with tempfile.TemporaryDirectory(prefix="cs-cold-") as work:
        w = Path(work)
        repo = private_copy(corpus, w, limit=files)
        env = env_for(w / "data", w / "cache", [])
        t_start = time.perf_counter()
        async with await mcp_client(repo, env) as client:
            t_up = time.perf_counter()
            r = await client.call_tool("search", {"query": "parse a date string into a datetime", "top_k": 10})
            t_answer = time.perf_counter()
            out = r.structured_content
            st = out["index"][0]
            line(
                f"[cold] {files:,}-file repository, no index, empty cache: first search answered in"
                f" {t_answer - t_up:.2f}s after the call ({t_answer - t_start:.2f}s after spawning the server);"
                f" {len(out['results'])} hits, {st['files']:,} files and {st['chunks']:,} chunks indexed,"
                f" vectors {st['vector_coverage']:.0%}, indexing still: {st['indexing']}"
            )
            line(
                f"[cold] top hit: {out['results'][0]['path']}:{out['results'][0]['line']} ({out['results'][0]['name']})"
                if out["results"]
                else "[cold] no hits"
            )


def section_versions(corpus: Path, env: dict, edits: int) -> None:
    from codesight_tui import CodeSight

    with tempfile.TemporaryDirectory(prefix="cs-versions-") as work:
        repo = private_copy(corpus, Path(work))
        proc = start_watch(repo, env)
        try:
            files = sorted(p for p in repo.rglob("*.py") if "/tests/" not in str(p) and "locale" not in str(p))
            before = CodeSight(repo).status(check_disk=False)
            line(
                f"[versions] before: {before['vector_versions']} versions, vectors {before['vector_bytes'] / 1e6:.1f} MB"
            )
            t0 = time.perf_counter()
            _, times = edit_and_find(repo, files, edits, settle=0.05, watcher_pid=proc.pid)
            # The last edits' vectors: wait until nothing is pending.
            cs = CodeSight(repo)
            while cs.counts()["pending"]:
                time.sleep(0.2)
            time.sleep(1.0)
        finally:
            proc.send_signal(2)
            proc.wait(timeout=120)
            err = proc.stderr.read()
            if sys.exc_info()[0] is not None:
                line("[versions] the watcher's last words:\n" + "".join(proc.lines[-3:]) + err[-1500:])
        after = CodeSight(repo).status(check_disk=False)
        line(
            f"[versions] {edits:,} single-file edits under watch in {time.perf_counter() - t0:.0f}s (each found"
            f" before the next; save -> found p50 {pct(times, 50) * 1000:.0f} ms, p95 {pct(times, 95) * 1000:.0f} ms,"
            f" max {max(times) * 1000:.0f} ms)"
        )
        batches = [json.loads(x) for x in proc.lines if x.startswith("{")]
        line(
            f"[versions] the watcher indexed {len(batches):,} batches; slowest {max(b['seconds'] for b in batches):.2f}s"
        )
        line(
            f"[versions] after: {after['vector_versions']} LanceDB versions, vectors {after['vector_bytes'] / 1e6:.1f} MB,"
            f" index.db {after['db_bytes'] / 1e6:.1f} MB; {after['chunks']:,} chunks, {after['vectors']:,} vectors"
        )
        if "Traceback" in err:
            line("[versions] the watcher printed a traceback:\n" + err[-2000:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--only", default="latency,save,cold,versions")
    ap.add_argument("--rounds", type=int, default=2, help="passes over the 60 queries (latency)")
    ap.add_argument("--saves", type=int, default=60, help="edits timed in the save section")
    ap.add_argument("--edits", type=int, default=1000, help="edits in the versions section")
    ap.add_argument("--cold-files", type=int, default=1000)
    ap.add_argument("--data", type=Path, default=DATA / "mcp", help="data directory of the corpus's index")
    ap.add_argument("--cache", type=Path, default=DATA / "cache")
    args = ap.parse_args()
    corpus = args.corpus.resolve() if args.corpus else fetch_django()
    (corpus / ".git").mkdir(exist_ok=True)  # its own root, not the repository around benchmarks/.data
    exclude = EXCLUDE if args.corpus is None else []
    env = env_for(args.data, args.cache, exclude)
    only = set(args.only.split(","))
    line(f"corpus: {corpus}  exclude={exclude}  cores: {os.cpu_count()}")
    if only & {"latency", "save", "versions"}:
        t0 = time.perf_counter()
        r = subprocess.run([*CLI, "index", str(corpus), "--yes", "--json"], capture_output=True, text=True, env=env)
        if r.returncode:
            raise SystemExit(r.stderr)
        rep = json.loads(r.stdout)
        line(
            f"[setup] index up to date: {rep['files']:,} files, {rep['chunks']:,} chunks,"
            f" {rep['vectors_pending']} pending ({time.perf_counter() - t0:.0f}s)"
        )
        os.environ.update({k: env[k] for k in ("CODESIGHT_DATA_DIR", "CODESIGHT_CACHE_DIR", "CODESIGHT_EXCLUDE")})
    if "latency" in only:
        asyncio.run(section_latency(corpus, env, args.rounds))
    if "save" in only:
        section_save(corpus, env, args.saves)
    if "cold" in only:
        asyncio.run(section_cold(corpus, args.cold_files))
    if "versions" in only:
        section_versions(corpus, env, args.edits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
