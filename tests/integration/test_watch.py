"""Watch mode (issue 19): the core watcher's batching and ignore rules, and real file changes
under ``CodeSight.watch`` (create, edit, delete, rename, a directory moved in, a burst of 2,000
files) with what is searchable afterwards asserted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest
from conftest import HashEmbedder, stop

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.core.index.indexer import IndexReport
from codesight_tui.core.store.watch import ADDED, DELETED, MODIFIED, Batch, Watcher

T = TypeVar("T")
Watched = tuple[
    CodeSight, Watcher, list[tuple[Batch, IndexReport]]
]  # the engine, its watcher, and (batch, report) of each run


def until(predicate: Callable[[], T | None], timeout: float = 20.0, every: float = 0.05) -> T:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"not true within {timeout}s")


def found(cs: CodeSight, query: str, path: str) -> bool:
    return any(h.path == path for h in cs.search(query, mode="bm25", top_k=20))


def test_a_batch_keeps_one_change_per_path_deleted_over_added_over_modified() -> None:
    b = Batch()
    b.add("a.py", MODIFIED, 1.0)
    b.add("a.py", ADDED, 1.1)
    assert b.changes == {"a.py": ADDED}
    b.add("a.py", DELETED, 1.2)
    b.add("a.py", MODIFIED, 1.3)
    assert b.changes == {"a.py": DELETED} and b.events == 4 and (b.first_event, b.last_event) == (1.0, 1.3)
    newer = Batch()
    newer.add("a.py", ADDED, 2.0)
    newer.merge(b)  # a batch taken back (the index was busy): the newer event wins
    assert newer.changes == {"a.py": ADDED} and newer.events == 5 and newer.first_event == 1.0


def test_ignored_paths_and_vcs_directories_never_make_a_batch(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    batches: list[Batch] = []
    w = Watcher(tmp_path, batches.append, exclude=["vendor/"], quiet=0.1)
    w.push([("build/out.py", ADDED), ("x.log", MODIFIED), (".git/index", MODIFIED), ("vendor/lib.py", ADDED)])
    assert w.idle() and w.events == 0
    w.push([("src/a.py", ADDED), ("src/a.py", MODIFIED)])
    assert w._pending.changes == {"src/a.py": ADDED}


def test_changes_are_coalesced_until_the_tree_is_quiet(tmp_path: Path) -> None:
    batches: list[Batch] = []
    w = Watcher(tmp_path, batches.append, quiet=0.3, max_delay=10, poll=True)  # no events but ours
    w.start()
    try:
        for i in range(20):  # a stream of changes 50 ms apart: never quiet for 300 ms
            w.push([(f"f{i}.py", ADDED)])
            time.sleep(0.05)
        assert not batches
        until(lambda: batches)
        assert len(batches) == 1 and len(batches[0].changes) == 20
    finally:
        w.stop()


def test_a_busy_index_keeps_the_batch_for_later(tmp_path: Path) -> None:
    from codesight_tui.core.store.watch import RetryLater

    calls: list[list[str]] = []

    def handler(batch: Batch) -> None:
        calls.append(batch.paths)
        if len(calls) == 1:
            raise RetryLater

    w = Watcher(tmp_path, handler, quiet=0.1, poll=True).start()
    try:
        w.push([("a.py", MODIFIED)])
        until(lambda: len(calls) >= 2, timeout=10)
        assert calls[0] == calls[1] == ["a.py"] and w.batches == 1
    finally:
        w.stop()


@pytest.fixture
def watched(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> Iterator[Watched]:
    (repo / "src" / "loop").unlink()  # a symlinked directory makes the watcher poll (see Watcher)
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index()
    log: list[tuple[Batch, IndexReport]] = []
    watcher = cs.watch(lambda batch, report: log.append((batch, report)), catch_up=False, quiet=0.2)
    assert watcher.mode == "events"
    time.sleep(0.3)  # inotify watches are in place
    yield cs, watcher, log
    watcher.stop()
    cs.close()


def test_created_edited_deleted_and_renamed_files_are_searchable_as_they_are(watched: Watched, repo: Path) -> None:
    cs, watcher, log = watched
    (repo / "src" / "fresh.py").write_text("def zanzibar_gateway(x):\n    return x\n")
    until(lambda: found(cs, "zanzibar_gateway", "src/fresh.py"))
    (repo / "src" / "fresh.py").write_text("def quetzal_router(x):\n    return x\n")
    until(lambda: found(cs, "quetzal_router", "src/fresh.py"))
    assert not found(cs, "zanzibar_gateway", "src/fresh.py")
    os.rename(repo / "src" / "fresh.py", repo / "src" / "moved.py")
    until(lambda: found(cs, "quetzal_router", "src/moved.py"))
    until(lambda: not found(cs, "quetzal_router", "src/fresh.py"))
    (repo / "src" / "moved.py").unlink()
    until(lambda: not cs.search("quetzal_router", mode="bm25"))
    until(watcher.idle)
    # Only the named files were looked at: no batch walked the tree.
    assert log and all(not report.full_scan for _, report in log)
    # Vectors follow: the renamed file's chunks were embedded, the deleted one's are gone.
    until(lambda: cs.counts()["pending"] == 0)
    assert cs.counts()["vectors"] == cs.counts()["chunks"]


def test_a_directory_moved_in_or_deleted_and_an_ignore_file_change(watched: Watched, repo: Path) -> None:
    cs, watcher, log = watched
    outside = repo.parent / "elsewhere"
    (outside / "pkg").mkdir(parents=True)
    (outside / "pkg" / "mod.py").write_text("def ocelot_parser():\n    pass\n")
    shutil.move(str(outside / "pkg"), str(repo / "pkg"))  # one event for the directory itself
    until(lambda: found(cs, "ocelot_parser", "pkg/mod.py"))
    until(watcher.idle)
    assert log[-1][1].full_scan  # a new directory is only known by walking it
    shutil.rmtree(repo / "pkg")
    until(lambda: not cs.search("ocelot_parser", mode="bm25"))
    (repo / "gen").mkdir()
    (repo / "gen" / "out.py").write_text("def walrus_output():\n    pass\n")
    until(lambda: found(cs, "walrus_output", "gen/out.py"))
    (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + "gen/\n")
    until(lambda: not found(cs, "walrus_output", "gen/out.py"))
    until(watcher.idle)
    assert log[-1][1].full_scan  # new ignore rules: the tree is walked again


def test_a_burst_of_2000_files_is_one_batch(watched: Watched, repo: Path) -> None:
    cs, watcher, log = watched
    before = len(log)
    versions = cs.storage.vectors.version_count()
    burst = repo / "burst"
    burst.mkdir()
    for i in range(2000):
        (burst / f"b{i}.py").write_text(f"def burst_fn_{i}(x):\n    return x * {i}\n")
    until(lambda: found(cs, "burst_fn_1999", "burst/b1999.py"), timeout=60)
    until(watcher.idle, timeout=60)
    batches = log[before:]
    # One batch; two where the writer stalls for longer than the bulk quiet (0.3 s, chosen so that a
    # branch switch settles sooner than a fresh lexical phase) on a loaded machine. Never one per file.
    assert len(batches) <= 2, [(len(b.changes), b.full) for b, _ in batches]
    assert sum(report.files_changed for _, report in batches) == 2000
    assert cs.counts()["pending"] == 0
    # A delete and an add per 128 embedded chunks per run, then compaction; never one per file.
    assert cs.storage.vectors.version_count() - versions < 2000 / 128 + 4 * len(batches)


def test_an_edit_interrupts_a_long_embedding_and_is_searchable_first(repo: Path, settings: Settings) -> None:
    """A save during a long embedding phase is found by BM25 within seconds; the embedding
    resumes afterwards (nothing embedded twice)."""
    gate = threading.Event()

    class SlowEmbedder:
        name, dim, device, max_seq_length = "test/slow", 8, "cpu", 256

        def encode(self, texts: list[str]) -> np.ndarray:
            gate.wait(2.0)  # a slow model: each batch takes 2 s until the gate opens
            return np.ones((len(texts), 8), dtype="float32") / 8**0.5

        def encode_query(self, text: str) -> np.ndarray:
            return np.asarray(self.encode([text])[0])

    (repo / "src" / "loop").unlink()
    for i in range(30):
        (repo / f"bulk_{i}.py").write_text("".join(f"def g{i}_{j}(x):\n    return x + {j}\n\n" for j in range(40)))
    cs = CodeSight(repo, settings=settings, embedder=SlowEmbedder())
    log: list[tuple[Batch, IndexReport]] = []
    watcher = cs.watch(lambda b, r: log.append((b, r)), quiet=0.1)  # catches up: a long embedding
    try:
        until(lambda: cs.is_indexed() and cs.indexing_now())
        time.sleep(0.5)
        t0 = time.monotonic()
        (repo / "src" / "late.py").write_text("def platypus_handler():\n    pass\n")
        until(lambda: found(cs, "platypus_handler", "src/late.py"), timeout=10)
        assert time.monotonic() - t0 < 5
        assert log[0][1].cancelled  # the catch-up run's embedding gave way
        gate.set()
        until(lambda: cs.counts()["pending"] == 0, timeout=120)
    finally:
        watcher.stop()
        cs.close()


def test_codesight_watch_prints_one_line_per_batch(repo: Path, tmp_path: Path) -> None:
    env = dict(os.environ, CODESIGHT_PROGRESS="0")
    proc = subprocess.Popen(
        [sys.executable, "-m", "codesight_tui", "watch", str(repo), "--no-embed", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        import json

        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert first["full"] and first["files_changed"] > 0
        time.sleep(0.3)
        (repo / "new_one.py").write_text("def aardvark():\n    pass\n")
        line = json.loads(proc.stdout.readline())
        assert line["changes"] == {"added": 1} and line["files_changed"] == 1
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "codesight_tui",
                "search",
                "aardvark",
                "--path",
                str(repo),
                "--mode",
                "bm25",
                "--json",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert json.loads(r.stdout)[0]["path"] == "new_one.py"
    finally:
        _, err = stop(proc)
    assert proc.returncode == 0 and "Traceback" not in err and "stopped watching" in err


def test_a_tree_with_a_symlinked_directory_is_polled(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index()
    watcher = cs.watcher(lambda batch: None, poll_every=0.2)
    assert watcher.poll  # src/loop -> .. : an inotify watcher would follow it round and round
    seen = []
    watcher.handler = lambda batch: seen.append(batch.paths)
    watcher.start()
    try:
        (repo / "polled.py").write_text("x = 1\n")
        until(lambda: ["polled.py"] in seen)
    finally:
        watcher.stop()
