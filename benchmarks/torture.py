"""Torture harness (issue 22): crash, fault and hostile-input testing, with figures.

    python benchmarks/torture.py                 # everything, with the issue's numbers
    python benchmarks/torture.py --fast --jobs 2 # the quick subset the test suite runs (< 1 min)
    python benchmarks/torture.py --only kill,faults --kills 50

Sections (``--only`` picks some):
  kill         kill -9 of `codesight index` (and of the TUI, under tmux) at random moments across
               both phases; after each kill the index is checked for consistency, and `status` and
               `search` must work; a last run must complete
  concurrency  an indexer, two CLI search loops and an API reader on one repository while files
               change; errors, "database is locked", reader latency
  faults       read-only data directory, a full disk (a small tmpfs), a truncated or garbled
               index.db, a deleted vector file, a vector manifest from the future, a schema change
  hostile      a generated repository of hostile files (binary, 50 MB, minified, bad encodings,
               FIFOs, sockets, symlink loops, odd names, 50,000 files in one directory, 200-deep
               directories, a pathological .gitignore)
  queries      hypothesis-generated queries through the API and random ones through the CLI
  footprint    many small edits, each indexed: vector versions and bytes, SQLite bytes, cache bytes
  limits       a 200 MB one-line file, 500-deep directories, a symlink loop, 500,000 tiny files, a
               zip-bomb DOCX, a PDF bomb and a 10,000-slide PPTX, each in a fresh index run: peak RSS
  checkout     a branch switch that rewrites thousands of files under `codesight watch` while searches
               run: errors, time to settle against a fresh lexical phase, consistency
  service      the warm service: 1,000 concurrent calls and 200 client processes (answers compared with
               the in-process one), kill -9 of it mid-index, the stale socket that leaves, and another
               user's connection (root only: through the modes, and with them opened)
  install      install/uninstall: links planted to write outside a project, Codex TOML with dotted keys,
               inline tables and comments, VS Code's JSON with comments, a read-only file, a hand-made
               entry, six agents into a project and out again byte for byte
  fleet        Ray's directory made first by another user, what a local Ray listens on and writes, a
               store path that is no store, a token in a source URL, a large blob in a small repository

Throughout: every repository's bytes and mtimes are compared before and after (target: untouched),
and every child process runs with a socket guard that records any network connection (target: 0).
Prints figures; exits 1 if any target is missed. Real model, real SQLite and LanceDB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # docmaker: real documents, bombs included
PROBLEMS: list[str] = []  # every missed target, for the summary and the exit code
FIGURES: list[str] = []

GUARD = """
import socket, os
_log = os.environ.get("CODESIGHT_TORTURE_NETLOG")
_orig = socket.socket.connect
def _connect(self, address, *a, **k):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        with open(_log, "a") as fh:
            fh.write(f"{os.getpid()} {address!r}\\n")
        raise OSError("network access blocked by the torture harness")
    return _orig(self, address, *a, **k)
socket.socket.connect = _connect
"""


TIMINGS: list[tuple[float, str]] = []  # (seconds, command) of every CLI run, for --profile


def figure(text: str) -> None:
    FIGURES.append(text)
    print("  " + text, flush=True)


def problem(text: str) -> None:
    PROBLEMS.append(text)
    print("  PROBLEM: " + text, flush=True)


class Env:
    """Child-process environment: an isolated data and cache directory, the socket guard."""

    def __init__(self, work: Path, cache: Path | None = None) -> None:
        self.work = work
        self.cache = cache or work / "cache"  # the shared embedding cache (--cache: shared by parallel sections)
        self.netlog = work / "net.log"
        guard = work / "guard"
        guard.mkdir(parents=True, exist_ok=True)
        (guard / "sitecustomize.py").write_text(GUARD)
        # Commands run in their own processes (the service section starts services of its own).
        # Every phase is tortured, the full model's too, which a CPU leaves out by default (full_model).
        self.base = dict(
            os.environ,
            PYTHONPATH=str(guard),
            CODESIGHT_TORTURE_NETLOG=str(self.netlog),
            HF_HUB_OFFLINE="1",
            PYTHONUNBUFFERED="1",
            CODESIGHT_SERVICE="off",
            CODESIGHT_FULL_MODEL="on",
        )

    def env(self, data: Path, cache: Path) -> dict:
        return dict(self.base, CODESIGHT_DATA_DIR=str(data), CODESIGHT_CACHE_DIR=str(cache))

    def cli(
        self, args: list[str], data: Path, cache: Path, timeout: float = 600, extra: dict | None = None
    ) -> subprocess.CompletedProcess:
        t = time.perf_counter()
        try:
            return subprocess.run(
                [sys.executable, "-m", "codesight_tui", *args],
                capture_output=True,
                text=True,
                env={**self.env(data, cache), **(extra or {})},
                timeout=timeout,
            )
        finally:
            TIMINGS.append((time.perf_counter() - t, " ".join(a if len(a) < 40 else a[:37] + "..." for a in args)))

    def connections(self) -> int:
        return len(self.netlog.read_text().splitlines()) if self.netlog.exists() else 0


def snapshot(root: Path) -> dict[str, tuple]:
    """Bytes (hashed) and mtimes of every entry, symlinks as their targets."""
    import hashlib

    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames + dirnames:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
                if os.path.islink(p):
                    out[p] = ("link", os.readlink(p))
                elif os.path.isfile(p) and st.st_mode & 0o444:
                    h = hashlib.sha1()
                    try:
                        with open(p, "rb") as fh:
                            for block in iter(lambda: fh.read(1 << 20), b""):
                                h.update(block)
                    except OSError:
                        pass
                    out[p] = ("file", h.hexdigest(), st.st_mtime_ns, st.st_size)
                else:
                    out[p] = ("other", st.st_mode, st.st_mtime_ns)
            except OSError:
                continue
    return out


def check_untouched(name: str, before: dict, root: Path) -> None:
    after = snapshot(root)
    changed = [k for k in set(before) | set(after) if before.get(k) != after.get(k)]
    figure(f"{name}: repository entries changed by codesight: {len(changed)} of {len(before):,}")
    if changed:
        problem(f"{name}: the repository was modified: {sorted(changed)[:3]}")


def consistency(data: Path, root: Path) -> list[str]:
    """What is wrong with the index of ``root`` under ``data`` (empty when consistent): one row per
    file; the FTS index matches the chunks; every embedded chunk has exactly one vector and at
    most one doc view; no vector without an embedded chunk; no duplicate ids."""
    from codesight_tui.core.ingest.paths import index_dir_for

    d = index_dir_for(root, data)
    db = d / "index.db"
    if not db.exists():
        return []
    out: list[str] = []
    c = sqlite3.connect(db, timeout=30)
    try:
        if not c.execute("SELECT 1 FROM sqlite_master WHERE type='table'").fetchone():
            return []  # killed before its schema was committed: nothing indexed, the next run starts it
        return _consistency(c, d, out)
    except sqlite3.DatabaseError as exc:
        return [f"index.db unreadable: {exc}"]
    finally:
        c.close()


def _consistency(c: sqlite3.Connection, d: Path, out: list[str]) -> list[str]:
    """The checks themselves, on an open connection to the index database."""
    dup = c.execute("SELECT count(*) FROM (SELECT path FROM files GROUP BY path HAVING count(*) > 1)").fetchone()[0]
    if dup:
        out.append(f"{dup} files with more than one row")
    orphan_chunks = c.execute("SELECT count(*) FROM chunks WHERE path NOT IN (SELECT path FROM files)").fetchone()[0]
    if orphan_chunks:
        out.append(f"{orphan_chunks} chunks of no file")
    try:
        c.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
    except sqlite3.DatabaseError as exc:
        out.append(f"FTS index does not match the chunks: {exc}")
    n_chunks = c.execute("SELECT count(*) FROM chunks").fetchone()[0]
    n_fts = c.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()[0]
    if n_chunks != n_fts:
        out.append(f"{n_chunks} chunks but {n_fts} FTS rows")
    embedded = {i for (i,) in c.execute("SELECT id FROM chunks WHERE embedded = 1")}
    lance = d / "vectors.lance"
    ids: list[int] = []
    if lance.is_dir():
        import lancedb

        try:
            t = lancedb.connect(str(lance)).open_table("chunks")
            ids = t.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist()
        except Exception as exc:  # noqa: BLE001 (damage is reported, never raised)
            if embedded:
                out.append(f"vector table unreadable: {str(exc).splitlines()[0][:100]}")
    pos = [i for i in ids if i > 0]
    neg = [-i for i in ids if i < 0]
    if len(pos) != len(set(pos)) or len(neg) != len(set(neg)):
        out.append(f"duplicate vector ids: {len(pos) - len(set(pos))} chunks, {len(neg) - len(set(neg))} doc views")
    missing, orphans = len(embedded - set(pos)), len(set(pos) - embedded)
    if missing or orphans:
        out.append(f"{missing} embedded chunks without a vector, {orphans} vectors without an embedded chunk")
    if set(neg) - embedded:
        out.append(f"{len(set(neg) - embedded)} doc views without an embedded chunk")
    return out


CORPUS_FILES: int | None = None  # --fast: only this many files of the corpus


def corpus_copy(work: Path, name: str, source: Path | None) -> Path:
    """A private copy of the corpus (default: the installed `rich` package's source, about
    3,000 chunks; with --fast its first small files only): the harness may kill and fault, but never
    near the user's files."""
    if source is None:
        import rich

        source = Path(rich.__file__).parent
    dest = work / name
    if CORPUS_FILES is None:
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__"), symlinks=True)
        return dest
    # --fast: small files only (rich's 140 KB emoji table alone is hundreds of chunks for the model)
    small = [f for f in sorted(source.rglob("*.py")) if f.stat().st_size <= 20_000]
    for f in small[:CORPUS_FILES]:
        target = dest / f.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, target)
    return dest


def indexed_copy(env: Env, name: str, args) -> tuple[Path, Path, Path]:
    """A private copy of the corpus, indexed by the CLI into its own data directory with the
    shared cache: (root, data, cache)."""
    work = env.work / name
    root = corpus_copy(work, "repo", args.corpus)
    data, cache = work / "data", env.cache
    env.cli(["index", str(root)], data, cache, timeout=3600)
    return root, data, cache


