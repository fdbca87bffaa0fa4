"""The shared embedding cache: least-recently-used pruning, the size cap, `codesight cache`, and
the cache line in `status`."""

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import HashEmbedder

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.core.index import cache as cache_mod
from codesight_tui.core.index.cache import EmbeddingCache, cache_files
from codesight_tui.core.ingest.chunker import doc_text
from codesight_tui.core.text import content_hash


def fill(c: EmbeddingCache, n: int, used: int, prefix: str = "k") -> None:
    c.put_many([(f"{prefix}{i}", np.full(c.dim, i, dtype=np.float32)) for i in range(n)])
    c.conn.execute("UPDATE vec SET used = ? WHERE key LIKE ?", (used, f"{prefix}%"))


def test_prune_by_age_then_by_size_keeps_the_recently_used(tmp_path: Path) -> None:
    c = EmbeddingCache(tmp_path, "m", 64)
    now = int(time.time())
    fill(c, 300, now - 100 * 86400, "old")
    fill(c, 300, now - 5 * 86400, "mid")
    fill(c, 300, now - 3600, "new")
    r = c.prune(older_than_s=30 * 86400)
    assert r["removed"] == 300 and r["entries"] == 600
    assert not c.get_many(["old1"]) and c.get_many(["mid1"]) and c.get_many(["new1"])
    # a hit refreshes the last use (at most once a day), so it outlives its cohort
    assert c.conn.execute("SELECT used FROM vec WHERE key='mid1'").fetchone()[0] >= now
    size = c.stats()["bytes"]
    r = c.prune(max_bytes=size // 2)
    assert r["bytes_after"] <= size // 2 + 8192 and r["removed"] > 0
    left = {k for (k,) in c.conn.execute("SELECT key FROM vec")}
    assert "mid1" in left and all(k.startswith("new") or k == "mid1" for k in left)


def test_index_run_bounds_the_cache(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    cs = CodeSight(repo, settings=settings.model_copy(update={"cache_max_mb": 1}), embedder=hash_embedder)
    c = EmbeddingCache(settings.cache_dir, hash_embedder.name, hash_embedder.dim)
    fill(c, 6000, 1, "junk")  # ~1.3 MB of vectors nobody has used for decades
    assert c.stats()["bytes"] > 1024 * 1024
    report = cs.index()
    assert c.stats()["bytes"] <= 1024 * 1024
    assert any("least recently used" in n for n in report.warnings)
    st = cs.status()
    assert st["cache"] is not None and st["cache"]["entries"] > 0 and st["vectors"] == st["chunks"]
    assert c.get_many([r.embed_key for r in cs.store.get_chunks(list(range(1, 5))).values()])  # kept


def test_cache_command(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index()

    def run(*a: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codesight_tui", "cache", *a], capture_output=True, text=True, timeout=120
        )

    r = run("--json")
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    rows = cs.store.get_chunks(list(range(1, cs.status()["chunks"] + 1))).values()
    docs = [doc_text(r.path, r.scope, r.content, r.language) for r in rows]
    keys = {r.embed_key for r in rows} | {content_hash(d) for d in docs if d is not None}
    assert any(docs)  # the fixture's commented code has doc views, cached like any other text
    assert len(st["models"]) == 1 and st["models"][0]["entries"] == len(keys)
    r = run("prune", "--max-size", "1KB")
    assert r.returncode == 0 and "removed" in r.stdout
    assert json.loads(run("--json").stdout)["models"][0]["entries"] < st["models"][0]["entries"]
    r = run("prune", "--max-size", "lots")
    assert r.returncode == 2 and "bad size" in r.stderr and "Traceback" not in r.stderr
    assert len(cache_files(settings.cache_dir)) == 1 and cache_mod.TOUCH_EVERY_S == 86400
    # Issue 48 item 30: what else the cache folder holds (the static model, the ONNX export) counts too.
    static = Path(settings.cache_dir) / "static" / "some-model"
    static.mkdir(parents=True)
    (static / "model.safetensors").write_bytes(b"\0" * 300_000)
    st = json.loads(run("--json").stdout)
    assert st["other"]["static/"] == 300_000
    assert st["total_bytes"] == sum(m["bytes"] for m in st["models"]) + sum(st["other"].values())
    assert "static/:" in run().stdout and "in all" in run().stdout


def test_damaged_cache_is_one_clear_line(settings: Settings) -> None:
    settings.cache_dir.mkdir(parents=True, exist_ok=True)
    (settings.cache_dir / "some-model-384.sqlite").write_bytes(b"not a database" * 100)
    for args in (["cache"], ["cache", "prune", "--max-size", "1KB"]):
        r = subprocess.run([sys.executable, "-m", "codesight_tui", *args], capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and "embedding cache" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_index_survives_a_damaged_cache(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    c = EmbeddingCache(settings.cache_dir, hash_embedder.name, hash_embedder.dim)
    c.path.write_bytes(b"garbage" * 1000)
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    report = cs.index()
    assert report.vectors_pending == 0 and any("damaged" in w for w in report.warnings)
    assert list(settings.cache_dir.glob("*.damaged-*"))
    assert EmbeddingCache(settings.cache_dir, hash_embedder.name, hash_embedder.dim).stats()["entries"] > 0


def test_a_full_disk_or_lock_never_sets_a_healthy_cache_aside(
    settings: Settings, hash_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 22, fault 7: any SQLite error used to move a healthy cache aside and start an empty one.
    from codesight_tui.core.errors import CodeSightError

    c = EmbeddingCache(settings.cache_dir, hash_embedder.name, hash_embedder.dim)
    c.put_many([("k", np.ones(hash_embedder.dim, dtype=np.float32))])
    real_connect = sqlite3.connect

    def full(*a: object, **kw: object) -> sqlite3.Connection:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(sqlite3, "connect", full)
    with pytest.raises(CodeSightError, match="disk is full"):
        EmbeddingCache(settings.cache_dir, hash_embedder.name, hash_embedder.dim).get_many(["k"])
    monkeypatch.setattr(sqlite3, "connect", real_connect)
    assert not list(settings.cache_dir.glob("*.damaged-*"))
    assert "k" in EmbeddingCache(settings.cache_dir, hash_embedder.name, hash_embedder.dim).get_many(["k"])


def test_damaged_copies_do_not_pile_up(settings: Settings, hash_embedder: HashEmbedder) -> None:
    for _n in range(3):
        c = EmbeddingCache(settings.cache_dir, hash_embedder.name, hash_embedder.dim)
        c.path.write_bytes(b"garbage" * 1000)
        for side in settings.cache_dir.glob("*-wal"):
            side.unlink()
        EmbeddingCache(settings.cache_dir, hash_embedder.name, hash_embedder.dim).get_many(["x"])
        time.sleep(1.1)  # set-aside names carry the second
    assert len([p for p in settings.cache_dir.glob("*.damaged-*") if not p.name.endswith(("-wal", "-shm"))]) == 1


def test_damage_in_the_middle_of_the_cache_never_blocks_embedding(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    # Issue 22, fault 10: garbage inside the file (its header intact, so it opens) gave a
    # "malformed" traceback on every index run, for every repository.
    c = EmbeddingCache(settings.cache_dir, hash_embedder.name, hash_embedder.dim)
    fill(c, 3000, int(time.time()))
    c.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.conn.close()
    data = bytearray(c.path.read_bytes())
    assert len(data) > 200_000
    body = len(data) - 4096  # every page after the first (the header) is garbage
    data[4096:] = (b"\xde\xad\xbe\xef" * (body // 4 + 1))[:body]
    c.path.write_bytes(bytes(data))
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    report = cs.index()
    assert report.vectors_pending == 0 and any("damaged" in w for w in report.warnings), report.warnings
    assert len(list(settings.cache_dir.glob("*.damaged-*"))) >= 1
    assert cs.search("haversine", mode="vector")  # the vectors were written
    fresh = EmbeddingCache(settings.cache_dir, hash_embedder.name, hash_embedder.dim)
    fresh.get_many(["k1"])  # the new file works
    assert fresh.stats()["entries"] > 0
