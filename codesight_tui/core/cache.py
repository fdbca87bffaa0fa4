"""A content-addressed embedding cache shared by every repository on the machine.

One SQLite file per model under ``cache_dir``; the key is the hash of the exact text embedded.
A second worktree, a re-clone or a branch switch re-embeds only text never seen before.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from pathlib import Path

import numpy as np


def _slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_")[-120:] or "model"


class EmbeddingCache:
    """``get_many`` / ``put_many`` of float32 vectors by key; safe across threads and processes."""

    def __init__(self, cache_dir: Path, model: str, dim: int) -> None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.path = cache_dir / f"{_slug(model)}-{dim}.sqlite"
        self.dim = dim
        self._local = threading.local()

    @property
    def conn(self) -> sqlite3.Connection:
        c = getattr(self._local, "conn", None)
        if c is None:
            c = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("PRAGMA synchronous=NORMAL")
            c.execute("CREATE TABLE IF NOT EXISTS vec (key TEXT PRIMARY KEY, v BLOB NOT NULL, used INTEGER)")
            self._local.conn = c
        return c

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for k in range(0, len(keys), 500):
            part = keys[k : k + 500]
            q = ",".join("?" * len(part))
            for key, blob in self.conn.execute(f"SELECT key, v FROM vec WHERE key IN ({q})", part):
                v = np.frombuffer(blob, dtype=np.float32)
                if v.shape[0] == self.dim:
                    out[key] = v
        return out

    def put_many(self, items: list[tuple[str, np.ndarray]]) -> None:
        now = int(time.time())
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            c.executemany(
                "INSERT OR REPLACE INTO vec VALUES (?, ?, ?)",
                [(k, np.asarray(v, dtype=np.float32).tobytes(), now) for k, v in items],
            )
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def stats(self) -> dict[str, int]:
        n = self.conn.execute("SELECT count(*) FROM vec").fetchone()[0]
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))
        return {"entries": n, "bytes": size}