def engine(root: Path, data: Path, cache: Path):
    """An in-process ``CodeSight`` on that index (the harness's own reader and editor)."""
    from codesight_tui import CodeSight

    return CodeSight(root, data_dir=data, cache_dir=cache)


INDEX_CHILD = r"""
import sys, json
from codesight_tui import CodeSight
cs = CodeSight(sys.argv[1], lexical_processes=True)
def progress(ev):
    print(json.dumps([ev.phase, ev.done, ev.total]), flush=True)
cs.index(progress=progress, force=sys.argv[2] == "force")
print(json.dumps(["finished", 0, 0]), flush=True)
"""


# --- 1. kill -9 ---------------------------------------------------------------------------
KILL_TARGETS = ("scan", "lexical", "embed")


def section_kill(env: Env, args) -> None:
    """Each run gets work first (files edited, or a rebuild, a third of them with an empty cache
    so the model really embeds), then is killed at a chosen point: a phase, picked in turn, and
    a random fraction of it, read from the run's own progress; otherwise at a random moment."""
    print(f"\n[kill] {args.kills} kill -9 of index runs at chosen points of each phase", flush=True)
    work = env.work / "kill"
    root = corpus_copy(work, "repo", args.corpus)
    data = work / "data"
    rng = random.Random(args.seed)
    phases: dict[str, int] = {}
    bad = recovered = changed_by_us = 0
    lost: list[int] = []
    files = sorted(root.rglob("*.py"))
    originals = {f: f.read_text() for f in files}
    for k in range(args.kills):
        kind = ("edits", "rebuild", "cold")[k % 3]
        cache = env.cache if kind != "cold" else env.work / f"cache-cold-{k}"  # cold: the model embeds
        if kind == "edits":
            for f in rng.sample(files, min(len(files), 12)):
                f.write_text(originals[f] + f"\n\ndef killed_run_{k}():\n    return {k}\n")
        target, fraction = KILL_TARGETS[k % 3 if kind != "cold" else 2], rng.random()
        before = snapshot(root)
        proc = subprocess.Popen(
            [sys.executable, "-c", INDEX_CHILD, str(root), "resume" if kind == "edits" else "force"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env.env(data, cache),
        )
        last = ["start", 0, 0]
        hit = threading.Event()

        def read(p=proc, target=target, fraction=fraction, hit=hit):
            nonlocal last
            for line in p.stdout:
                try:
                    last = json.loads(line)
                except ValueError:
                    continue
                ph, done, total = last
                past = KILL_TARGETS.index(ph) > KILL_TARGETS.index(target) if ph in KILL_TARGETS else ph == "finished"
                if (ph == target and done >= fraction * max(total, 1)) or past:
                    hit.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        hit.wait(args.kill_window)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        reader.join(2)
        phase = last[0] if proc.returncode == -signal.SIGKILL else "finished"
        phases[phase] = phases.get(phase, 0) + 1
        after = snapshot(root)
        changed_by_us += sum(before.get(x) != after.get(x) for x in set(before) | set(after))
        issues = consistency(data, root)
        st = env.cli(["status", str(root), "--json"], data, cache)
        se = env.cli(["search", "render a table", "--path", str(root), "--mode", "bm25"], data, cache)
        ok = not issues and st.returncode == 0 and se.returncode in (0, 1) and "Traceback" not in st.stderr + se.stderr
        if not ok:
            bad += 1
            problem(f"kill {k} in {phase}: {issues or (st.returncode, se.returncode, (st.stderr + se.stderr)[-300:])}")
        else:
            recovered += 1
        if phase == "embed" and kind == "edits":  # progress follows each commit: reported work is kept
            c = sqlite3.connect(next(data.glob("*/index.db")))
            kept = c.execute("SELECT count(*) FROM chunks WHERE embedded = 1").fetchone()[0]
            c.close()
            lost.append(max(0, last[1] - kept))
    cache = env.cache
    tui = tui_kills(env, root, data, cache, rng, args) if shutil.which("tmux") else 0
    mcp = mcp_kills(env, root, data, cache, rng, args)
    before = snapshot(root)
    final = env.cli(["index", str(root), "--json"], data, cache, timeout=3600)
    issues = consistency(data, root)
    report = json.loads(final.stdout) if final.returncode == 0 else {}
    figure(
        f"kill -9: {args.kills} index runs killed (+{tui} TUI runs, +{mcp} MCP server runs), by phase at the kill: "
        + ", ".join(f"{p} {n}" for p, n in sorted(phases.items()))
    )
    figure(f"kill -9: recovered {recovered} of {args.kills}; inconsistent or failing after a kill: {bad}")
    figure(
        f"kill -9: reported progress lost by a kill: {max(lost) if lost else 0} chunks"
        " (progress is reported after each batch commits; at most the batch in flight is redone)"
    )
    figure(
        f"kill -9: final run exit {final.returncode}, pending {report.get('vectors_pending')}, consistent: {not issues}"
    )
    figure(f"kill: repository entries changed by codesight during the killed runs: {changed_by_us}")
    if changed_by_us:
        problem(f"kill: codesight changed {changed_by_us} repository entries")
    if final.returncode != 0 or issues or report.get("vectors_pending"):
        problem(f"final index after the kills: exit {final.returncode}, {issues}, {final.stderr[-300:]}")
    check_untouched("kill", before, root)


def tui_kills(env: Env, root: Path, data: Path, cache: Path, rng, args) -> int:
    """kill -9 of the TUI mid-index, under tmux (the terminal it needs)."""
    n = 0
    for k in range(args.tui_kills):
        session = f"torture{os.getpid()}_{k}"
        cmd = (
            f"env CODESIGHT_DATA_DIR={data} CODESIGHT_CACHE_DIR={cache} PYTHONPATH={env.base['PYTHONPATH']}"
            f" CODESIGHT_TORTURE_NETLOG={env.netlog} HF_HUB_OFFLINE=1 CODESIGHT_FULL_MODEL=on"
            f" {sys.executable} -m codesight_tui {root}"
        )
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", cmd], check=True)
        time.sleep(rng.uniform(2.0, 15.0))
        pane = subprocess.run(
            ["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"], capture_output=True, text=True
        ).stdout.split()
        for pid in pane:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        time.sleep(1.0)  # the model's child process notices its parent is gone
        issues = consistency(data, root)
        if issues:
            problem(f"TUI kill {k}: {issues}")
        n += 1
    return n


def mcp_kills(env: Env, root: Path, data: Path, cache: Path, rng, args) -> int:
    """kill -9 of `codesight mcp` while its `index` tool rebuilds the index in the background
    (spoken to in raw JSON-RPC over its stdin, so the kill hits the server itself)."""
    calls = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "torture", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "index", "arguments": {"force_rebuild": True}},
        },
    ]
    n = 0
    for k in range(args.mcp_kills):
        proc = subprocess.Popen(
            [sys.executable, "-m", "codesight_tui", "mcp", "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env.env(data, cache),
            text=True,
        )
        for c in calls:
            proc.stdin.write(json.dumps(c) + "\n")
            proc.stdin.flush()
        time.sleep(rng.uniform(1.0, 12.0))
        alive = proc.poll() is None
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdin.close()
        time.sleep(1.0)  # the model's child process notices its parent is gone
        issues = consistency(data, root)
        if issues or not alive:
            problem(f"MCP kill {k}: {issues or 'the server had exited before the kill: ' + proc.stderr.read()[-300:]}")
        n += 1
    return n


# --- 2. concurrency -------------------------------------------------------------------------
CONCURRENT_INDEXER = r"""
import sys, time
from codesight_tui import CodeSight
from codesight_tui.core.errors import IndexBusyError
cs = CodeSight(sys.argv[1])
end = time.time() + float(sys.argv[2])
runs = busy = 0
while time.time() < end:
    try:
        cs.index(wait=False)
        runs += 1
    except IndexBusyError:
        busy += 1
    time.sleep(0.2)
print(runs, busy, flush=True)
"""


def section_concurrency(env: Env, args) -> None:
    secs = args.concurrency_seconds
    print(
        f"\n[concurrency] {secs:.0f} s: 2 indexers, a watcher, 2 CLI search loops, an API reader, files changing",
        flush=True,
    )
    work = env.work / "concurrency"
    root = corpus_copy(work, "repo", args.corpus)
    data, cache = work / "data", env.cache
    init = env.cli(["index", str(root), "--no-embed"], data, cache)
    if init.returncode != 0:
        problem(f"concurrency: first index failed: {init.stderr[-300:]}")
        return
    stop = threading.Event()
    errors: list[str] = []
    cli_runs = [0]
    reader_ms: list[float] = []
    edits = [0]

    def cli_loop(query: str) -> None:
        while not stop.is_set():
            r = env.cli(["search", query, "--path", str(root), "--mode", "bm25", "--json"], data, cache)
            cli_runs[0] += 1
            if r.returncode not in (0, 1) or "Traceback" in r.stderr or "locked" in r.stderr:
                errors.append(f"cli exit {r.returncode}: {r.stderr[-200:]}")

    def api_reader() -> None:
        cs = engine(root, data, cache)
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                cs.search("measure the width of text", mode="bm25")
                cs.changed_files()  # what the TUI's poll watcher runs
            except Exception as exc:  # noqa: BLE001
                errors.append(f"api reader: {type(exc).__name__}: {exc}")
            reader_ms.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.05)

    def mutator() -> None:
        rng = random.Random(args.seed)
        files = sorted(root.rglob("*.py"))
        while not stop.wait(0.5):
            f = rng.choice(files)
            if rng.random() < 0.8 and f.exists():
                f.write_text(f.read_text() + f"\n\ndef torture_edit_{edits[0]}():\n    return {edits[0]}\n")
            else:
                (root / f"new_{edits[0]}.py").write_text(f"def added_{edits[0]}():\n    pass\n")
            edits[0] += 1

    indexers = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_INDEXER, str(root), str(secs)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env.env(data, cache),
        )
        for _ in range(2)
    ]
    # `codesight watch` (inotify, the batches the TUI and the MCP server use too) beside them.
    watcher = subprocess.Popen(
        [sys.executable, "-m", "codesight_tui", "watch", str(root), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env.env(data, cache),
    )
    threads = [
        threading.Thread(target=f, args=a, daemon=True)
        for f, a in ((cli_loop, ("render a table",)), (cli_loop, ("Console",)), (api_reader, ()), (mutator, ()))
    ]
    for t in threads:
        t.start()
    outs = [p.communicate(timeout=secs + 900) for p in indexers]
    watcher.send_signal(signal.SIGINT)
    wout, werr = watcher.communicate(timeout=300)
    batches = [json.loads(x) for x in wout.splitlines() if x.startswith("{")]
    if watcher.returncode != 0 or "Traceback" in werr:
        errors.append(f"watcher exit {watcher.returncode}: {werr[-300:]}")
    stop.set()
    for t in threads:
        t.join(120)
    runs = busy = 0
    for (out, err), p in zip(outs, indexers, strict=False):
        if p.returncode != 0 or "Traceback" in err:
            errors.append(f"indexer exit {p.returncode}: {err[-300:]}")
        else:
            r, b = out.split()
            runs, busy = runs + int(r), busy + int(b)
    final = env.cli(["index", str(root)], data, cache, timeout=3600)
    issues = consistency(data, root)
    figure(
        f"concurrency: watcher ({'inotify' if 'file events' in werr else 'poll'}): {len(batches)} batches,"
        f" {sum(b['files_changed'] for b in batches)} files re-indexed by it"
    )
    figure(
        f"concurrency: {runs} index runs ({busy} found the other indexer busy), {cli_runs[0]} CLI searches,"
        f" {len(reader_ms)} API reads, {edits[0]} file edits in {secs:.0f} s; errors {len(errors)},"
        f" 'database is locked' {sum('locked' in e for e in errors)}"
    )
    if reader_ms:
        q = statistics.quantiles(reader_ms, n=100) if len(reader_ms) > 1 else reader_ms * 99
        figure(
            f"concurrency: API reader latency p50 {statistics.median(reader_ms):.1f} ms, p99 {q[98]:.1f} ms,"
            f" max {max(reader_ms):.1f} ms (target: never blocked over 200 ms)"
        )
    figure(f"concurrency: final index exit {final.returncode}, consistent: {not issues}")
    for e in errors[:5]:
        problem("concurrency: " + e)
    if issues or final.returncode:
        problem(f"concurrency: final state {issues} {final.stderr[-300:]}")


# --- 3. storage faults ----------------------------------------------------------------------
def _mount(*args: str) -> bool:
    return os.geteuid() == 0 and subprocess.run(["mount", *args], capture_output=True).returncode == 0


def section_faults(env: Env, args) -> None:
    print("\n[faults] read-only, disk full, damaged files, schema change", flush=True)
    work = env.work / "faults"
    root = corpus_copy(work, "repo", args.corpus)
    before = snapshot(root)
    cache = env.cache
    results: list[tuple[str, bool, str]] = []

    def traceback_free(*runs) -> bool:
        return all("Traceback" not in r.stderr for r in runs)

    # a warm cache first, so that every rebuild below reuses vectors instead of embedding
    data = work / "data"
    first = env.cli(["index", str(root), "--json"], data, cache, timeout=3600)
    if first.returncode != 0:
        problem(f"faults: first index failed: {first.stderr[-300:]}")
        return

    def want(key: str) -> bool:
        return not args.faults or key in args.faults.split(",")

    # read-only data directory
    ro = work / "data-ro"
    if not want("read-only"):
        pass
    elif (
        shutil.copytree(data, ro)
        and _mount("--bind", str(ro), str(ro))
        and _mount("-o", "remount,bind,ro", str(ro), str(ro))
    ):
        try:
            s = env.cli(["search", "render a table", "--path", str(root)], ro, cache)
            st = env.cli(["status", str(root)], ro, cache)
            ix = env.cli(["index", str(root)], ro, cache)
            ok = (
                s.returncode == 0
                and st.returncode == 0
                and ix.returncode == 2
                and "read-only" in ix.stderr
                and traceback_free(s, st, ix)
            )
            results.append(
                ("read-only data directory: search and status work, index says why not", ok, ix.stderr.strip()[-160:])
            )
        finally:
            subprocess.run(["umount", str(ro)])
    else:
        results.append(("read-only data directory (needs a bind mount as root: skipped)", True, "skipped"))

    # disk full: a small tmpfs as the data directory, then room again
    full = work / "data-full"
    full.mkdir()
    if not want("disk"):
        pass
    elif _mount("-t", "tmpfs", "-o", f"size={'160k' if CORPUS_FILES else '2m'}", "tmpfs", str(full)):
        try:
            ix = env.cli(["index", str(root)], full, cache, timeout=3600)
            s = env.cli(["search", "render a table", "--path", str(root), "--mode", "bm25"], full, cache)
            _mount("-o", "remount,size=512m", str(full))
            again = env.cli(["index", str(root), "--json"], full, cache, timeout=3600)
            issues = consistency(full, root)
            ok = (
                ix.returncode != 0
                and traceback_free(ix, s, again)
                and len(ix.stderr.strip().splitlines()) <= 3
                and s.returncode in (0, 1)
                and again.returncode == 0
                and not issues
            )
            results.append(
                (
                    "disk full mid-index: one clear error, still searchable, the next run completes",
                    ok,
                    ix.stderr.strip()[-160:],
                )
            )
        finally:
            subprocess.run(["umount", str(full)])
    else:
        results.append(("disk full (needs a tmpfs mount as root: skipped)", True, "skipped"))

    def damaged(name: str, damage) -> None:
        d = work / f"data-{name.split()[0]}"
        shutil.copytree(data, d)
        damage(next(d.glob("*/")))
        s = env.cli(["search", "render a table", "--path", str(root)], d, cache)
        # (--fast: vector search is tried after the rebuild only; each one loads the model, 7 s)
        v = s if args.fast else env.cli(["search", "render a table", "--path", str(root), "--mode", "vector"], d, cache)
        # Damage no query touches is found by the periodic check (daily by default; every run here).
        check = {"CODESIGHT_INTEGRITY_CHECK_HOURS": "0"}
        runs = [env.cli(["index", str(root), "--json"], d, cache, timeout=3600, extra=check) for _ in range(2)]
        after = env.cli(["search", "render a table", "--path", str(root), "--mode", "vector"], d, cache)
        issues = consistency(d, root)
        rep = [json.loads(r.stdout) if r.returncode == 0 else {} for r in runs]
        rebuilt_once = "rebuilt" in runs[0].stderr + s.stderr and "rebuilt" not in runs[1].stderr
        # The first search works, or, where its query reads the damaged page, says in one line that
        # the index is damaged and that `codesight index` rebuilds it (which the runs then check).
        searched = s.returncode == 0 or (
            s.returncode == 1 and "is damaged" in s.stderr and len(s.stderr.strip().splitlines()) == 1
        )
        ok = (
            traceback_free(s, v, after, *runs)
            and all(r.returncode == 0 for r in runs)
            and not issues
            and rep[0].get("embedded", 1) == 0
            and rebuilt_once
            and searched
            and after.returncode == 0
        )
        results.append(
            (
                f"{name}: detected, rebuilt once with a notice, cached vectors reused, no loop",
                ok,
                f"search {s.returncode} ({len(s.stderr.strip().splitlines())} lines), vector {v.returncode},"
                f" index {[r.returncode for r in runs]}, embedded {rep[0].get('embedded')},"
                f" search said {s.stderr.strip()!r},"
                f" then vector {after.returncode}, issues {issues}, rebuilt once {rebuilt_once}: "
                + (s.stderr + v.stderr + runs[0].stderr).strip().replace("\n", " | ")[-300:],
            )
        )

    def truncate(d: Path) -> None:
        db = d / "index.db"
        subprocess.run(
            [
                sys.executable,
                "-c",
                f"import sqlite3; sqlite3.connect({str(db)!r}).execute('PRAGMA wal_checkpoint(TRUNCATE)')",
            ],
            check=True,
        )
        os.truncate(db, db.stat().st_size // 2)

    def garble(d: Path) -> None:
        db = d / "index.db"
        subprocess.run(
            [
                sys.executable,
                "-c",
                f"import sqlite3; sqlite3.connect({str(db)!r}).execute('PRAGMA wal_checkpoint(TRUNCATE)')",
            ],
            check=True,
        )
        raw = bytearray(db.read_bytes())
        mid = len(raw) // 2
        raw[mid : mid + 8192] = os.urandom(8192)
        db.write_bytes(bytes(raw))

    def drop_fragment(d: Path) -> None:
        # the largest data file: after compaction, the one the current version reads
        files = (d / "vectors.lance" / "chunks.lance" / "data").glob("*")
        max(files, key=lambda p: p.stat().st_size).unlink()

    def future_manifest(d: Path) -> None:
        # manifests are named u64::MAX - version: a newer version has a smaller number
        versions = d / "vectors.lance" / "chunks.lance" / "_versions"
        newest = min(int(p.name.split(".")[0]) for p in versions.glob("*.manifest"))
        (versions / f"{newest - 3}.manifest").write_bytes(b"\x00garbage from the future" * 40)

    def old_schema(d: Path) -> None:
        c = sqlite3.connect(d / "index.db")
        c.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
        c.commit()
        c.close()

    for name, fn in (
        ("truncated index.db", truncate),
        ("garbage page in index.db", garble),
        ("deleted vector data file", drop_fragment),
        ("vector manifest from the future", future_manifest),
        ("schema change", old_schema),
    ):
        if not want(name.split()[0]):
            continue
        try:
            damaged(name, fn)
        except Exception as exc:  # noqa: BLE001
            results.append((name, False, f"{type(exc).__name__}: {exc}"))
    for name, ok, detail in results:
        figure(f"fault: {name}: {'ok' if ok else 'FAILED'}" + (f"  [{detail}]" if detail and not ok else ""))
        if not ok:
            problem(f"fault {name}: {detail}")
    figure(f"faults survived: {sum(ok for _, ok, _ in results)} of {len(results)}")
    check_untouched("faults", before, root)


# --- 4. hostile repositories -----------------------------------------------------------------
def hostile_tree(root: Path, fast: bool) -> dict[str, int]:
    """Write the hostile corpus; returns what was made."""
    made: dict[str, int] = {}
    root.mkdir(parents=True)
    (root / "ok.py").write_text("def hostile_corpus_marker():\n    return 'found me'\n")
    (root / "binary.py").write_bytes(bytes(range(256)) * 64)
    (root / "huge.py").write_bytes(b"x = 1  # padding line\n" * (50 * 1024 * 1024 // 22))
    (root / "minified.js").write_text("var a=1;" * (1024 * 1024 // 8))
    (root / "latin1.py").write_bytes("caf\xe9 = 'cr\xe8me'\n".encode("latin-1"))
    (root / "utf16.py").write_bytes("def utf16_function():\n    return 1\n".encode("utf-16"))
    (root / "crlf.py").write_bytes(b"def crlf_function():\r\n    return 1\r\n")
    (root / "cr.py").write_bytes(b"def lone_cr_function():\r    return 1\r")
    (root / "late_nul.py").write_bytes(b"# text\n" * 1300 + b"\x00\x00binary after 8 KB\n")
    os.symlink(".", root / "loop")
    os.symlink("/etc", root / "outside")
    os.symlink(root / "missing-target", root / "dangling.py")
    os.mkfifo(root / "fifo.py")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock.py"))
    sock.close()
    (root / "noperm.py").write_text("def secret():\n    pass\n")
    os.chmod(root / "noperm.py", 0)
    for name in ("new\nline.py", "-leading-dash.py", "with spaces.py", "x" * 251 + ".py"):
        (root / name).write_text("def odd_name():\n    pass\n")
    with open(os.fsencode(root) + b"/bad\xff\xfename.py", "wb") as fh:
        fh.write(b"x = 1\n")
    n_flat = 1_000 if fast else 50_000
    flat = root / "flat"
    flat.mkdir()
    for i in range(n_flat):
        (flat / f"f{i}.txt").write_text(f"flat file {i}\n")
    made["files in one directory"] = n_flat
    deep = root
    for i in range(200):
        deep = deep / f"d{i % 10}"
    deep.mkdir(parents=True)
    (deep / "deep.py").write_text("def two_hundred_deep():\n    pass\n")
    (root / ".gitignore").write_text(
        "\n".join(
            [
                "**/**/**/**/**/*a*b*c*d*e*f*",
                "[",
                "!",
                "\\",
                "a***b",
                "a/**/b/**/c/**/d",
                "x" + "*?" * 150 + "y",
                "!flat/",
                "[z-a]",
            ]
            + [f"ignored_{i}/" for i in range(1000)]
        )
    )
    made["hostile entries"] = 24
    return made


def section_hostile(env: Env, args) -> None:
    print("\n[hostile] a generated repository of hostile files", flush=True)
    work = env.work / "hostile"
    root = work / "repo"
    made = hostile_tree(root, args.fast)
    before = snapshot(root)
    data, cache = work / "data", env.cache
    t0 = time.perf_counter()
    try:
        # --fast: the walk, the readers, the lexical phase and the static tier's tokenizer (the
        # same as the model's); the full run embeds the hostile text with the model too.
        ix = env.cli(
            ["index", str(root), "--json", "--yes", *(["--static-only"] if args.fast else [])],
            data,
            cache,
            timeout=args.hostile_timeout,
        )
    except subprocess.TimeoutExpired:
        problem(f"hostile: index hung for {args.hostile_timeout} s")
        return
    secs = time.perf_counter() - t0
    st = env.cli(["status", str(root), "--json"], data, cache)
    found = env.cli(["search", "hostile_corpus_marker", "--path", str(root), "--mode", "bm25", "--json"], data, cache)
    queries = [
        env.cli(["search", q, "--path", str(root), "--json"], data, cache)
        for q in ("two_hundred_deep", "utf16_function", "crlf_function", "lone_cr_function", "odd_name")
    ]
    crashes = [r for r in (ix, st, found, *queries) if r.returncode not in (0, 1) or "Traceback" in r.stderr]
    skipped = json.loads(st.stdout).get("skipped", {}) if st.returncode == 0 else {}
    hits = {
        q: bool(json.loads(r.stdout))
        for q, r in zip(("deep", "utf16", "crlf", "cr", "odd names"), queries, strict=False)
        if r.returncode in (0, 1) and r.stdout.strip()
    }
    figure(f"hostile: {sum(made.values()):,} entries indexed in {secs:.1f} s; crashes {len(crashes)}, hangs 0")
    figure("hostile: skipped by reason (status --json): " + ", ".join(f"{k} {v}" for k, v in skipped.items()))
    figure("hostile: found: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in hits.items()))
    if crashes:
        problem(f"hostile: {len(crashes)} crashes: {crashes[0].stderr[-300:]}")
    if not found.stdout.strip() or not json.loads(found.stdout or "[]"):
        problem("hostile: the ordinary file beside the hostile ones was not found")
    for reason in ("binary", "too_large", "special", "non_utf8_name"):
        if not any(k.startswith(reason) for k in skipped):
            problem(f"hostile: no skip counted as {reason!r}: {skipped}")
    check_untouched("hostile", before, root)


# --- 5. hostile queries ------------------------------------------------------------------------
def section_queries(env: Env, args) -> None:
    print(
        f"\n[queries] {args.queries:,} hypothesis queries through the API, {args.cli_queries} through the CLI",
        flush=True,
    )
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from codesight_tui.core.errors import CodeSightError

    root, data, cache = indexed_copy(env, "queries", args)
    cs = engine(root, data, cache)
    counts = {"queries": 0, "exceptions": 0, "malformed": 0, "usage errors": 0}
    fts = st.sampled_from(
        [
            '"',
            "NEAR(",
            "AND",
            "OR",
            "NOT",
            "*",
            "^",
            ":",
            "col:",
            "(",
            ")",
            "{",
            "}",
            "-",
            "\x00",
            "\x1b[31m",
            "\ud800",
            "検索",
            "🙂",
            "a" * 100_000,
        ]
    )
    query = st.one_of(st.text(max_size=200), st.lists(st.one_of(fts, st.text(max_size=12)), max_size=12).map(" ".join))
    glob = st.one_of(st.none(), st.sampled_from(["*.py", "[", "!", "**/", "src/", "\\", ""]), st.text(max_size=8))
    lang = st.one_of(st.none(), st.sampled_from(["python", "klingon", "", "py\x00"]))
    mode = st.sampled_from(["hybrid", "bm25", "vector"])

    @settings(
        max_examples=args.queries,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(query, glob, lang, mode)
    def fuzz(q, g, lg, m):
        counts["queries"] += 1
        try:
            hits = cs.search(q, mode=m, glob=g, language=lg, top_k=5)
        except CodeSightError:
            counts["usage errors"] += 1  # a bad glob: one clear line, as the CLI shows it
            return
        except Exception as exc:  # noqa: BLE001
            counts["exceptions"] += 1
            if counts["exceptions"] <= 3:
                problem(f"queries: {type(exc).__name__}: {exc} for {q[:60]!r} {m} {g!r} {lg!r}")
            return
        for h in hits:
            if not (isinstance(h.path, str) and 1 <= h.start_line <= h.line <= h.end_line and h.score >= 0):
                counts["malformed"] += 1

    t0 = time.perf_counter()
    fuzz()
    api_s = time.perf_counter() - t0
    rng = random.Random(args.seed)
    alphabet = "abcdefXYZ _-.:*\"'()[]{}^$\\/!?<>|&;`~#%@+=,\t" + "éü検索🙂"
    cli_bad = 0
    for _i in range(args.cli_queries):
        q = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        r = env.cli(["search", q, "--path", str(root), "--mode", "bm25", "--json", "-n", "3"], data, cache)
        if (
            r.returncode not in (0, 1, 2)
            or "Traceback" in r.stderr
            or (r.returncode == 0 and not isinstance(json.loads(r.stdout), list))
        ):
            cli_bad += 1
            if cli_bad <= 3:
                problem(f"queries: CLI exit {r.returncode} for {q!r}: {r.stderr[-200:]}")
    mcp = mcp_fuzz(env, root, data, cache, rng, args.mcp_queries)
    figure(
        f"queries: {counts['queries']:,} API queries in {api_s:.0f} s: exceptions {counts['exceptions']},"
        f" malformed results {counts['malformed']}, clear usage errors {counts['usage errors']};"
        f" CLI: {args.cli_queries} queries, failures {cli_bad}; MCP search over stdio: {mcp['queries']:,} queries,"
        f" failures {mcp['failures']}, malformed {mcp['malformed']}, clear tool errors {mcp['tool errors']}"
    )
    if counts["malformed"]:
        problem(f"queries: {counts['malformed']} malformed results")


MCP_TOKENS = [
    '"',
    "NEAR(",
    "AND",
    "OR",
    "NOT",
    "*",
    "^",
    ":",
    "col:",
    "(",
    ")",
    "{",
    "}",
    "-",
    "\x00",
    "\x1b[31m",
    "検索",
    "🙂",
    "a" * 100_000,
    "\t",
    "\\",
    "'",
    "%",
    "_",
]


def mcp_fuzz(env: Env, root: Path, data: Path, cache: Path, rng, n: int) -> dict:
    """Random queries, globs, languages and modes through `codesight mcp` over stdio (the SDK's
    client): every answer must be a result or one clear tool error, never a broken server."""
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    counts = {"queries": 0, "failures": 0, "malformed": 0, "tool errors": 0}
    alphabet = "abcdefXYZ _-.:*\"'()[]{}^$\\/!?<>|&;`~#%@+=,\t" + "éü検索🙂"

    def one() -> dict:
        words = [
            rng.choice(MCP_TOKENS)
            if rng.random() < 0.4
            else "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
            for _ in range(rng.randint(1, 8))
        ]
        args = {
            "query": " ".join(words),
            "top_k": rng.choice([1, 5, 10, 0, -3, 1000]),
            "mode": rng.choice([None, "hybrid", "bm25", "vector", "nonsense"]),
        }
        if rng.random() < 0.3:
            args["file_glob"] = rng.choice(["*.py", "[", "!", "**/", "src/", "\\", "", "*" * 50])
        if rng.random() < 0.2:
            args["language"] = rng.choice(["python", "klingon", "", "py\x00"])
        return {k: v for k, v in args.items() if v is not None}

    async def run() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "codesight_tui", "mcp", "--root", str(root)],
            env=env.env(data, cache),
            cwd=str(root),
        )
        async with Client(params, read_timeout_seconds=120) as client:
            for _ in range(n):
                args = one()
                counts["queries"] += 1
                try:
                    r = await client.call_tool("search", args)
                except Exception as exc:  # noqa: BLE001 (the transport or the server broke)
                    counts["failures"] += 1
                    if counts["failures"] <= 3:
                        problem(f"queries: MCP {type(exc).__name__}: {exc} for {str(args)[:120]}")
                    continue
                if r.is_error:
                    text = r.content[0].text if r.content else ""
                    counts["tool errors"] += 1
                    if "Traceback" in text or "\n" in text.strip():
                        counts["malformed"] += 1
                    continue
                out = r.structured_content or {}
                for h in out.get("results", []):
                    if not (isinstance(h.get("path"), str) and 1 <= h["start_line"] <= h["line"] <= h["end_line"]):
                        counts["malformed"] += 1

    if n:
        asyncio.run(run())
    if counts["malformed"]:
        problem(f"queries: {counts['malformed']} malformed MCP answers")
    return counts


# --- 8. footprint -----------------------------------------------------------------------------
def section_footprint(env: Env, args) -> None:
    print(f"\n[footprint] {args.edits} small edits, each followed by an index run (API, real model)", flush=True)
    root, data, cache = indexed_copy(env, "footprint", args)
    cs = engine(root, data, cache)
    files = sorted(root.rglob("*.py"))
    rng = random.Random(args.seed)
    originals = {f: f.read_text() for f in files}
    samples = []
    t0 = time.perf_counter()
    for i in range(args.edits):
        f = rng.choice(files)
        f.write_text(originals[f] + f"\n\ndef footprint_edit_{i}():\n    return {i}\n")
        cs.index()
        if i % max(1, args.edits // 10) == 0 or i == args.edits - 1:
            samples.append(
                (i + 1, cs.storage.vectors.version_count(), cs.storage.vectors.size_bytes(), cs.store.size_bytes())
            )
    secs = time.perf_counter() - t0
    repo_bytes = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    cache_bytes = sum(p.stat().st_size for p in cache.glob("*.sqlite*"))
    for n, versions, lance, sql in samples:
        figure(
            f"footprint: after {n:>4} edits: {versions} vector versions, vectors {lance / 1e6:.1f} MB,"
            f" SQLite {sql / 1e6:.1f} MB"
        )
    figure(
        f"footprint: {args.edits} edits in {secs:.0f} s ({secs / args.edits * 1000:.0f} ms each);"
        f" repository {repo_bytes / 1e6:.1f} MB, index {(samples[-1][2] + samples[-1][3]) / 1e6:.1f} MB,"
        f" shared cache {cache_bytes / 1e6:.1f} MB"
    )
    issues = consistency(data, root)
    if issues:
        problem(f"footprint: {issues}")
    if samples[-1][1] > 200:
        problem(f"footprint: {samples[-1][1]} vector versions after {args.edits} edits")


# --- 7. resource limits (issue 34): each probe one fresh `codesight index`, its peak RSS measured ---
RSS_LIMIT_MB = 1536

PEAK = """
import resource, subprocess, sys, time, json
t = time.perf_counter()
try:
    r = subprocess.run(sys.argv[2:], capture_output=True, text=True, timeout=float(sys.argv[1]))
    rc, err = r.returncode, r.stderr
except subprocess.TimeoutExpired:
    rc, err = "hang", ""
print(json.dumps({"rc": rc, "seconds": time.perf_counter() - t, "stderr": err[-400:],
                  "peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def _docx_bomb(path: Path, xml_mb: int) -> None:
    from docmaker import make_docx_bomb  # tests/docmaker.py: the files the tests make, made the same way

    make_docx_bomb(path, xml_mb)


def _pdf_bomb(path: Path, stream_mb: int) -> None:
    from docmaker import make_pdf_bomb

    make_pdf_bomb(path, stream_mb)


def _pptx_slides(path: Path, slides: int) -> None:
    from pptx import Presentation

    prs = Presentation()
    layout = prs.slide_layouts[5]
    for i in range(slides):
        prs.slides.add_slide(layout).shapes.title.text = f"slide {i} quarterly numbers"
    prs.save(str(path))


def section_limits(env: Env, args) -> None:  # noqa: C901 - one report, its checks in the order it prints them
    tiny = 5_000 if args.fast else args.tiny_files
    slides = 500 if args.fast else 10_000
    print(
        f"\n[limits] each probe in a fresh `codesight index`: peak RSS (limit {RSS_LIMIT_MB} MB), time, no hang",
        flush=True,
    )
    work = env.work / "limits"

    def probe(name: str, make) -> None:
        root = work / name.split()[0]
        (root / ".git").mkdir(parents=True)
        (root / "ok.py").write_text("def limits_marker():\n    return 1\n")
        t0 = time.perf_counter()
        made = make(root)
        build = time.perf_counter() - t0
        data = work / f"data-{name.split()[0]}"
        r = subprocess.run(
            [
                sys.executable,
                "-c",
                PEAK,
                str(args.hostile_timeout),
                sys.executable,
                "-m",
                "codesight_tui",
                "index",
                str(root),
                "--json",
                "--yes",
                "--no-embed",
            ],
            capture_output=True,
            text=True,
            env=env.env(data, env.cache),
        )
        res = json.loads(r.stdout)
        found = env.cli(["search", "limits_marker", "--path", str(root), "--mode", "bm25", "--json"], data, env.cache)
        st = env.cli(["status", str(root), "--json"], data, env.cache)
        skipped = json.loads(st.stdout).get("skipped", {}) if st.returncode == 0 else {}
        docs = (json.loads(st.stdout).get("documents") or {}).get("skipped", {}) if st.returncode == 0 else {}
        figure(
            f"limits: {name} ({made}, built in {build:.0f} s): index rc {res['rc']} in {res['seconds']:.1f} s,"
            f" peak RSS {res['peak_mb']:.0f} MB; skipped {skipped or '-'}{'; documents ' + str(docs) if docs else ''}"
        )
        if res["rc"] != 0 or "Traceback" in res["stderr"]:
            problem(f"limits: {name}: rc {res['rc']}: {res['stderr'][-200:]}")
        if res["peak_mb"] > RSS_LIMIT_MB:
            problem(f"limits: {name}: peak RSS {res['peak_mb']:.0f} MB")
        if found.returncode != 0 or "Traceback" in found.stderr:
            problem(f"limits: {name}: the ordinary file beside it was not found")

    def single_line(root: Path) -> str:
        with open(root / "one-line.js", "wb") as fh:
            for _ in range(200):
                fh.write(b"var a=1;" * (1024 * 1024 // 8))
        return "200 MB in one line"

    def deep(root: Path) -> str:
        d = root
        for _ in range(500):
            d = d / "d"
            d.mkdir()
        (d / "bottom.py").write_text("def bottom():\n    pass\n")
        return "500 levels"

    def loop(root: Path) -> str:
        (root / "a").mkdir()
        os.symlink("..", root / "a" / "up")
        os.symlink("b", root / "c")
        os.symlink("c", root / "b")
        return "a link to its parent, two links to each other"

    def many(root: Path) -> str:
        for i in range(tiny):
            d = root / f"d{i // 1000}"
            if i % 1000 == 0:
                d.mkdir()
            (d / f"f{i}.py").write_text(f"x{i} = {i}\n")
        return f"{tiny:,} tiny files"

    def docx_bomb(root: Path) -> str:
        _docx_bomb(root / "bomb.docx", 118)
        return f"{(root / 'bomb.docx').stat().st_size // 1024} KB inflating to 118 MB of XML"

    def pdf_bomb(root: Path) -> str:
        _pdf_bomb(root / "bomb.pdf", 290)
        return f"{(root / 'bomb.pdf').stat().st_size // 1024} KB holding a 290 MB stream"

    def deck(root: Path) -> str:
        _pptx_slides(root / "deck.pptx", slides)
        return f"{slides:,} slides, {(root / 'deck.pptx').stat().st_size // 1024} KB"

    for name, make in (
        ("single-line file", single_line),
        ("deep directories", deep),
        ("symlink loop", loop),
        ("many tiny files", many),
        ("zip-bomb docx", docx_bomb),
        ("pdf bomb", pdf_bomb),
        ("big pptx", deck),
    ):
        try:
            probe(name, make)
        except Exception as exc:  # noqa: BLE001
            problem(f"limits: {name}: {type(exc).__name__}: {exc}")
    d = work / "deep" / "d"
    if d.exists():  # rmtree recurses per level: take the deep tree down here
        leaf = d
        while (leaf / "d").exists():
            leaf = leaf / "d"
        (leaf / "bottom.py").unlink(missing_ok=True)
        while leaf != work / "deep":
            leaf.rmdir()
            leaf = leaf.parent


# --- 8. a branch switch under `codesight watch` while searches run ----------------------------------
def section_checkout(env: Env, args) -> None:
    n = 300 if args.fast else args.checkout_files
    print(f"\n[checkout] `git checkout` of {n:,} changed files under `codesight watch`, searches running", flush=True)
    work = env.work / "checkout"
    root = work / "repo"
    root.mkdir(parents=True)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]

    def run(*a: str) -> None:
        subprocess.run([*git, *a], cwd=root, check=True, capture_output=True)

    run("init", "-q", "-b", "main")
    for i in range(n):
        (root / f"pkg{i % 20}").mkdir(exist_ok=True)
        (root / f"pkg{i % 20}" / f"m{i}.py").write_text(f"def main_branch_{i}():\n    return {i}\n")
    run("add", "-A")
    run("commit", "-qm", "main")
    run("checkout", "-qb", "other")
    for i in range(n):
        (root / f"pkg{i % 20}" / f"m{i}.py").write_text(f"def other_branch_{i}(value):\n    return value * {i}\n")
    run("commit", "-qam", "other")
    run("checkout", "-q", "main")
    data = work / "data"
    t0 = time.perf_counter()
    first = env.cli(["index", str(root), "--no-embed", "--json"], data, env.cache)
    fresh = time.perf_counter() - t0
    watch = subprocess.Popen(
        [sys.executable, "-m", "codesight_tui", "watch", str(root), "--no-embed", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env.env(data, env.cache),
    )
    errors: list[str] = []
    stop = threading.Event()

    def searcher() -> None:
        while not stop.is_set():
            r = env.cli(["search", "branch", "--path", str(root), "--mode", "bm25", "--json"], data, env.cache)
            if r.returncode not in (0, 1) or "Traceback" in r.stderr:
                errors.append(r.stderr[-200:])

    try:
        time.sleep(3)  # the watcher's catch-up batch
        th = threading.Thread(target=searcher, daemon=True)
        th.start()
        t0 = time.perf_counter()
        run("checkout", "-q", "other")
        switch = time.perf_counter() - t0
        t0 = time.perf_counter()  # from the moment git returns: what the user waits for
        from codesight_tui import CodeSight

        os.environ["CODESIGHT_DATA_DIR"] = str(data)
        settled = None
        while time.perf_counter() - t0 < 300:
            cs = CodeSight(root)
            if cs.has_index():
                c = cs.store.conn
                old_left = c.execute("SELECT count(*) FROM chunks WHERE content LIKE '%main_branch_%'").fetchone()[0]
                new_in = c.execute(
                    "SELECT count(DISTINCT path) FROM chunks WHERE content LIKE '%other_branch_%'"
                ).fetchone()[0]
                if old_left == 0 and new_in == n and not cs.indexing_now():
                    settled = time.perf_counter() - t0
                    changed = sum(len(v) for v in cs.changed_files().values())
                    cs.close()
                    break
            cs.close()
            time.sleep(0.2)
        # The same work from scratch under the same load (the search loop still runs): a fresh
        # lexical index of the new branch in a new process, into a data directory of its own.
        t1 = time.perf_counter()
        again = env.cli(["index", str(root), "--no-embed", "--json"], work / "data-fresh", env.cache)
        fresh_loaded = time.perf_counter() - t1
        stop.set()
        th.join(30)
    finally:
        watch.terminate()
        out, err = watch.communicate(timeout=30)
    issues = consistency(data, root)
    figure(
        f"checkout: fresh lexical index of {n:,} files {fresh:.1f} s alone, {fresh_loaded:.1f} s with the search"
        f" loop running (rc {first.returncode}, {again.returncode}); git took {switch:.1f} s to switch, and"
        f" from its return the watcher settled in"
        f" {settled if settled is None else round(settled, 1)} s (search loop running), files still differing"
        f" {changed if settled else '?'}; search errors {len(errors)}; watch rc {watch.returncode}"
    )
    if settled is None:
        problem("checkout: the index never matched the new branch")
    elif settled > (2 * fresh_loaded + 0.5 if args.fast else fresh_loaded):
        # With --fast's 300 files both take about a second, mostly process start-up on a machine
        # the search loop and another section keep busy, and the harness sees "settled" only every
        # 0.2 s (a CI run measured 1.3 s against 0.8): the comparison is strict at full size (3,000
        # files) only, and --fast catches a settle that is slower by a multiple.
        problem(
            f"checkout: settling took {settled:.1f} s, a fresh lexical phase under the same load {fresh_loaded:.1f} s"
        )
    if errors or issues or "Traceback" in err:
        problem(f"checkout: errors {errors[:2]}, issues {issues}, {err[-200:]}")


# --- install and the fleet (issue 48) -------------------------------------------------------------
def _tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file's bytes and every link's target under ``root`` (no mtimes: a byte-for-byte
    restore rewrites a file)."""
    out: dict[str, bytes] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = b"->" + os.readlink(p).encode()
        elif p.is_file():
            out[rel] = p.read_bytes()
        elif p.is_dir():
            out[rel + "/"] = b""
    return out


def section_install(env: Env, args) -> None:
    """`codesight install` / `uninstall` against the files users and cloned repositories really
    have: links planted to write outside a project, Codex TOML with dotted keys, inline tables and
    comments, VS Code's JSON with comments, a read-only file, a hand-made entry, and six agents
    into a project and out again, byte for byte."""
    import tomllib

    base = env.work / "install"
    data = base / "data"
    cases: list[tuple[str, bool]] = []

    def run(home: Path, *argv: str) -> subprocess.CompletedProcess:
        # XDG_CONFIG_HOME too: VS Code's and OpenCode's files are under it, whatever the caller's is
        return env.cli(
            list(argv),
            data,
            env.cache,
            timeout=120,
            extra={"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")},
        )

    def new_home(name: str) -> Path:
        home = base / name
        for d in (".claude", ".cursor", ".codex", ".gemini", ".config/opencode"):
            (home / d).mkdir(parents=True, exist_ok=True)
        return home

    # 1. links a cloned repository plants, pointing at the user's files
    home = new_home("home-links")
    (home / "precious.txt").write_text("keep me\n")
    (home / ".bashrc").write_text("alias ll='ls -l'\n")
    proj = base / "planted"
    (proj / ".git").mkdir(parents=True)
    (proj / ".cursor" / "rules").mkdir(parents=True)
    (proj / ".cursor" / "rules" / "codesight.mdc").symlink_to(home / "precious.txt")
    (proj / "CLAUDE.md").symlink_to(home / ".bashrc")
    (proj / "AGENTS.md").symlink_to(home / "precious.txt")
    before = _tree_bytes(home)
    r1 = run(home, "install", "claude-code", "cursor", "codex", "--project", str(proj))
    r2 = run(home, "uninstall", "claude-code", "cursor", "codex", "--project", str(proj))
    same = _tree_bytes(home) == before
    cases.append(
        (
            "links out of a project refused, the user's files untouched",
            same and r1.returncode == 1 and "links out of the project" in r1.stderr and "Traceback" not in r2.stderr,
        )
    )

    # 2. Codex TOML as users write it; install then uninstall gives back the same bytes
    variants = {
        "dotted keys": 'model = "o3"\nmcp_servers.other.command = "x"\nmcp_servers.other.args = ["-v"]\n',
        "inline table": 'mcp_servers = { other = { command = "x", args = ["-v"] } }\n',
        "empty table with a comment": "# mine\n[mcp_servers]\n# servers go here\n",
        "CRLF, no final newline": 'model = "o3"\r\n[mcp_servers.other]\r\ncommand = "y"',
    }
    for name, text in variants.items():
        home = new_home(f"home-toml-{len(cases)}")
        config = home / ".codex" / "config.toml"
        config.write_bytes(text.encode())
        r1 = run(home, "install", "codex")
        try:
            got = tomllib.loads(config.read_text())
            kept = got["mcp_servers"]["codesight"]["args"][-1] == "mcp" and (
                "other" not in text or got["mcp_servers"]["other"]["command"] in ("x", "y")
            )
        except (OSError, tomllib.TOMLDecodeError, KeyError, IndexError, TypeError):  # not kept as it was
            kept = False
        r2 = run(home, "uninstall", "codex")
        cases.append(
            (
                f"Codex TOML, {name}",
                kept and r1.returncode == r2.returncode == 0 and config.read_bytes() == text.encode(),
            )
        )

    # 3. VS Code's mcp.json with comments and a trailing comma
    home = new_home("home-jsonc")
    code = home / ".config" / "Code" / "User"
    code.mkdir(parents=True)
    text = '{\n  // my servers\n  "servers": {\n    "other": {"command": "x"}, /* keep */\n  },\n}\n'
    (code / "mcp.json").write_text(text)
    r1 = run(home, "install", "copilot")
    edited = (code / "mcp.json").read_text()
    r2 = run(home, "uninstall", "copilot")
    cases.append(
        (
            "VS Code JSON with comments edited in place and given back",
            r1.returncode == 0
            and "// my servers" in edited
            and '"codesight"' in edited
            and (code / "mcp.json").read_text() == text,
        )
    )

    # 4. a read-only settings file, and 5. a hand-made "codesight" entry
    home = new_home("home-ro")
    settings = home / ".gemini" / "settings.json"
    settings.write_text('{"theme": "dark"}\n')
    settings.chmod(0o444)
    r1 = run(home, "install", "gemini")
    cases.append(
        (
            "a read-only file left alone",
            r1.returncode == 1
            and "read-only" in r1.stderr
            and settings.read_text() == '{"theme": "dark"}\n'
            and settings.stat().st_mode & 0o777 == 0o444,
        )
    )
    home = new_home("home-own")
    mine = '{\n  "mcpServers": {\n    "codesight": {"command": "/opt/cs", "args": ["mcp"], "env": {"X": "1"}}\n  }\n}\n'
    (home / ".claude.json").write_text(mine)
    r1 = run(home, "install", "claude-code")
    r2 = run(home, "uninstall", "claude-code")
    cases.append(
        (
            "a hand-made entry kept by install and uninstall",
            r1.returncode == 1 and (home / ".claude.json").read_text() == mine,
        )
    )

    # 6. six agents into a project and out: every byte back, nothing left behind
    home = new_home("home-six")
    proj = base / "six"
    (proj / ".git").mkdir(parents=True)
    (proj / "CLAUDE.md").write_bytes(b"# Rules\r\n\r\nBe kind.\r\n")
    (proj / "AGENTS.md").write_bytes(b"# Agents")
    (proj / "opencode.json").write_bytes(b'{\n  "theme": "dark"\n}')
    before = _tree_bytes(proj)
    names = ["claude-code", "cursor", "codex", "gemini", "opencode", "copilot"]
    r1 = run(home, "install", *names, "--project", str(proj))
    r2 = run(home, "uninstall", *names, "--project", str(proj))
    cases.append(
        (
            "six agents into a project and out, byte for byte",
            r1.returncode == r2.returncode == 0 and _tree_bytes(proj) == before,
        )
    )

    good = sum(ok for _, ok in cases)
    figure(f"install: {good} of {len(cases)} cases as intended")
    for name, ok in cases:
        if not ok:
            problem(f"install: {name}")


def _git_repo(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir(parents=True)
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    genv = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(root), *cmd], check=True, env=genv, capture_output=True)
    return root


def section_fleet(env: Env, args) -> None:
    """`codesight fleet` on the hostile probe's cases: what a run on this machine's workers listens
    on and leaves behind, a store path that is no store, a token in a source URL, and a large blob
    in a small repository (temporary space)."""
    base = env.work / "fleet"
    data = base / "data"
    home = base / "home"
    home.mkdir(parents=True)
    code = _git_repo(
        base / "clones" / "svc",
        {
            "src/retry.py": b"def retry_failed_upload(chunk):\n    return chunk.send()\n",
            "data/blob.bin": os.urandom(1024) * (30 * 1024),
        },
    )  # 30 MB
    clones = str(base / "clones")
    extra = {"HOME": str(home)}

    # 1-2. a run on this machine's worker processes: what it listens on, what it leaves
    tmp = base / "tmp-run"
    tmp.mkdir()
    before = set(subprocess.run(["ss", "-ltunH"], capture_output=True, text=True).stdout.splitlines())
    job = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codesight_tui",
            "fleet",
            "index",
            clones,
            "--store",
            str(base / "s2"),
            "--workers",
            "2",
        ],
        env={**env.env(data, env.cache), **extra, "TMPDIR": str(tmp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    listeners: set[str] = set()
    while job.poll() is None:
        listeners |= set(subprocess.run(["ss", "-ltunH"], capture_output=True, text=True).stdout.splitlines()) - before
        time.sleep(0.1)
    out, err = job.communicate()
    left = sorted(str(p.relative_to(base)) for p in [*tmp.iterdir(), *home.iterdir()])
    figure(
        f"fleet: a run on worker processes here: exit {job.returncode}; {len(listeners)} new TCP/UDP listeners"
        f" (a local Ray had 7 beyond loopback); left in TMPDIR and HOME: {left or 'nothing'}"
    )
    if job.returncode != 0 or listeners or left:
        problem(
            f"fleet: the run: exit {job.returncode}, listeners {sorted(listeners)[:3]}, left {left[:3]}, {err[-300:]}"
        )

    # 3. a store path that holds something else (a repository)
    other = _git_repo(base / "not-a-store", {"README": b"hello\n", "docs/guide.md": b"# Guide\n"})
    before_tree = _tree_bytes(other)
    r = env.cli(["fleet", "index", clones, "--store", str(other), "--local"], data, env.cache, extra=extra)
    ok = r.returncode == 2 and _tree_bytes(other) == before_tree
    figure(f"fleet: a repository given as the store: {'refused, untouched' if ok else 'WRITTEN TO'}")
    if not ok:
        problem("fleet: a non-store directory was written to")

    # 4. a token in a source URL (port 9: nothing listens, the clone fails at once)
    store = base / "s4"
    r = env.cli(
        [
            "fleet",
            "index",
            "https://deploy:SECRET-TOKEN@127.0.0.1:9/org/pay.git",
            "--store",
            str(store),
            "--local",
            "--json",
        ],
        data,
        env.cache,
        extra=extra,
    )
    st = env.cli(["fleet", "status", "--store", str(store), "--json"], data, env.cache, extra=extra)
    leaked = sum(b"SECRET-TOKEN" in f.read_bytes() for f in store.rglob("*") if f.is_file())
    leaked += sum("SECRET-TOKEN" in t for t in (r.stdout, r.stderr, st.stdout, st.stderr))
    figure(f"fleet: a token in a source URL: {leaked} places hold it (store files, report, status)")
    if leaked:
        problem("fleet: a URL's token was stored or printed")

    # 5. a 30 MB blob in a small repository: the temporary space the run takes
    tmp = base / "tmp-blob"
    tmp.mkdir()
    job = subprocess.Popen(
        [sys.executable, "-m", "codesight_tui", "fleet", "index", clones, "--store", str(base / "s5"), "--local"],
        env={**env.env(data, env.cache), **extra, "TMPDIR": str(tmp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = 0
    while job.poll() is None:
        peak = max(peak, sum(f.stat().st_size for f in tmp.rglob("*") if f.is_file() and not f.is_symlink()))
        time.sleep(0.05)
    job.communicate()
    figure(f"fleet: a 30 MB blob (max_file_size 1 MB): peak temporary space {peak / 1e6:.1f} MB; exit {job.returncode}")
    if job.returncode != 0 or peak > 5e6:
        problem(f"fleet: the large blob took {peak / 1e6:.1f} MB of temporary space")
    assert code.exists()


# Rough cost of each section in --fast, for starting the longest first.
SECTION_WEIGHT = {
    "kill": 4,
    "faults": 3,
    "queries": 2,
    "hostile": 1,
    "concurrency": 2,
    "footprint": 2,
    "limits": 2,
    "checkout": 1,
    "fleet": 2,
    "install": 1,
}


def run_parallel(args, work: Path) -> int:
    """Each section in a harness process of its own (its own work directory, the same static
    model), ``args.jobs`` at a time, longest first; their reports are printed in the order asked
    for, and the problems of all of them decide the exit code."""
    from concurrent.futures import ThreadPoolExecutor

    t0 = time.perf_counter()
    names = [n.strip() for n in args.only.split(",")]
    shared = (
        [] if args.cache else ["--cache", str(work / "cache")]
    )  # one cache: what one section embeds, the next reuses

    def one(name: str) -> subprocess.CompletedProcess:
        # argparse keeps an option's last value: the child's --only and --jobs win over ours
        return subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:], *shared, "--only", name, "--jobs", "1"],
            capture_output=True,
            text=True,
        )

    with ThreadPoolExecutor(args.jobs) as pool:
        order = sorted(names, key=lambda n: -SECTION_WEIGHT.get(n, 1))
        runs = dict(zip(order, pool.map(one, order), strict=False))
    problems = 0
    for name in names:
        r = runs[name]
        body = r.stdout.split("\n== ", 1)
        print(body[0].split("\n", 1)[1] if "\n" in body[0] else body[0], end="")
        tail = body[1] if len(body) > 1 else ""
        n = int(tail.split(" ", 1)[0]) if tail[:1].isdigit() else 1
        problems += n
        for line in tail.splitlines()[1:]:
            print(line)
        if r.returncode != 0 and n == 0:
            problems += 1
            print(f"  PROBLEM: section {name} exited {r.returncode}: {r.stderr[-500:]}")
    shutil.rmtree(work, ignore_errors=True)
    print(f"\n== {problems} problems in {time.perf_counter() - t0:.0f} s ({args.jobs} sections at a time)", flush=True)
    return 1 if problems else 0


# --- the warm service ----------------------------------------------------------------------------
SERVICE_CALLS = r"""
import json, sys, threading
from codesight_tui import client
argv, cwd, n = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
got = []
def one():
    out = []
    try:
        end = client.request({"v": client.PROTOCOL, "install": client.install_key(), "env": client.env_digest(),
                              "argv": argv, "cwd": cwd, "tty": False}, lambda m: out.append(m.get("o", "")),
                             silence=120)
        got.append([end["rc"], "".join(out)])
    except client.Unserved as exc:
        got.append([None, str(exc)])
threads = [threading.Thread(target=one) for _ in range(n)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(got))
"""


def section_service(env: Env, args) -> None:  # noqa: C901 - one report, its checks in the order it prints them
    """The warm service (``codesight_tui.service``): many concurrent client calls, kill -9 in the
    middle of an index run it makes, the stale socket that leaves, and another user's connection."""
    n_files = 1500 if args.fast else 4000
    calls, procs = (100, 20) if args.fast else (args.service_calls, 200)
    print(
        f"\n[service] {calls:,} concurrent calls and {procs} client processes; kill -9 mid-index of"
        f" {n_files:,} files; a stale socket; another user",
        flush=True,
    )
    work = env.work / "service"
    small = corpus_copy(work, "repo", args.corpus)
    subprocess.run(["git", "init", "-q", str(small)], check=True)
    big = work / "big"
    for i in range(n_files):
        (big / f"pkg{i % 40}").mkdir(parents=True, exist_ok=True)
        (big / f"pkg{i % 40}" / f"m{i}.py").write_text(
            f'def handler_{i}(request):\n    """Serve request {i} and log it."""\n    return request.send({i})\n'
        )
    subprocess.run(["git", "init", "-q", str(big)], check=True)
    data, cache = work / "data", env.cache
    run_dir = Path(tempfile.mkdtemp(prefix="csr-", dir="/tmp"))
    run_dir.chmod(0o700)
    on = {"XDG_RUNTIME_DIR": str(run_dir), "CODESIGHT_SERVICE": "auto"}
    svc = run_dir / "codesight"

    def pid() -> int | None:
        try:
            return int(next(svc.glob("service-*.lock")).read_text().split()[0])
        except (OSError, ValueError, IndexError, StopIteration):
            return None

    def answering(timeout: float = 60) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if json.loads(env.cli(["service", "status", "--json"], data, cache, extra=on).stdout).get("running"):
                return True
            time.sleep(0.2)
        return False

    def gone(p: int) -> bool:
        try:
            return Path(f"/proc/{p}/stat").read_text().split()[2] == "Z"
        except OSError:
            return True

    try:
        query = ["search", "print text with styles", "--mode", "bm25", "--json", "--path", str(small)]
        expected = env.cli(query, data, cache)
        if expected.returncode != 0:
            problem(f"service: the in-process answer failed: {expected.stderr.strip()[-300:]}")
            return
        env.cli(["service", "start"], data, cache, extra=on)
        if not answering():
            problem("service: `codesight service start` left no service answering")
            return
        # 1. Many calls at once: threads in one process (all connected together), then processes.
        t = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", SERVICE_CALLS, json.dumps(query), str(work), str(calls)],
            capture_output=True,
            text=True,
            env={**env.env(data, cache), **on},
            timeout=1800,
        )
        got = json.loads(out.stdout) if out.returncode == 0 else []
        bad = [g for g in got if g != [0, expected.stdout]]
        figure(
            f"service: {calls:,} concurrent calls in {time.perf_counter() - t:.1f} s: {len(got) - len(bad):,}"
            f" right, {len(bad)} wrong or failed"
        )
        if len(got) != calls or bad:
            problem(f"service: concurrent calls: {len(got)} answers, {len(bad)} wrong: {bad[:2]} {out.stderr[-300:]}")
        t = time.perf_counter()
        wrong = 0
        for start in range(0, procs, 50):
            batch = [
                subprocess.Popen(
                    [sys.executable, "-m", "codesight_tui", *query],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env={**env.env(data, cache), **on},
                )
                for _ in range(min(50, procs - start))
            ]
            for p in batch:
                so, se = p.communicate(timeout=600)
                wrong += (p.returncode, so) != (0, expected.stdout)
        figure(f"service: {procs} client processes, 50 at a time, in {time.perf_counter() - t:.1f} s: {wrong} wrong")
        if wrong:
            problem(f"service: {wrong} of {procs} client processes answered wrongly")
        st = json.loads(env.cli(["service", "status", "--json"], data, cache, extra=on).stdout)
        if st.get("failed") or st.get("served", 0) < calls + procs:
            problem(f"service: status says served {st.get('served')}, failed {st.get('failed')}")
        # 2. kill -9 of the service in the middle of the index run a served first search makes.
        old = pid()
        client_proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "codesight_tui",
                "search",
                "serve request log",
                "--mode",
                "bm25",
                "--path",
                str(big),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env.env(data, cache), **on},
        )
        said = client_proc.stderr.readline()
        # Mid-index whatever the machine's speed: once the run has its database, a moment later.
        # (A fixed 1 s from the "indexing first" line missed it on a faster machine: 4,000 files
        # were indexed and answered by then.)
        end = time.monotonic() + 30
        while time.monotonic() < end and not any(data.glob("*/index.db")):
            time.sleep(0.01)
        time.sleep(0.05 if args.fast else 0.2)
        os.kill(old, signal.SIGKILL)
        rest_out, rest_err = client_proc.communicate(timeout=120)
        while not gone(old):
            time.sleep(0.05)
        figure(
            f"service: killed mid-index ({said.strip()[:60]}...): the client said"
            f" {(rest_err.strip().splitlines() or ['nothing'])[-1][:90]!r}, exit {client_proc.returncode}"
        )
        if client_proc.returncode == 0 and "indexing first" in said:
            problem("service: the client of a killed service reported success")
        if "indexing first" not in said:
            problem(f"service: the kill did not land mid-index: {said.strip()}")
        for p in consistency(data, big):
            problem(f"service: after kill -9 mid-index: {p}")
        # 3. The socket it left is stale: the next call answers here and a new service replaces it.
        stale = any(svc.glob("service-*.sock"))
        after = env.cli(
            ["search", "serve request log", "--mode", "bm25", "--verbose", "--path", str(big)], data, cache, extra=on
        )
        figure(
            f"service: stale socket left: {stale}; the next call: exit {after.returncode},"
            f" {(after.stderr.strip().splitlines() or [''])[0][:80]!r}"
        )
        if after.returncode != 0 or "pkg" not in after.stdout or "stale socket" not in after.stderr:
            problem(f"service: the call after the kill: {after.returncode} {after.stderr.strip()[-300:]}")
        if not answering() or pid() == old:
            problem("service: no new service after the stale socket")
        again = env.cli(["search", "serve request log", "--mode", "bm25", "--path", str(big)], data, cache, extra=on)
        if (again.returncode, again.stdout) != (0, after.stdout):
            problem("service: the new service answers otherwise than the in-process call")
        for p in consistency(data, big):
            problem(f"service: after the new service's answer: {p}")
        # 4. Another user: not through the modes, and not by peer credentials where the modes let them.
        if os.geteuid() != 0:
            figure("service: another user's connection: not tried (needs root)")
        else:
            sock = str(next(svc.glob("service-*.sock")))

            def as_nobody() -> str:
                r, w = os.pipe()
                child = os.fork()
                if child == 0:
                    os.close(r)
                    try:
                        os.setgid(65534)
                        os.setuid(65534)
                        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                        c.settimeout(10)
                        c.connect(sock)
                        try:
                            c.sendall(b'{"v": 2, "cmd": "ping"}\n')
                        except BrokenPipeError:
                            pass  # refused before it asked: the reason is there to read
                        said = c.recv(4096).decode()
                    except OSError as exc:
                        said = f"OSError {exc.errno}"
                    os.write(w, said.encode())
                    os._exit(0)
                os.close(w)
                os.waitpid(child, 0)
                with os.fdopen(r) as fh:
                    return fh.read()

            shut = as_nobody()
            for d in (run_dir, svc):
                d.chmod(0o755)
            os.chmod(sock, 0o666)
            opened = as_nobody()
            for d in (run_dir, svc):
                d.chmod(0o700)
            os.chmod(sock, 0o600)
            figure(f"service: another user: {shut.strip()!r} through the modes; {opened.strip()!r} with them open")
            if not shut.startswith("OSError") or "another user" not in opened:
                problem("service: another user's connection was not refused")
    finally:
        p = pid()
        if p and not gone(p):
            os.kill(p, signal.SIGKILL)
        shutil.rmtree(run_dir, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="kill,concurrency,faults,hostile,queries,footprint")
    ap.add_argument("--fast", action="store_true", help="small numbers: the subset the test suite runs")
    ap.add_argument("--corpus", type=Path, default=None, help="source tree to copy (default: the rich package)")
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--tui-kills", type=int, default=3)
    ap.add_argument("--mcp-kills", type=int, default=3)
    ap.add_argument("--mcp-queries", type=int, default=1000, help="random queries through `codesight mcp`")
    ap.add_argument(
        "--kill-window",
        type=float,
        default=60.0,
        help="a run that has not reached its kill point by then is killed anyway",
    )
    ap.add_argument("--concurrency-seconds", type=float, default=300.0)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--cli-queries", type=int, default=100)
    ap.add_argument("--edits", type=int, default=1000)
    ap.add_argument("--hostile-timeout", type=float, default=900.0)
    ap.add_argument("--tiny-files", type=int, default=500_000, help="the limits section's many tiny files")
    ap.add_argument(
        "--checkout-files", type=int, default=3_000, help="files the checkout section's branch switch changes"
    )
    ap.add_argument("--service-calls", type=int, default=1000, help="concurrent calls the service section makes")
    ap.add_argument("--faults", default=None, help="comma-separated names of the fault cases to run (default all)")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--profile", action="store_true", help="list the slowest CLI runs at the end")
    ap.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="the embedding cache every section shares (default: one in the work directory)",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="run the sections as this many harness processes at once (each its own work directory)",
    )
    args = ap.parse_args()
    global CORPUS_FILES
    if args.fast:
        CORPUS_FILES = 8
        args.kills, args.tui_kills, args.mcp_kills, args.kill_window = min(args.kills, 3), 0, 1, 20.0
        args.concurrency_seconds, args.queries, args.cli_queries, args.edits = 10.0, 200, 5, 20
        args.mcp_queries = min(args.mcp_queries, 50)
    os.environ["HF_HUB_OFFLINE"] = "1"
    work = Path(tempfile.mkdtemp(prefix="codesight-torture-"))
    if not os.environ.get("CODESIGHT_STATIC_MODEL"):
        # One static model for every child (they inherit the variable): each section's fresh cache
        # would otherwise distil its own, 25-40 s each, and a kill aimed at embedding would land in
        # the distillation instead. The test suite passes the one its session distilled.
        from codesight_tui.core.index.static import distill
        from codesight_tui.core.ingest.tokens import resolve_model

        t = time.perf_counter()
        distill(Path(resolve_model("minilm").load_from), work / "static-model")
        os.environ["CODESIGHT_STATIC_MODEL"] = str(work / "static-model")
        print(f"torture: distilled the static model once for every run ({time.perf_counter() - t:.0f} s)", flush=True)
    if args.jobs > 1 and "," in args.only:
        return run_parallel(args, work)
    env = Env(work, args.cache)
    exec(GUARD.replace('os.environ.get("CODESIGHT_TORTURE_NETLOG")', repr(str(env.netlog))), {})  # this process too
    sections = {
        "kill": section_kill,
        "concurrency": section_concurrency,
        "faults": section_faults,
        "hostile": section_hostile,
        "queries": section_queries,
        "footprint": section_footprint,
        "limits": section_limits,
        "checkout": section_checkout,
        "service": section_service,
        "install": section_install,
        "fleet": section_fleet,
    }
    t0 = time.perf_counter()
    print(f"torture: {args.only}; work directory {work}; {os.cpu_count()} cpus", flush=True)
    try:
        for name in args.only.split(","):
            started = time.perf_counter()
            sections[name.strip()](env, args)
            figure(f"{name.strip()}: section took {time.perf_counter() - started:.0f} s")
    finally:
        if not args.keep:
            subprocess.run(["chmod", "-R", "u+rwx", str(work)], capture_output=True)
            shutil.rmtree(work, ignore_errors=True)
    figure(f"network connections attempted by any codesight process: {env.connections()}")
    if env.connections():
        problem("a network connection was attempted")
    import resource

    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    figure(
        f"peak RSS of any child process: {peak:.0f} MB; harness itself"
        f" {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )
    if args.profile:
        print(f"\nCLI runs: {len(TIMINGS)}, {sum(t for t, _ in TIMINGS):.0f} s in all; the slowest:")
        for t, cmd in sorted(TIMINGS, reverse=True)[:25]:
            print(f"  {t:6.1f} s  {cmd}")
    print(f"\n== {len(PROBLEMS)} problems in {time.perf_counter() - t0:.0f} s", flush=True)
    for p in PROBLEMS:
        print("  - " + p)
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    raise SystemExit(main())
