"""The LanceDB side of an index: one row per embedded chunk id, cosine search.

A chunk with comments or docstrings has a second row, its doc view (``chunker.doc_view``), under
the negated chunk id. Search takes each chunk's closer row and returns chunk ids only."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import numpy as np

from codesight_tui.core.errors import VectorStoreError

TABLE = "chunks"
# Approximate search above this many vectors. Measured (benchmarks/bench_ann.py, MiniLM, 2 cores):
# exact search takes 27 ms at 25k vectors and 127 ms at 100k; IVF_PQ with nprobes 40 and a
# refine factor of 10 answers in ~4 ms with recall@10 0.98 against exact on real vectors (0.91 on
# the 100k stress table), and builds in 15 s (25k) to 42 s (100k). On abseil-cpp (34,876 rows) it
# gave the same NDCG@10 as exact search (0.912 both) with hybrid p50 48 ms against 84 ms in the
# same (loaded) run; below 20k rows an exact scan takes under ~20 ms.
ANN_MIN_ROWS = 20_000
ANN_NPROBES = 40
ANN_REFINE = 10
# Old table versions are deleted once this old: long enough for a search in another process to
# finish on the version it opened (milliseconds; readers re-check the latest version every second),
# short enough that a stream of small edits cannot pile them up (200 one-line edits took the table
# from 15 to 753 versions and 330 MB with a 5-minute window).
KEEP_VERSIONS_S = 10
# Compaction rewrites the small fragments into one, which is the whole table when it has one big
# fragment: only once this many have piled up (1,000 edits compacting every time left ~650
# versions and 700 MB within the window; benchmarks/torture.py).
COMPACT_FRAGMENTS = 24
COMPACT_VERSIONS = 100  # or this many versions after the last compaction (runs that only delete add no fragment)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _read(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """A read of the table: any failure there (a file missing, truncated or garbled) is a
    ``VectorStoreError``, which search answers from BM25 and the next index run repairs."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except VectorStoreError:
            raise
        except Exception as exc:
            raise VectorStoreError(f"the vector index is damaged ({str(exc).splitlines()[0][:160]})") from exc

    return wrapper


