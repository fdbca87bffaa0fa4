"""The vector phase of an index run: the static tier's vectors, the full model's (from the shared
cache first, then the model, with batches overlapped on a GPU), and what is left of deleted
chunks taken out. ``indexer`` has the lexical phase before it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from codesight_tui.core.index.indexer import IndexReport, Progress, ProgressFn
from codesight_tui.core.ingest.chunker import doc_text, embed_text
from codesight_tui.core.text import content_hash

if TYPE_CHECKING:
    from codesight_tui.core.index.cache import EmbeddingCache
    from codesight_tui.core.index.static import StaticEmbedder
    from codesight_tui.core.store.store import ChunkRow, Store
    from codesight_tui.core.store.vectors import VectorStore


def reconcile_vectors(store: Store, vectors: VectorStore, model_name: str, dim: int) -> None:
    """Make LanceDB agree with SQLite before embedding.

    A different model or dimension drops every vector (embedding spaces never mix); vectors of
    chunks SQLite does not mark embedded (a run killed between the two writes, or removed chunks)
    are deleted; chunks marked embedded whose vector is missing are queued again.
    """
    if store.get_meta("model") != model_name or store.get_meta("dim") != str(dim):
        vectors.drop()
        store.reset_embedded()
        store.set_meta(model=model_name, dim=dim)
    in_lance, marked = drop_orphan_vectors(store, vectors)
    missing = marked - in_lance
    if missing:
        with store.transaction():
            store.conn.executemany("UPDATE chunks SET embedded=0 WHERE id=?", [(i,) for i in missing])


def drop_orphan_vectors(store: Store, vectors: VectorStore) -> tuple[set[int], set[int]]:
    """Delete vectors whose chunk is gone or not marked embedded; returns (lance ids, marked ids)."""
    in_lance = set(vectors.ids())
    marked = store.embedded_ids()
    orphans = in_lance - marked
    if orphans:
        vectors.delete_ids(orphans)
    return in_lance - orphans, marked


@dataclass
class _EmbedJob:
    """One batch of chunks on its way to the vector store: each chunk's text, and its doc view
    where it has one (stored under the negated chunk id, see ``VectorStore``)."""

    rows: list[ChunkRow]
    ids: list[int]  # LanceDB ids, one per vector
    languages: list[str]
    keys: list[str]  # embed key of each vector's text
    found: dict[str, np.ndarray]  # embed key -> vector already in the cache
    todo: dict[str, str]  # embed key -> text to embed
    docs: int  # how many of ``todo`` are doc views
    future: Future[np.ndarray] | None = None


def index_static(
    store: Store,
    model: StaticEmbedder,
    *,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    report: IndexReport | None = None,
    batch: int = 4096,
) -> IndexReport:
    """Give every chunk without one a static vector (``model``: a ``core.index.static.StaticEmbedder``),
    and its doc view one too where it has a doc view (as the full model's vectors do), batch by
    batch, each committed on its own. Vectors of another static model are dropped first."""
    report = report or IndexReport()
    t0 = time.perf_counter()
    if store.get_meta("static_model") != model.name:
        store.clear_static()
        store.set_meta(static_model=model.name, static_dim=model.dim, static_docs="1")
    elif store.get_meta("static_docs") != "1":
        # An index from before doc views had static vectors: its chunks get their doc views' now,
        # while search goes on with the vectors it has.
        have, seen = store.static_count(), 0
        for rows in _pages_by_id(partial(store.static_pending, have=True), batch, cancel, report):
            _put_static(store, model, rows, own=False)
            seen += len(rows)
            if progress:
                progress(Progress("static", seen, max(have, seen), rows[-1].path))
        if not report.cancelled:
            store.set_meta(static_docs="1")
    total = store.counts()["chunks"] - store.static_count()
    done = 0
    for rows in _pages_by_id(store.static_pending, batch, cancel, report) if total > 0 else ():
        _put_static(store, model, rows)
        done += len(rows)
        if progress:
            progress(Progress("static", done, max(total, done), rows[-1].path))
    report.static_embedded += done
    report.static_seconds += time.perf_counter() - t0
    return report


def _put_static(store: Store, model: StaticEmbedder, rows: list[ChunkRow], own: bool = True) -> None:
    """Static vectors of ``rows`` (unless not ``own``) and of the doc views of those that have one."""
    docs = [(r.id, text) for r in rows if (text := doc_text(r.path, r.scope, r.content, r.language))]
    store.put_static(
        [r.id for r in rows] if own else [],
        model.encode([embed_text(r.path, r.scope, r.content) for r in rows]) if own else None,
        [cid for cid, _ in docs],
        model.encode([text for _, text in docs]),
    )


def _pages_by_id(
    fetch: Callable[[int, int], list[ChunkRow]], page: int, cancel: threading.Event | None, report: IndexReport
) -> Iterator[list[ChunkRow]]:
    """``fetch(after, limit)``'s rows page by page in id order (each page starts past the last id
    seen, whatever became of its rows), until none are left or ``cancel`` is set."""
    after = 0
    while True:
        if cancel is not None and cancel.is_set():
            report.cancelled = True
            return
        rows = fetch(after, page)
        if not rows:
            return
        after = rows[-1].id
        yield rows


def _views(r: ChunkRow) -> list[tuple[int, str, ChunkRow, str | None]]:
    """What a chunk needs vectors of: ``(LanceDB id, embed key, row, doc view text or None)``
    for its own text and, where it has one, its doc view (under the negative id)."""
    out: list[tuple[int, str, ChunkRow, str | None]] = [(r.id, r.embed_key, r, None)]
    doc = doc_text(r.path, r.scope, r.content, r.language)
    if doc is not None:
        out.append((-r.id, content_hash(doc), r, doc))
    return out


def fill_from_cache(
    store: Store,
    vectors: VectorStore,
    cache: EmbeddingCache,
    model_name: str,
    dim: int,
    *,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    report: IndexReport | None = None,
    page: int = 2048,
) -> int:
    """Give every pending chunk whose vectors are all in the shared cache those vectors, without
    the model: a re-clone, a second worktree or a rebuilt index needs no torch at all when the
    cache holds its text. What is left stays pending for ``index_vectors``. Returns the number
    of chunks filled."""
    report = report or IndexReport()
    reconcile_vectors(store, vectors, model_name, dim)
    total = store.counts()["pending"]
    filled = 0
    for rows in _pages_by_id(store.pending_after, page, cancel, report) if total else ():
        views = [v for r in rows for v in _views(r)]
        found = cache.get_many([key for _, key, _, _ in views])
        missing = {r.id for _, key, r, _ in views if key not in found}
        ready = [v for v in views if v[2].id not in missing]
        if ready:
            vectors.add(
                [v[0] for v in ready], [v[2].language or "" for v in ready], np.stack([found[v[1]] for v in ready])
            )
            ids = [r.id for r in rows if r.id not in missing]
            store.mark_embedded(ids)
            filled += len(ids)
        if progress:
            progress(Progress("embed", filled, total, "from the embedding cache"))
    report.cache_hits += filled
    if filled:
        vectors.optimize()
        if not report.cancelled:
            vectors.ensure_ann()
    return filled


class _Embedding:
    """One phase 2 run's state: the window of pending rows it reads ahead (sorted by length, so a
    batch the model sees has little padding), the rows handed to jobs not written yet, and what
    was done. ``next_job`` reads the next batch and looks it up in the cache; ``write`` embeds what
    the cache lacked (or takes what the pool embedded) and writes it."""

    def __init__(
        self,
        store: Store,
        vectors: VectorStore,
        embedder: Any,
        cache: EmbeddingCache | None,
        batch: int,
        limit: int | None,
        report: IndexReport,
        progress: ProgressFn | None,
    ) -> None:
        self.store, self.vectors, self.embedder, self.cache = store, vectors, embedder, cache
        self.batch, self.limit, self.report, self.progress = batch, limit, report, progress
        self.total = store.counts()["pending"]
        self.done = 0
        self.window: list[ChunkRow] = []
        self.taken = 0  # rows handed to jobs so far
        self.in_flight: set[int] = set()  # ids of rows in a job that is not written yet

    def next_job(self) -> _EmbedJob | None:
        if not self.window:
            # Read a window of several batches and sort it by length, so each batch the model sees
            # holds texts of similar length (little padding), while commits stay batch-sized.
            want = self.batch * 4 if self.limit is None else min(self.batch * 4, self.limit - self.taken)
            if want <= 0:
                return None
            fresh = [r for r in self.store.pending(want + len(self.in_flight)) if r.id not in self.in_flight][:want]
            self.window = sorted(fresh, key=lambda r: len(r.content) + len(r.scope))
            if not self.window:
                return None
        rows, self.window = self.window[: self.batch], self.window[self.batch :]
        self.taken += len(rows)
        views = [v for r in rows for v in _views(r)]  # (LanceDB id, embed key, row, doc view text)
        keys = [key for _, key, _, _ in views]
        found = self.cache.get_many(keys) if self.cache is not None else {}
        todo: dict[str, str] = {}
        docs = 0
        for _, key, r, doc in views:
            if key not in found and key not in todo:
                todo[key] = embed_text(r.path, r.scope, r.content) if doc is None else doc
                docs += doc is not None
        self.in_flight.update(r.id for r in rows)
        return _EmbedJob(
            rows, [v[0] for v in views], [r.language or "" for _, _, r, _ in views], keys, found, todo, docs
        )

    def write(self, job: _EmbedJob) -> None:
        rows, found, report = job.rows, job.found, self.report
        if job.todo:
            vecs = job.future.result() if job.future is not None else self.embedder.encode(list(job.todo.values()))
            fresh = dict(zip(job.todo.keys(), vecs, strict=False))
            if self.cache is not None:
                self.cache.put_many(list(fresh.items()))
            found.update(fresh)
        # Chunks count as before doc views (their own text embedded or found in the cache).
        report.cache_hits += len(rows) - (len(job.todo) - job.docs)
        report.embedded += len(job.todo) - job.docs
        report.doc_views += job.docs
        self.vectors.add(job.ids, job.languages, np.stack([found[k] for k in job.keys]))
        self.store.mark_embedded([r.id for r in rows])
        self.in_flight.difference_update(r.id for r in rows)
        self.done += len(rows)
        if self.progress:
            self.progress(Progress("embed", self.done, max(self.total, self.done), rows[-1].path))


def index_vectors(
    store: Store,
    vectors: VectorStore,
    embedder: Any,
    cache: EmbeddingCache | None,
    *,
    batch: int = 128,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    report: IndexReport | None = None,
    limit: int | None = None,
    overlap: bool = False,
) -> IndexReport:
    """Phase 2: embed every chunk that lacks a vector (at most ``limit``); resumable batch by batch.

    With ``overlap`` (a GPU, where a batch takes a fraction of a second) the next batch is being
    embedded in a second thread while this one is written, so the model never waits on SQLite or
    LanceDB. Without it (a CPU, where a batch takes seconds and writing is noise) each batch is
    written before the next starts, so Ctrl-C never waits on a batch nobody will keep.
    """
    report = report or IndexReport()
    t0 = time.perf_counter()
    reconcile_vectors(store, vectors, embedder.name, embedder.dim)
    run = _Embedding(store, vectors, embedder, cache, batch, limit, report, progress)
    if progress:
        progress(Progress("embed", 0, run.total))
    # Two workers: the next batch starts tokenising while this one is still on the model.
    pool = ThreadPoolExecutor(2, thread_name_prefix="codesight-embed") if overlap else None
    queued: _EmbedJob | None = None  # embedding in the pool while the loop writes the one before
    try:
        while True:
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                job = None
            else:
                job = run.next_job()
            if job is not None and pool is not None and job.todo:
                job.future = pool.submit(embedder.encode, list(job.todo.values()))
            if queued is not None:
                run.write(queued)
                queued = None
            if job is None:
                break
            if pool is None:
                run.write(job)  # on a CPU each batch is written before the next is read
            else:
                queued = job
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
    if run.done or vectors.dirty:
        vectors.optimize()
    if run.done and not report.cancelled:
        vectors.ensure_ann()  # large tables get an approximate index (see vectors.ANN_MIN_ROWS)
    report.vectors_pending = store.counts()["pending"]
    report.embed_seconds = time.perf_counter() - t0
    return report
