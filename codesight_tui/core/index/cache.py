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
from typing import Any

import numpy as np

from codesight_tui.core.errors import CodeSightError


def _slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_")[-120:] or "model"


TOUCH_EVERY_S = 86_400  # a hit refreshes an entry's last use at most once a day


def cache_path(cache_dir: Path, model: str, dim: int) -> Path:
    """Where the cache of ``model`` (vectors of ``dim`` floats) lives."""
    return Path(cache_dir).expanduser() / f"{_slug(model)}-{dim}.sqlite"


def cache_files(cache_dir: Path) -> list[Path]:
    """Every model's cache file under ``cache_dir``."""
    return sorted(Path(cache_dir).expanduser().glob("*.sqlite"))


def _file_bytes(path: Path) -> int:
    """The database and its WAL and shared-memory files."""
    sides = (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"))
    return sum(p.stat().st_size for p in sides if p.is_file())


class EmbeddingCache:
    """``get_many`` / ``put_many`` of float32 vectors by key; safe across threads and processes.
    Each entry records when it was last used, so ``prune`` can drop the least recently used."""

    def __init__(self, cache_dir: Path, model: str, dim: int, *, path: Path | None = None, repair: bool = True) -> None:
        from codesight_tui.core.private import private_dir

        private_dir(cache_dir)
        self.path = path or cache_path(cache_dir, model, dim)
        self.dim = dim
        self.repair = repair  # set a damaged file aside and start a new one (not for `cache status`)
        self.notices: list[str] = []
        self._local = threading.local()

    @classmethod
    def open_file(cls, path: Path) -> EmbeddingCache:
        """An existing cache file, whatever its model (for ``status``, ``prune`` and search)."""
        dim = int(path.stem.rsplit("-", 1)[-1]) if path.stem.rsplit("-", 1)[-1].isdigit() else 0
        return cls(path.parent, path.stem, dim, path=path, repair=False)

    @property
    def conn(self) -> sqlite3.Connection:
        c = getattr(self._local, "conn", None)
        if c is None:
            try:
                c = self._open()
            except sqlite3.OperationalError as exc:
                # Locked, read-only, out of space: the file itself may be fine, so it stays as it is.
                raise CodeSightError(f"cannot open the embedding cache {self.path}: {exc}") from None
            except sqlite3.DatabaseError:
                if not self.repair:
                    raise
                self._set_aside()
                c = self._open()
            self._local.conn = c
        return c

    def _set_aside(self) -> None:
        """A damaged cache is only lost time, never lost data: set it aside (replacing an older
        copy set aside, so they never pile up) so that a new one starts."""
        c = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
            self._local.conn = None
        for old in self.path.parent.glob(f"{self.path.name}.damaged-*"):
            old.unlink(missing_ok=True)
        aside = self.path.with_name(f"{self.path.name}.damaged-{int(time.time())}")
        for suffix in ("-wal", "-shm"):  # a journal of the old file must not replay into the new
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                side.rename(aside.with_name(aside.name + suffix))
        if self.path.exists():
            self.path.rename(aside)
        self.notices.append(f"embedding cache {self.path.name} was damaged: moved to {aside.name}, starting a new one")

    def _damaged(self, exc: sqlite3.DatabaseError) -> bool:
        """Damage found inside the file (a bad page) after it opened: set aside when repairing.
        Locked, read-only or full (OperationalError) is not damage."""
        if isinstance(exc, sqlite3.OperationalError) or not self.repair:
            return False
        self._set_aside()
        return True

    def _open(self) -> sqlite3.Connection:
        from codesight_tui.core.private import private_file

        try:
            private_file(self.path)
        except OSError:  # a read-only cache: SQLite says what is wrong
            pass
        c = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        try:
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("PRAGMA synchronous=NORMAL")
            c.execute("CREATE TABLE IF NOT EXISTS vec (key TEXT PRIMARY KEY, v BLOB NOT NULL, used INTEGER)")
        except sqlite3.DatabaseError:
            c.close()
            raise
        return c

    def get_many(self, keys: list[str], touch: bool = True) -> dict[str, np.ndarray]:
        """The cached vectors of ``keys``; with ``touch`` an entry's last use is refreshed (at most
        daily). Searches don't touch: a read must never wait on an indexer's write lock. A cache
        found damaged here is set aside: nothing is cached any more, and embedding goes on."""
        try:
            return self._get_many(keys, touch)
        except sqlite3.DatabaseError as exc:
            if not self._damaged(exc):
                raise
            return {}

    def _get_many(self, keys: list[str], touch: bool) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        stale: list[str] = []
        now = int(time.time())
        for k in range(0, len(keys), 500):
            part = keys[k : k + 500]
            q = ",".join("?" * len(part))
            for key, blob, used in self.conn.execute(f"SELECT key, v, used FROM vec WHERE key IN ({q})", part):
                v = np.frombuffer(blob, dtype=np.float32)
                if v.shape[0] == self.dim:
                    out[key] = v
                    if touch and (used or 0) < now - TOUCH_EVERY_S:
                        stale.append(key)
        if stale:  # keep what is still in use from being pruned
            try:
                self.conn.executemany("UPDATE vec SET used = ? WHERE key = ?", [(now, k) for k in stale])
            except sqlite3.OperationalError:  # read-only or busy: recency is a hint, never an error
                pass
        return out

    def put_many(self, items: list[tuple[str, np.ndarray]]) -> None:
        """Store vectors by key; a cache found damaged is set aside and the write goes to a new one."""
        try:
            self._put_many(items)
        except sqlite3.DatabaseError as exc:
            if not self._damaged(exc):
                raise
            self._put_many(items)

    def _put_many(self, items: list[tuple[str, np.ndarray]]) -> None:
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

    def stats(self) -> dict[str, Any]:
        n, oldest = self.conn.execute("SELECT count(*), min(used) FROM vec").fetchone()
        return {"path": str(self.path), "entries": n, "bytes": _file_bytes(self.path), "oldest_use": oldest}

    def _compact(self) -> None:
        c = self.conn
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        c.execute("VACUUM")
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def prune(self, max_bytes: int | None = None, older_than_s: float | None = None) -> dict[str, Any]:
        """Drop entries unused for ``older_than_s``, then the least recently used until the file
        is under ``max_bytes``; the file is compacted afterwards. Returns what it did."""
        before = self.stats()
        c = self.conn
        removed = 0
        if older_than_s is not None:
            removed += c.execute(
                "DELETE FROM vec WHERE coalesce(used, 0) < ?", (int(time.time() - older_than_s),)
            ).rowcount
        if removed:
            self._compact()
        if max_bytes is not None:
            for _ in range(4):  # the per-entry size is an estimate: re-measure after compacting
                st = self.stats()
                if st["bytes"] <= max_bytes or not st["entries"]:
                    break
                per_entry = st["bytes"] / st["entries"]
                excess = max(1, int((st["bytes"] - max_bytes) / per_entry * 1.05) + 1)
                removed += c.execute(
                    "DELETE FROM vec WHERE key IN (SELECT key FROM vec ORDER BY coalesce(used, 0) LIMIT ?)", (excess,)
                ).rowcount
                self._compact()
        after = self.stats()
        return {
            "path": str(self.path),
            "removed": removed,
            "entries": after["entries"],
            "bytes_before": before["bytes"],
            "bytes_after": after["bytes"],
        }