class VectorStore:
    """Vectors keyed by chunk id (``-id`` for a chunk's doc view). lancedb is imported only when
    vectors are actually used."""

    def __init__(self, directory: Path, ann_min_rows: int = ANN_MIN_ROWS) -> None:
        self.directory = directory
        self.ann_min_rows = ann_min_rows
        self._db: Any = None  # lancedb's connection and table: imported only when vectors are used
        self._table: Any = None
        self._has_ann: bool | None = None
        self.dirty = False  # written since the last optimize

    def _connect(self) -> Any:
        if self._db is None:
            # LanceDB's Rust logger writes warnings straight to fd 2, under the TUI over the screen
            # ("training 136 of the 186 requested IVF partitions"): only errors.
            os.environ.setdefault("LANCEDB_LOG", "error")
            from datetime import timedelta

            import lancedb

            # A long-lived reader (the TUI) sees what another process wrote within a second.
            self._db = lancedb.connect(str(self.directory), read_consistency_interval=timedelta(seconds=1))
        return self._db

    def refresh(self) -> None:
        """Forget the open table: the next use opens its latest version. An index run starts
        with this: a handle left at an older version takes another process's new vectors for
        missing, and embeds those chunks a second time."""
        self._table = None
        self._has_ann = None

    def table(self) -> Any:
        """The table, or None if no vector was ever written."""
        if self._table is None:
            if self._db is None and not self.directory.is_dir():
                return None  # never written (and a read must not create it: the index may be read-only)
            db = self._connect()
            try:
                self._table = db.open_table(TABLE)
            except (FileNotFoundError, ValueError):
                return None
        return self._table

    def ensure(self, dim: int) -> Any:
        t = self.table()
        if t is not None:
            return t
        import pyarrow as pa

        schema = pa.schema(
            [
                pa.field("id", pa.int64()),
                pa.field("language", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), dim)),
            ]
        )
        self._table = self._connect().create_table(TABLE, schema=schema, exist_ok=True)
        return self._table

    def add(self, ids: list[int], languages: list[str], vectors: np.ndarray) -> None:
        import pyarrow as pa

        dim = vectors.shape[1]
        t = self.ensure(dim)
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
        self.dirty = True
        t.add(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "language": pa.array(languages, pa.string()),
                    "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
                }
            )
        )

    @_read
    def ids(self) -> list[int]:
        """The chunk ids that have a vector."""
        t = self.table()
        if t is None or not t.count_rows():
            return []
        # Only the id column is read: the whole table would be 1.5 KB a row (50 MB at 35,000).
        return [i for i in t.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist() if i > 0]

    def delete_ids(self, ids: Iterable[int]) -> None:
        """Delete these chunks' vectors, doc views included."""
        t = self.table()
        wanted = [abs(int(i)) for i in ids]
        if t is None or not wanted:
            return
        self.dirty = True
        for k in range(0, len(wanted), 1000):
            part = wanted[k : k + 1000]
            t.delete("id IN (" + ",".join(f"{i},{-i}" for i in part) + ")")

    @_read
    def count(self) -> int:
        """Rows, doc views included."""
        t = self.table()
        return t.count_rows() if t is not None else 0

    @_read
    def nearest(self, vector: np.ndarray, limit: int, language: str | None = None) -> list[tuple[int, float]]:
        """``(chunk id, cosine distance)`` nearest first, each chunk once: at the distance of the
        closer of its rows (text or doc view)."""
        t = self.table()
        if t is None:
            return []
        # Twice the rows: a chunk whose two rows both come back takes two places.
        q = t.search(np.asarray(vector, dtype=np.float32)).distance_type("cosine").limit(limit * 2)
        if self.has_ann():  # rows added since the index was built are scanned exactly by LanceDB
            q = q.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE)
        if language:
            q = q.where(f"language = '{language.replace(chr(39), '')}'", prefilter=True)
        res = q.select(["id", "_distance"]).to_arrow()
        out: dict[int, float] = {}
        for i, d in zip(res.column("id").to_pylist(), res.column("_distance").to_pylist(), strict=False):
            out.setdefault(abs(i), d)  # rows come nearest first
        return list(out.items())[:limit]

    @_read
    def vectors(self, ids: Iterable[int]) -> dict[int, np.ndarray]:
        """The stored vectors of ``ids`` (those that have one), by id: 3-5 ms for a hundred ids,
        at 300 or at 100,000 rows (the embedding cache answers faster, see ``CodeSight``). Text
        vectors only, not doc views."""
        t = self.table()
        wanted = [int(i) for i in ids]
        out: dict[int, np.ndarray] = {}
        if t is None or not wanted:
            return out
        for k in range(0, len(wanted), 500):
            part = wanted[k : k + 500]
            res = (
                t.search()
                .where("id IN (" + ",".join(map(str, part)) + ")")
                .select(["id", "vector"])
                .limit(len(part))
                .to_arrow()
            )
            if res.num_rows:
                vecs = res.column("vector").combine_chunks()
                flat = vecs.values.to_numpy(zero_copy_only=False).reshape(len(vecs), -1)
                out.update(zip(res.column("id").to_pylist(), flat.astype(np.float32, copy=False), strict=False))
        return out

    def optimize(self, compact: bool | None = None) -> None:
        """Compact the small appends of indexing runs into few files, fold them into the
        approximate index and drop versions older than ``KEEP_VERSIONS_S``: once
        ``COMPACT_FRAGMENTS`` fragments or ``COMPACT_VERSIONS`` versions have piled up, or when
        ``compact`` says so. (Dropping old versions without compacting needs the separate pylance
        package.)"""
        t = self.table()
        self.dirty = False
        if t is None:
            return
        import warnings
        from datetime import timedelta

        keep = timedelta(seconds=KEEP_VERSIONS_S)
        mark = self.directory / "compacted-at-version"
        if compact is None:
            try:
                last = int(mark.read_text()) if mark.exists() else 0
                compact = (
                    t.stats()["fragment_stats"]["num_fragments"] >= COMPACT_FRAGMENTS
                    or t.version - last >= COMPACT_VERSIONS
                )
            except Exception:  # an older lancedb without stats: compact every time  # noqa: BLE001
                compact = True
        if not compact:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t.optimize(cleanup_older_than=keep)
        with contextlib.suppress(OSError):
            mark.write_text(str(t.version))

    def version_count(self) -> int:
        """How many versions of the table are kept on disk."""
        t = self.table()
        return len(t.list_versions()) if t is not None else 0

    def has_ann(self) -> bool:
        if self._has_ann is None:
            t = self.table()
            try:
                self._has_ann = t is not None and any(
                    getattr(ix, "index_type", "").upper().startswith("IVF") for ix in t.list_indices()
                )
            except Exception:  # noqa: BLE001 - an older lancedb without list_indices: no ANN index assumed
                self._has_ann = False
        return self._has_ann

    def ensure_ann(self) -> bool:
        """Build the approximate index once the table reaches ``ann_min_rows`` (later appends are
        folded in by ``optimize``). Returns whether one was built now."""
        t = self.table()
        if t is None or self.has_ann():
            return False
        n = t.count_rows()
        if n < self.ann_min_rows:
            return False
        import warnings

        dim = t.schema.field("vector").type.list_size
        sub = next((d for d in (48, 32, 24, 16, 8, 4, 2, 1) if dim % d == 0 and dim // d >= 4), 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t.create_index(
                metric="cosine",
                index_type="IVF_PQ",
                num_partitions=max(16, int(n**0.5)),
                num_sub_vectors=sub,
                replace=True,
            )
        self._has_ann = True
        return True

    def drop(self) -> None:
        self._has_ann = None
        self._table = None
        self._db = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def size_bytes(self) -> int:
        if not self.directory.exists():
            return 0
        return sum(p.stat().st_size for p in self.directory.rglob("*") if p.is_file())
