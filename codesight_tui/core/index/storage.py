"""One repository's index on disk: where it lives, opening it, damage, recovery and the writer lock.

``IndexStorage`` owns the SQLite store (``index.db``, opened lazily, per thread inside ``Store``),
the LanceDB vector table and the writer lock (``write.lock``, a flock). It knows how to open an
index whatever state it is in: a busy one is waited out for a moment, a read-only one is searched
without updating, one of a newer codesight is refused and kept, and an unreadable or outdated one
is wiped and started afresh, only while holding the writer lock, so a writer at work elsewhere is
never wiped under its feet. Damage a search meets is left as a marker (``damaged``,
``vectors-damaged``) for the next index run, which rebuilds.
"""

from __future__ import annotations

import contextlib
import errno
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from codesight_tui.core.errors import CodeSightError, IndexBusyError, UsageError
from codesight_tui.core.store.store import SCHEMA_VERSION, Store
from codesight_tui.core.store.vectors import TABLE, VectorStore

if TYPE_CHECKING:
    from filelock import FileLock

OPEN_RETRIES = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, None)  # seconds between tries to open a busy index


def writer_active(lock_path: Path) -> bool:
    """Whether some process holds the index's writer lock (a flock, as filelock takes it)."""
    import fcntl
    import os

    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def newer_schema(version: str | None) -> bool:
    """Whether an index's format is newer than this codesight's (so not to be touched)."""
    return bool(version and version.isdigit() and int(version) > int(SCHEMA_VERSION))


def mark(marker: Path) -> None:
    """Leave a marker for the next index run; on a read-only index there is no next run to tell."""
    with contextlib.suppress(OSError):
        marker.touch()


