"""A fleet store searched by several threads at once (issue 67): the warm service's 8 workers share
one ``Fleet`` per store, and the store kept each search's repository filter and rows on itself, so
27 of 600 answers filtered to one repository held the other's hits. Per-search state now lives in
a per-search object (``FleetQuery``)."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_SYSTEM": os.devnull,
}


def _repo(root: Path, name: str, files: int = 40) -> Path:
    """A clone of ``files`` modules that all answer the same questions (retries, uploads, caches)."""
    root.mkdir(parents=True)
    for k in range(files):
        (root / f"{name}_mod{k}.py").write_text(
            f'def retry_upload_{k}(chunk, attempts=3):\n    """Retry a failed upload in {name}."""\n'
            f"    for n in range(attempts):\n        if chunk.send():\n            return True\n    return False\n\n\n"
            f"class Cache{k}:\n    def get(self, key):\n        return self.items.get(key)\n"
        )
    env = dict(os.environ, **GIT_ENV)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)
    return root


def test_threads_searching_one_store_never_see_another_repositorys_hits(tmp_path: Path, static_model_dir: Path) -> None:
    from codesight_tui import Fleet
    from codesight_tui.core.config import Settings
    from codesight_tui.core.modes import Mode
    from codesight_tui.core.search.contract import Filters, SearchRequest

    clones = tmp_path / "clones"
    _repo(clones / "alpha", "alpha")
    _repo(clones / "beta", "beta")
    fleet = Fleet(str(tmp_path / "store"), settings=Settings(static_model=str(static_model_dir)))
    assert sorted(fleet.index([str(clones)], local=True).indexed) == ["alpha", "beta"]
    queries = ["retry failed upload", "cache get key", "send chunk attempts", "retry_upload_7", "Cache12"]
    leaks: list[str] = []
    answered = [0]
    lock = threading.Lock()

    def work(k: int) -> None:
        for n in range(250):
            repo = "alpha" if (k + n) % 2 else "beta"
            mode: Mode = "bm25" if n % 3 else "hybrid"
            hits = fleet.search(SearchRequest(queries[n % len(queries)], mode, filters=Filters(repo=repo)))
            with lock:
                answered[0] += 1
                leaks.extend(f"{repo}: {h.repo} {h.path}" for h in hits if h.repo != repo)
                if not hits:
                    leaks.append(f"{repo}: no hits for {queries[n % len(queries)]!r}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answered[0] == 1000 and leaks == [], leaks[:5]


def test_the_module_level_caches_are_safe_under_threads() -> None:
    """Issue 67 item 1's audit: searcher._POOL was made without a lock (two threads could each make
    a pool), and fleet/store._TABLES was iterated to drop a store's tables while other threads
    added theirs ("dictionary changed size during iteration"). static._LOADED, models._MODELS and
    ask._CLIENTS were locked already."""
    from codesight_tui.core.fleet import store as fleet_store
    from codesight_tui.core.search import searcher

    searcher._POOL = None
    pools: list[object] = []
    barrier = threading.Barrier(8)

    def ask_for_pool() -> None:
        barrier.wait()
        pools.append(searcher._pool())

    threads = [threading.Thread(target=ask_for_pool) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(p) for p in pools}) == 1
    spec = fleet_store.StoreSpec("/tmp/one-store")
    others = [fleet_store.StoreSpec(f"/tmp/store-{k}") for k in range(200)]
    errors: list[BaseException] = []
    stop = threading.Event()

    def add() -> None:
        k = 0
        while not stop.is_set():
            with fleet_store._TABLES_LOCK:
                fleet_store._TABLES[(others[k % 200], f"t{k % 5}")] = object()  # at most 1,000 keys
            k += 1

    def forget() -> None:
        try:
            for _ in range(500):
                with fleet_store._TABLES_LOCK:
                    fleet_store._TABLES[(spec, "chunks")] = object()
                fleet_store.forget_tables(spec)
        except BaseException as exc:  # noqa: BLE001 - what the test looks for
            errors.append(exc)

    adder = threading.Thread(target=add)
    adder.start()
    try:
        forget()
    finally:
        stop.set()
        adder.join()
        fleet_store._TABLES.clear()
    assert errors == [] and (spec, "chunks") not in fleet_store._TABLES
