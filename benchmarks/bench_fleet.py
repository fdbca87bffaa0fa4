"""The fleet (issue 33) on 100+ real repositories: indexing throughput with 1, 2 and 4 workers,
re-index after one commit, search latency against object-store tables (moto's S3 server on
127.0.0.1) and against a local copy, and the store's size.

    python benchmarks/bench_fleet.py [--sdists 60] [--workers 1,2,4] [--queries 60] [--full 4]

The corpus: the 49 repositories of the polyglot set (19 languages; ../shared/eval/polyglot,
unpacked by its unpack.sh) and the source distributions of ``--sdists`` packages installed in this
environment (pip download, from PyPI), each made a git repository of one commit. It is built once
under ``--work`` (default .cache/fleet-bench) and reused. Queries are the polyglot set's own.
``--full N`` also indexes N repositories with the full model (ONNX on a CPU) for its throughput.
Every index run is a fresh `codesight fleet index` process, so its workers' start is in its time.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

print = functools.partial(print, flush=True)  # progress shows while it runs, even into a file
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True, env={**os.environ, **GIT_ENV}
    ).stdout.strip()


def commit_tree(path: Path) -> None:
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A", "-f")
    git(path, "commit", "-q", "-m", "import", "--allow-empty")


def polyglot(work: Path) -> list[Path]:
    src = Path(os.environ.get("POLYGLOT", ROOT.parent / "shared" / "eval" / "polyglot"))
    cache = ROOT / ".cache" / "polyglot"
    subprocess.run(["bash", str(src / "unpack.sh"), str(cache)], check=True, stdout=subprocess.DEVNULL)
    out = []
    for repo in sorted((cache / "repos").iterdir()):
        dest = work / "clones" / f"pg-{repo.name}"
        if not (dest / ".git").exists():
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(repo, dest, symlinks=True)
            commit_tree(dest)
        out.append(dest)
    return out


def sdists(work: Path, n: int) -> list[Path]:
    """Source distributions of ``n`` packages of this environment, each a one-commit repository."""
    names = sorted(
        json.loads(
            subprocess.run(
                [sys.executable, "-m", "pip", "list", "--format", "json"], capture_output=True, text=True, check=True
            ).stdout
        ),
        key=lambda p: p["name"].lower(),
    )
    made = sorted(p for p in (work / "clones").glob("py-*") if (p / ".git").exists())
    if len(made) >= n:  # the corpus of an earlier run (packages without a usable sdist are not tried again)
        return made[:n]
    out: list[Path] = []
    dl = work / "sdists"
    dl.mkdir(parents=True, exist_ok=True)
    for pkg in names:
        if len(out) >= n:
            break
        name = pkg["name"].lower().replace("_", "-")
        if name in ("codesight-tui", "torch", "ray", "pip", "setuptools"):
            continue
        dest = work / "clones" / f"py-{name}"
        if (dest / ".git").exists():
            out.append(dest)
            continue
        try:  # pip prepares an sdist's metadata, which for a few (C extensions) means a build: skip those
            got = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-deps",
                    "--no-binary",
                    ":all:",
                    "-d",
                    str(dl),
                    f"{pkg['name']}=={pkg['version']}",
                ],
                check=False,
                capture_output=True,
                text=True,
                timeout=60,
            )
        except subprocess.TimeoutExpired:
            continue
        if got.returncode != 0:
            continue
        archive = next((p for p in dl.iterdir() if p.name.lower().replace("_", "-").startswith(f"{name}-")), None)
        if archive is None:
            continue
        tmp = work / "unpack"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            if archive.suffix == ".zip":
                zipfile.ZipFile(archive).extractall(tmp)
            else:
                with tarfile.open(archive) as tar:
                    tar.extractall(tmp, filter="data")
        except (OSError, tarfile.TarError, zipfile.BadZipFile):  # a damaged archive: the next one
            continue
        inner = [p for p in tmp.iterdir() if p.is_dir()]
        shutil.move(str(inner[0] if len(inner) == 1 else tmp), str(dest))
        commit_tree(dest)
        out.append(dest)
    return out


def codesight(*args: str, env: dict[str, str] | None = None) -> tuple[dict, float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "codesight_tui", *args, "--json"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - t0
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"codesight {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}") from None
    return report, seconds, done.stderr


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def queries(n: int) -> list[str]:
    ann = ROOT / ".cache" / "polyglot" / "annotations"
    qs: list[str] = []
    for f in sorted(ann.glob("*.json")):
        for q in json.loads(f.read_text()):
            qs.append(q["query"])
    step = max(1, len(qs) // n)
    return qs[::step][:n]


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=str(ROOT / ".cache" / "fleet-bench"))
    ap.add_argument("--sdists", type=int, default=60)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--full", type=int, default=0, help="also index this many repositories with the full model")
    ap.add_argument(
        "--s3-repos",
        type=int,
        default=20,
        help="repositories indexed into S3 and into a local store of the same, for the search timings",
    )
    ap.add_argument(
        "--only",
        default="throughput,reindex,search,full",
        help="sections to run (the corpus is always made): throughput, reindex, search, full",
    )
    args = ap.parse_args()
    work = Path(args.work)
    (work / "clones").mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    repos = polyglot(work) + sdists(work, args.sdists)
    files = sum(int(git(r, "ls-files").count("\n")) + 1 for r in repos)
    print(
        f"corpus: {len(repos)} repositories ({sum(1 for r in repos if r.name.startswith('pg-'))} polyglot,"
        f" {sum(1 for r in repos if r.name.startswith('py-'))} sdists), {files:,} committed files,"
        f" {du(work / 'clones') / 1e6:,.0f} MB on disk (with .git); made or checked in {time.perf_counter() - t0:.0f} s"
    )
    print(f"machine: {os.cpu_count()} cores; load before: {os.getloadavg()[0]:.2f}")
    clones = str(work / "clones")

    only = set(args.only.split(","))
    local_store = work / "store-w4"
    if "throughput" in only:
        local_store = throughput(args, work, clones)
    if "reindex" in only:
        reindex(work, repos, clones, local_store)
    if "search" in only:
        search(args, work, repos)
    if "full" in only and args.full:
        full(args, work, repos)
    print(f"\nload after: {os.getloadavg()[0]:.2f}")
    return 0


def throughput(args, work: Path, clones: str) -> Path:
    print(
        "\n## Throughput (static model, fresh store, `codesight fleet index DIR --workers N`, workers started by the run)"
    )
    print(
        "| workers | seconds | of which writing | of which indexes | repositories | files | chunks | chunks/s |"
        " vs 1 worker |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    base = None
    local_store = None
    for w in [int(x) for x in args.workers.split(",")]:
        store = work / f"store-w{w}"
        shutil.rmtree(store, ignore_errors=True)
        report, seconds, _ = codesight("fleet", "index", clones, "--store", str(store), "--workers", str(w))
        rate = report["chunks"] / seconds
        base = base or rate
        print(
            f"| {w} | {seconds:.1f} | {report.get('write_seconds', 0):.1f} | {report.get('index_seconds', 0):.1f} |"
            f" {len(report['indexed'])} (+{len(report['failed'])} failed) |"
            f" {report['changed_files']:,} | {report['chunks']:,} | {rate:,.0f} | {rate / base:.2f}x |"
        )
        local_store = store
    assert local_store is not None
    size = du(local_store)
    from datetime import timedelta

    from codesight_tui import Fleet

    Fleet(str(local_store)).store.finish(cleanup_older_than=timedelta(0))
    kept = du(local_store)
    print(
        f"\nstore: {report['rows']:,} rows, {size / 1e6:,.1f} MB on disk as the run left it (versions of the last 10"
        f" minutes kept for readers), {kept / 1e6:,.1f} MB after old versions are removed"
        f" ({kept / max(1, report['rows']):,.0f} B a chunk: text, static vectors of 256 floats, FTS and other indexes)"
    )
    return local_store


def reindex(work: Path, repos: list[Path], clones: str, local_store: Path) -> None:
    print("\n## Re-index after one commit (one file of one repository changed)")
    target = next(r for r in repos if r.name == "pg-flask") if (work / "clones" / "pg-flask").exists() else repos[0]
    victim = next(p for p in sorted(target.rglob("*.py")) if ".git" not in p.parts)
    victim.write_text(victim.read_text() + "\n\ndef fleet_bench_marker_function():\n    return 'changed'\n")
    git(target, "commit", "-qam", "bench: one change")
    report, seconds, _ = codesight("fleet", "index", clones, "--store", str(local_store), "--workers", "2")
    print(
        f"- one commit: {seconds:.1f} s ({len(report['indexed'])} repository re-read, {report['changed_files']}"
        f" file chunked, {report['chunks']} chunks, {len(report['unchanged'])} unchanged; the workers' start included)"
    )
    report, seconds, _ = codesight("fleet", "index", clones, "--store", str(local_store), "--workers", "2")
    print(f"- nothing changed: {seconds:.1f} s ({len(report['unchanged'])} unchanged)")
    report, seconds, _ = codesight("fleet", "index", clones, "--store", str(local_store), "--local")
    print(f"- nothing changed, --local (no workers): {seconds:.1f} s")


def search(args, work: Path, repos: list[Path]) -> None:
    subset = work / "s3-clones"
    shutil.rmtree(subset, ignore_errors=True)
    subset.mkdir()
    chosen = [r for r in repos if r.name.startswith("pg-")][: args.s3_repos]
    for r in chosen:
        os.symlink(r, subset / r.name)
    print(f"\n## Object storage (moto's S3 server on 127.0.0.1) against a local copy: {len(chosen)} repositories")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1"}
    os.environ.update({k: env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")})
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket="bench")
    local_store = work / "store-s3-twin"
    shutil.rmtree(local_store, ignore_errors=True)
    for label, store, extra in (
        ("local path", str(local_store), ()),
        ("S3", "s3://bench/fleet", ("--endpoint", endpoint)),
    ):
        report, seconds, _ = codesight(
            "fleet", "index", str(subset), "--store", store, *extra, "--workers", "2", env=env
        )
        print(
            f"- index into {label}, 2 workers: {seconds:.1f} s, {report['chunks']:,} chunks"
            f" ({report['chunks'] / seconds:,.0f}/s; writing {report.get('write_seconds', 0):.1f} s, indexes"
            f" {report.get('index_seconds', 0):.1f} s)"
        )
    s3_bytes = sum(
        o["Size"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket="bench")
        for o in page.get("Contents", [])
    )
    print(f"- bytes: {s3_bytes / 1e6:,.1f} MB in the bucket, {du(local_store) / 1e6:,.1f} MB in the local copy")
    clones = str(subset)

    print(
        f"\n## Search ({args.queries} polyglot queries, hybrid: BM25 + static, in a warm process, 3 passes locally,"
        " 1 on S3)"
    )
    from codesight_tui import Fleet
    from codesight_tui.core.search.contract import SearchRequest

    qs = queries(args.queries)
    rows = []
    for label, fleet in (
        ("local copy", Fleet(str(local_store))),
        ("S3 (moto, loopback)", Fleet("s3://bench/fleet", endpoint)),
    ):
        fleet.search(SearchRequest(qs[0]))  # the model and the tables open once per process
        times = []
        for _ in range(3 if fleet.spec.remote is False else 1):  # moto answers about 17 GETs a second
            for q in qs:
                t = time.perf_counter()
                fleet.search(SearchRequest(q))
                times.append((time.perf_counter() - t) * 1000)
        rows.append((label, statistics.median(times), pct(times, 95)))
    rg = []
    for q in qs:
        word = max(q.split(), key=len)
        t = time.perf_counter()
        subprocess.run(["rg", "-L", "-i", "-F", "-l", "--", word, clones], check=False, capture_output=True)
        rg.append((time.perf_counter() - t) * 1000)
    print("| store | p50 ms | p95 ms |")
    print("| --- | --- | --- |")
    for label, p50, p95 in rows:
        print(f"| {label} | {p50:.1f} | {p95:.1f} |")
    print(
        f"| rg -i -F -l (the query's longest word, the same clones) | {statistics.median(rg):.1f} | {pct(rg, 95):.1f} |"
    )
    server.stop()


def full(args, work: Path, repos: list[Path]) -> None:
    print(f"\n## The full model (--model full: MiniLM through ONNX Runtime on this CPU), {args.full} repositories")
    sub = work / "full-clones"
    shutil.rmtree(sub, ignore_errors=True)
    sub.mkdir()
    small = sorted((r for r in repos if r.name.startswith("py-")), key=lambda r: du(r))[: args.full]
    for r in small:
        os.symlink(r, sub / r.name)
    for w in (1, 2):
        store = work / f"store-full-w{w}"
        shutil.rmtree(store, ignore_errors=True)
        fresh_cache = work / f"cache-full-w{w}"  # an empty embedding cache: every chunk embedded
        shutil.rmtree(fresh_cache, ignore_errors=True)
        report, seconds, _ = codesight(
            "fleet",
            "index",
            str(sub),
            "--store",
            str(store),
            "--model",
            "full",
            "--workers",
            str(w),
            env={**os.environ, "CODESIGHT_CACHE_DIR": str(fresh_cache)},
        )
        print(
            f"- {w} worker{'s' if w > 1 else ''}: {report['chunks']:,} chunks in {seconds:.1f} s:"
            f" {report['chunks'] / seconds:,.1f} chunks/s ({report['embedded']:,} embedded)"
        )


if __name__ == "__main__":
    raise SystemExit(main())