class IndexStorage:
    """The files of one repository's index (see the module). ``note`` hears what happened to the
    index (rebuilt, read-only) in one line, for the engine's notices."""

    def __init__(self, root: Path, index_dir: Path, note: Callable[[str], None]) -> None:
        self.root = root
        self.index_dir = index_dir
        self.note = note
        self.db_path = index_dir / "index.db"
        self.lock_path = index_dir / "write.lock"
        self.damaged_marker = index_dir / "damaged"  # a search met a bad page: rebuild
        self.vectors_damaged_marker = index_dir / "vectors-damaged"  # a vector read failed: check them
        self.vectors = VectorStore(index_dir / "vectors.lance")
        self.current: Store | None = None  # the open store, if any
        self._lock: FileLock | None = None

    # --- the SQLite store -----------------------------------------------------------------------
    def exists(self) -> bool:
        """Whether an index database exists (it may be partial: search whatever it holds)."""
        return self.db_path.exists()

    @property
    def store(self) -> Store:
        """The open store, opened on first use. SQLite answers "locked" at once, without its busy
        timeout, where a writer's WAL recovery or mode change is under way: a moment later the same
        open succeeds, so a busy index is tried again for about 3 s."""
        if self.current is None:
            for wait in OPEN_RETRIES:
                try:
                    self.current = self.open_store()
                    break
                except IndexBusyError:
                    if wait is None:
                        raise
                    time.sleep(wait)
        assert self.current is not None
        return self.current

    def open_store(self) -> Store:
        """Open ``index.db`` whatever state it is in (see the module)."""
        from codesight_tui.core.private import private_dir, private_file

        try:
            private_dir(self.index_dir)
            if not self.db_path.exists():
                private_file(self.db_path)
        except OSError as exc:
            if not self.db_path.exists():
                raise UsageError(
                    f"cannot write index to {self.index_dir}: {exc.strerror.lower() if exc.strerror else exc}"
                    " (set CODESIGHT_DATA_DIR to a writable directory)"
                ) from None
        try:
            store = Store(self.db_path)
            version = store.get_meta("schema_version")
            if version != SCHEMA_VERSION:
                store.close()
                if newer_schema(version):
                    # Never wipe what a newer codesight wrote: this one can't read it, the other still can.
                    raise UsageError(
                        f"the index at {self.index_dir} was written by a newer codesight (format v{version};"
                        f" this one reads v{SCHEMA_VERSION}): upgrade codesight, or set CODESIGHT_DATA_DIR to"
                        " another directory"
                    )
                return self.wipe_and_open(
                    f"index format changed (v{version} -> v{SCHEMA_VERSION}); rebuilt it (cached vectors are reused)"
                )
            return store
        except sqlite3.OperationalError as exc:
            msg = str(exc).lower()
            if "readonly" in msg or "read-only" in msg or "unable to open" in msg:
                if self.db_path.exists():
                    try:  # a read-only index can still be searched
                        self.note(f"index at {self.index_dir} is read-only: searching without updating")
                        return Store(self.db_path, readonly=True)
                    except sqlite3.Error:
                        pass
                raise UsageError(f"cannot write index to {self.index_dir}: permission denied") from None
            if "locked" in msg:
                raise IndexBusyError(f"index at {self.index_dir} is locked by another process") from None
            return self.rebuild(exc)
        except sqlite3.DatabaseError as exc:
            return self.rebuild(exc)

    def close_store(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None

    # --- damage and recovery --------------------------------------------------------------------
    def vector_files_present(self) -> bool:
        """Whether the vector table SQLite counts on still has its files: a cheap look at the
        folder, so that a run with nothing to do never imports LanceDB. Damage it can't see (one
        data file of several gone, a garbled manifest) is found by the next search that reads it,
        which leaves ``vectors_damaged_marker`` for the next run."""
        if not self.store.conn.execute("SELECT 1 FROM chunks WHERE embedded=1 LIMIT 1").fetchone():
            return True
        table = self.vectors.directory / f"{TABLE}.lance"
        return all((table / sub).is_dir() and any((table / sub).iterdir()) for sub in ("_versions", "data"))

    def vectors_read_back(self) -> bool:
        """Whether every vector SQLite counts can be read back now (a full read: only after a search
        met a failure, which may also have been a reader left on a version compacted away)."""
        if not self.store.conn.execute("SELECT 1 FROM chunks WHERE embedded=1 LIMIT 1").fetchone():
            return True  # nothing to read back (and nothing to rebuild)
        try:
            self.vectors = VectorStore(self.vectors.directory)  # a fresh handle, latest version
            t = self.vectors.table()
            # Every data file is opened, only the id column is read (12 ms at 35,000 rows).
            return t is not None and set(self.vectors.ids()) >= self.store.embedded_ids()
        except Exception:  # noqa: BLE001 - any failure to read the vectors back means they are rebuilt
            return False

    def rebuild(self, exc: Exception) -> Store:
        return self.wipe_and_open(f"index at {self.index_dir} was unreadable ({exc}); rebuilt it from scratch")

    def wipe_and_open(self, why: str) -> Store:
        """Start the index afresh, holding the writer lock while the old one is deleted: a writer at
        work elsewhere makes this an ``IndexBusyError``, never a wipe under its feet."""
        from codesight_tui.core.private import private_file

        self.acquire_writer(wait=False)
        try:
            self.note(why)
            self.wipe()
            private_file(self.db_path)
            return Store(self.db_path)
        except sqlite3.Error as exc2:
            raise CodeSightError(f"cannot create index at {self.index_dir}: {exc2}") from None
        finally:
            self.release_writer()

    def wipe(self) -> None:
        """Delete the index: the store, its WAL and the vector table (the caller holds the lock)."""
        self.close_store()
        self.vectors.drop()
        for suffix in ("", "-wal", "-shm"):
            Path(str(self.db_path) + suffix).unlink(missing_ok=True)

    # --- the writer lock ------------------------------------------------------------------------
    def acquire_writer(self, wait: bool) -> None:
        """Take the writer lock (``wait``: for as long as it takes); ``IndexBusyError`` where another
        writer holds it and we may not wait."""
        from filelock import FileLock, Timeout

        if self._lock is None:
            self._lock = FileLock(str(self.lock_path), mode=0o600)
        try:
            self._lock.acquire(timeout=-1 if wait else 0)
        except Timeout:
            raise IndexBusyError(
                f"index of {self.root} is busy: another codesight process is indexing it"
                " (searches still work; retry when it finishes)"
            ) from None
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
                raise UsageError(f"cannot write index to {self.index_dir}: permission denied") from None
            raise

    def release_writer(self) -> None:
        if self._lock is not None:
            self._lock.release()

    def writer_active(self) -> bool:
        """Whether a writer (this process's or another's) holds the lock now."""
        return writer_active(self.lock_path)
