"""Incremental indexing in two phases.

1. Lexical: walk, compare mtime and size, chunk what changed, write SQLite + FTS5. BM25 search
   works as soon as this commits, in seconds even for large trees.
2. Static vectors (``core.index.static``): every chunk without one gets a static-model vector, about
   10,000 chunks a second on a CPU, so semantic search follows the lexical phase within seconds.
3. Vectors: embed chunks that have no vector yet, most valuable first (source before tests and
   docs, recent before old), through the shared content-addressed cache. Each batch commits on its
   own, so an interrupted run loses at most the batch in flight and the next run resumes.
"""

from __future__ import annotations

import gc
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.child import init_child, quiet_for_children
from codesight_tui.core.ingest.chunker import GAVE_UP, Chunker
from codesight_tui.core.ingest.extract import DOCUMENT_REASONS, DocumentReader, ExtractError, extract
from codesight_tui.core.ingest.paths import VALUE_ORDER, VENDOR, classify, git_head
from codesight_tui.core.ingest.symbols import FileSymbols, extract_rows
from codesight_tui.core.ingest.walker import (
    IGNORE_FILES,
    MAX_DOCUMENT_SIZE,
    FileEntry,
    IgnoreMatcher,
    WalkStats,
    entry_for,
    walk,
)
from codesight_tui.core.languages import is_document
from codesight_tui.core.redact import SECRET_FILES, redact
from codesight_tui.core.store.store import chunk_fields
from codesight_tui.core.translations import later, preferred_language

if TYPE_CHECKING:
    from codesight_tui.core.store.store import ChunkFields, Store

# Files handled per lexical transaction: big enough to amortise commits, small enough that
# Ctrl-C loses little and readers see progress.
LEXICAL_BATCH_FILES = 200
LEXICAL_BATCH_BYTES = 4_000_000


@dataclass
class Progress:
    """A progress event: ``phase`` is ``scan``, ``lexical``, ``distill``, ``static`` or ``embed``."""

    phase: str
    done: int
    total: int
    message: str = ""
    paths: tuple[str, ...] = ()  # scan phase: files that differ from the index (changed or deleted)


ProgressFn = Callable[[Progress], None]


@dataclass
class IndexReport:
    """What one indexing run did."""

    files: int = 0
    chunks: int = 0
    files_changed: int = 0
    files_deleted: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    embedded: int = 0
    cache_hits: int = 0
    doc_views: int = 0  # doc views embedded (not from the cache), beside the chunks' own texts
    skipped: Counter[str] = field(default_factory=Counter)
    lexical_seconds: float = 0.0
    embed_seconds: float = 0.0
    static_embedded: int = 0  # chunks given a static vector
    static_seconds: float = 0.0
    distill_seconds: float = 0.0  # distilling the static model (once per machine)
    seconds: float = 0.0
    cancelled: bool = False
    vectors_pending: int = 0
    full_scan: bool = True  # the whole tree was walked (not only the paths a watcher named)
    secrets_masked: int = 0  # keys and tokens masked in the text indexed (core.redact)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["skipped"] = dict(self.skipped)
        return d


def _priority(rel_path: str, mtime_ns: int, language: str) -> int:
    """Lower embeds first: the path's kind (source, test, docs, vendored), then newest first."""
    return VALUE_ORDER[classify(rel_path, language)] * 10**11 + (10**11 - min(mtime_ns // 10**9, 10**11 - 1))


def file_batches(entries: list[FileEntry]) -> Iterator[list[FileEntry]]:
    batch: list[FileEntry] = []
    size = 0
    for e in entries:
        batch.append(e)
        size += e.size
        if len(batch) >= LEXICAL_BATCH_FILES or size >= LEXICAL_BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


Prepared = tuple[
    list[tuple[FileEntry, str, int]], list[tuple[FileEntry, str]], list[list["ChunkFields"]], list["FileSymbols | None"]
]


def prepare_batch(chunker: Chunker, batch: list[FileEntry], max_bytes: int | None = None) -> Prepared:
    """Read and chunk one batch: ``([(entry, language, secrets masked)], [(entry, why unreadable)],
    [rows], [symbols])``, the rows of each file being its chunks' ``store.chunk_fields`` and its
    symbols its definitions and references (``ingest.symbols``, from the same parse; None for a
    file without a grammar). Secrets in the text (``core.redact``) are masked before anything is
    chunked, so no index row ever holds one."""
    items: list[tuple[FileEntry, str, int]] = []
    texts: list[tuple[str, str, str]] = []
    unreadable: list[tuple[FileEntry, str]] = []
    for e in batch:
        try:
            ex = extract(e.abs_path, e.rel_path, max_bytes=max_bytes, expect=e.seen)
        except ExtractError as err:
            unreadable.append((e, err.reason))
            continue
        text, masked = redact(ex.text)
        items.append((e, ex.language, masked))
        texts.append((e.rel_path, ex.language, text))
    trees = [chunker.parse(lang, text) for _, lang, text in texts]
    chunked = chunker.chunk_many(texts, trees)
    # Vendored, generated and minified files get no symbols: their names are someone else's code, and
    # a minified bundle's would be noise in every `refs` (and a sixth of the extraction on Django).
    found: list[FileSymbols | None] = [
        (
            ([], "", b"", b"", b"", b"", "no symbols: its parse took too long (chunked by lines)")
            if tree is GAVE_UP
            else extract_rows(lang, text, tree)
            if tree is not None and classify(path, lang) != VENDOR
            else None
        )
        for (path, lang, text), tree in zip(texts, trees, strict=True)
    ]
    return (
        items,
        unreadable,
        [chunk_fields(e.rel_path, chunks) for (e, _, _), chunks in zip(items, chunked, strict=False)],
        found,
    )


_WORKER_CHUNKER: Chunker | None = None


def _init_worker(tokenizer_file: Path | None, max_tokens: int, quiet: bool = False, parent: int | None = None) -> None:
    global _WORKER_CHUNKER
    init_child(quiet, parent)
    from codesight_tui.core.ingest.tokens import TokenCounter

    _WORKER_CHUNKER = Chunker(TokenCounter(tokenizer_file), max_tokens)
    # Chunking allocates millions of short-lived tuples and lists and makes no reference cycles
    # worth chasing: move what the imports made out of the collector's sight and collect less
    # often (about 4% of the workers' CPU, benchmarks/results-lexical.txt).
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


def _prepare_in_worker(batch: list[FileEntry], max_bytes: int | None = None) -> Prepared:
    assert _WORKER_CHUNKER is not None, "not a chunking worker"
    return prepare_batch(_WORKER_CHUNKER, batch, max_bytes)


def cpu_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _worker_count(n_batches: int, processes: bool) -> int:
    """Worker processes for the lexical phase: none for small change sets (starting them costs
    about a second), nor on one core, nor when the caller asked for threads only."""
    cores = cpu_cores()
    if not processes or cores < 2 or n_batches < 4:
        return 0
    return min(cores, 4)


class _Workers:
    """Where batches are read and chunked: worker processes when there is a lot to do and more
    than one core (tree-sitter and the chunker's Python logic hold the GIL), else one thread
    (SQLite's FTS5 inserts, tree-sitter parsing and batch tokenisation release the GIL, so even
    that overlaps with the writer)."""

    def __init__(self, chunker: Chunker, max_bytes: int | None = None) -> None:
        self.chunker = chunker
        self.max_bytes = max_bytes
        self.pool: Executor | None = None
        self.ahead = 1
        # What a batch is given to, in the pool: this process's chunker, or a worker's.
        self._task: Callable[[list[FileEntry], int | None], Prepared] = lambda batch, max_bytes: prepare_batch(
            chunker, batch, max_bytes
        )

    def start_processes(self, n: int) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        quiet = quiet_for_children()
        pool = ProcessPoolExecutor(
            max_workers=n,
            mp_context=mp.get_context("spawn"),
            initializer=_init_worker,
            initargs=(self.chunker.counter.tokenizer_file, self.chunker.max_tokens, quiet, os.getpid()),
        )
        self.pool = pool
        self.ahead = n + 1
        self._task = _prepare_in_worker
        for _ in range(n):  # the pool starts a process per task it cannot hand to an idle one
            pool.submit(os.getpid)

    def submit(self, batch: list[FileEntry]) -> Future[Prepared]:
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="codesight-chunk")
        return self.pool.submit(self._task, batch, self.max_bytes)

    def shutdown(self, wait: bool) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=wait, cancel_futures=True)


# A first index of a tree with at least this many files starts its worker processes while the
# walk goes on, so their start-up (imports, the tokenizer) overlaps the walk instead of following it.
EARLY_WORKERS_FILES = LEXICAL_BATCH_FILES * 8


Scan = tuple[list[FileEntry], list[FileEntry], list[str]]


def scan_changes(
    root: Path,
    store: Store,
    max_file_size: int,
    exclude: list[str],
    stats: WalkStats | None = None,
    on_big_first_index: Callable[[], None] | None = None,
    max_document_size: int = MAX_DOCUMENT_SIZE,
    secret_files: tuple[str, ...] = SECRET_FILES,
) -> Scan:
    """Walk ``root`` and compare with the index: ``(entries, changed, deleted_paths)``.

    ``on_big_first_index`` is called once, mid-walk, if the index is empty and the walk has found
    ``EARLY_WORKERS_FILES`` files."""
    known = store.file_states()
    entries = []
    for e in walk(
        root,
        max_file_size=max_file_size,
        exclude=exclude,
        stats=stats,
        max_document_size=max_document_size,
        secret_files=secret_files,
    ):
        entries.append(e)
        if len(entries) == EARLY_WORKERS_FILES and not known and on_big_first_index is not None:
            on_big_first_index()
    changed = [e for e in entries if known.get(e.rel_path) != (e.mtime_ns, e.size)]
    seen = {e.rel_path for e in entries}
    deleted = [p for p in known if p not in seen]
    return entries, changed, deleted


def scan_paths(
    root: Path,
    store: Store,
    paths: list[str],
    max_file_size: int,
    exclude: list[str],
    stats: WalkStats | None = None,
    max_document_size: int = MAX_DOCUMENT_SIZE,
    secret_files: tuple[str, ...] = SECRET_FILES,
) -> Scan | None:
    """``scan_changes`` for the paths a file watcher named, without walking the tree:
    ``(entries, changed, deleted_paths)``, or None where only a full walk can tell (a directory
    appeared, or an ignore file changed)."""
    root = Path(root)
    known = store.file_states()
    ignored = IgnoreMatcher(root, exclude, secret_files)
    entries: list[FileEntry] = []
    deleted: list[str] = []
    for rel in sorted(set(paths)):
        name = rel.rsplit("/", 1)[-1]
        if name in IGNORE_FILES or rel == ".git/info/exclude":
            return None
        e = entry_for(
            root, rel, max_file_size=max_file_size, stats=stats, ignored=ignored, max_document_size=max_document_size
        )
        if e is not None:
            entries.append(e)
            continue
        if (root / rel).is_dir() and not (root / rel).is_symlink():
            return None  # a directory created or moved in: its files are only found by walking it
        # Gone, or no longer indexable: what the index holds at this path, or under it (a
        # directory deleted or moved away), goes.
        prefix = rel + "/"
        deleted += [p for p in known if p == rel or p.startswith(prefix)]
    changed = [e for e in entries if known.get(e.rel_path) != (e.mtime_ns, e.size)]
    return entries, changed, sorted(set(deleted))


def index_lexical(
    root: Path,
    store: Store,
    chunker: Chunker,
    *,
    max_file_size: int,
    exclude: list[str],
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    report: IndexReport | None = None,
    processes: bool = True,
    paths: list[str] | None = None,
    max_document_size: int = MAX_DOCUMENT_SIZE,
    document_timeout: float = 60.0,
    secret_files: tuple[str, ...] = SECRET_FILES,
    document_memory_mb: int = 0,
) -> IndexReport:
    """Phase 1: bring files, chunks and the FTS5 table in line with the tree; ``paths`` (from a
    watcher): those files only, where that tells what changed. Documents (PDF, DOCX, PPTX) come
    last, one at a time in a child process, each within ``document_timeout`` seconds."""
    report = report or IndexReport()
    t0 = time.perf_counter()
    stats = WalkStats()
    workers = _Workers(chunker, max_file_size)
    remembered: Counter[str] = Counter()  # skips kept per file in the table, or not skips for long
    try:
        early = _worker_count(EARLY_WORKERS_FILES // LEXICAL_BATCH_FILES, processes)
        scanned = (
            scan_paths(
                root,
                store,
                paths,
                max_file_size,
                exclude,
                max_document_size=max_document_size,
                secret_files=secret_files,
            )
            if paths is not None
            else None
        )
        partial_scan = scanned is not None
        entries, changed, deleted = scanned or scan_changes(
            root,
            store,
            max_file_size,
            exclude,
            stats,
            (lambda: workers.start_processes(early)) if early else None,
            max_document_size=max_document_size,
            secret_files=secret_files,
        )
        _drop_deleted(store, entries, changed, deleted, report, progress)
        report.files_deleted = len(deleted)

        documents = [e for e in changed if is_document(e.rel_path)]
        batches = _batches(changed, workers, processes)
        done = _write_batches(workers, batches, store, stats, remembered, report, cancel, progress, len(changed))
        if documents and not report.cancelled:
            _index_documents(
                store,
                chunker,
                documents,
                stats,
                remembered,
                report,
                DocumentReader(document_timeout, document_memory_mb, max_document_size),
                cancel,
                lambda path, n: progress and progress(Progress("lexical", done + n, len(changed), path)),
            )
    finally:
        workers.shutdown(wait=not report.cancelled)
    if not report.cancelled:
        _note_run(root, store, stats, remembered, partial_scan)
    report.full_scan = not partial_scan
    report.skipped.update(stats.skipped)
    counts = store.counts()
    report.files, report.chunks = counts["files"], counts["chunks"]
    report.lexical_seconds = time.perf_counter() - t0
    return report


def _batches(changed: list[FileEntry], workers: _Workers, processes: bool) -> list[list[FileEntry]]:
    """The changed files that are not documents in batches, translations into other languages
    after the rest; the worker processes started for them where there are enough."""
    preferred = preferred_language()
    batches = list(
        file_batches(
            sorted((e for e in changed if not is_document(e.rel_path)), key=lambda e: later(e.rel_path, preferred))
        )
    )
    if workers.pool is None:
        n_proc = _worker_count(len(batches), processes)
        if n_proc:
            workers.start_processes(n_proc)
    return batches


def _write_batches(
    workers: _Workers,
    batches: list[list[FileEntry]],
    store: Store,
    stats: WalkStats,
    remembered: Counter[str],
    report: IndexReport,
    cancel: threading.Event | None,
    progress: ProgressFn | None,
    total: int,
) -> int:
    """Every batch prepared by the workers (a few ahead of the writer) and written in turn, until
    the end or a cancel; the files written."""
    done = 0
    ahead = workers.ahead
    queue = [workers.submit(b) for b in batches[:ahead]]
    try:
        for i, batch in enumerate(batches):
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                break
            items, unreadable, rows, found = queue.pop(0).result()
            if i + ahead < len(batches):
                queue.append(workers.submit(batches[i + ahead]))
            _write_batch(store, items, unreadable, rows, found, stats, remembered, report)
            done += len(batch)
            if progress:
                progress(Progress("lexical", done, total, batch[-1].rel_path))
    finally:  # on cancel or Ctrl-C, don't wait for batches nobody will write
        for f in queue:
            f.cancel()
    return done


def _drop_deleted(
    store: Store,
    entries: list[FileEntry],
    changed: list[FileEntry],
    deleted: list[str],
    report: IndexReport,
    progress: ProgressFn | None,
) -> None:
    """What the scan found, said; the files gone from the tree taken out of the index."""
    if progress:
        summary = f"{len(changed)} changed, {len(deleted)} removed"
        progress(
            Progress("scan", len(entries), len(entries), summary, tuple(e.rel_path for e in changed) + tuple(deleted))
        )
    if deleted:
        with store.transaction():
            for p in deleted:
                report.chunks_removed += store.delete_file(p)


def _write_batch(
    store: Store,
    items: list[tuple[FileEntry, str, int]],
    unreadable: list[tuple[FileEntry, str]],
    rows: list[list[ChunkFields]],
    found: list[FileSymbols | None],
    stats: WalkStats,
    remembered: Counter[str],
    report: IndexReport,
) -> None:
    """One prepared batch written in one transaction: its files' chunks and symbols, and what
    could not be read (a binary file remembered, an unreadable one dropped until it reads)."""
    with store.transaction():
        for e, why in unreadable:
            stats.skip(why)
            if why in ("binary", "changed"):  # kept per file in the table, or read next run
                remembered[why] += 1
            if why == "changed":  # written or swapped since the walk: what was indexed stays
                continue  # until the next run reads what is there then
            if why == "binary":  # remembered, so it is not read again until it changes
                report.chunks_removed += store.write_skipped(e.rel_path, e.mtime_ns, e.size, why)
            else:  # unreadable now: drop what it had, try again next run
                report.chunks_removed += store.delete_file(e.rel_path)
        added, removed = store.write_files(
            [
                (
                    e.rel_path,
                    e.mtime_ns,
                    e.size,
                    lang,
                    file_rows,
                    _priority(e.rel_path, e.mtime_ns, lang),
                    masked,
                )
                for (e, lang, masked), file_rows in zip(items, rows, strict=False)
            ],
            found,
        )
        report.chunks_added += added
        report.chunks_removed += removed
        report.files_changed += len(items)
        report.secrets_masked += sum(masked for _, _, masked in items)
        report.warnings += [
            f"{e.rel_path}: {sym[6]}"
            for (e, _, _), sym in zip(items, found, strict=False)
            if sym is not None and sym[6]
        ]


def _note_run(root: Path, store: Store, stats: WalkStats, remembered: Counter[str], partial: bool) -> None:
    """A finished run in the index's meta: when, and (after a whole-tree walk) the head, the root,
    and the skips this run met, for `status`, but those remembered per file in the table (binary by
    content, unreadable documents) and files that changed under the run (read next time)."""
    if partial:
        store.set_meta(last_indexed=time.time())
        return
    walk_skips = {k: v for k, v in (Counter(stats.skipped) - remembered).items() if v > 0}
    store.set_meta(
        last_indexed=time.time(),
        git_head=git_head(root) or "",
        root=str(root),
        symlink_dirs=stats.symlink_dirs,
        skipped=json.dumps(walk_skips, sort_keys=True),
    )


def _index_documents(
    store: Store,
    chunker: Chunker,
    documents: list[FileEntry],
    stats: WalkStats,
    remembered: Counter[str],
    report: IndexReport,
    reader: DocumentReader,
    cancel: threading.Event | None,
    progress: Callable[[str, int], object],
) -> None:
    """Extract, chunk and write documents one at a time: each is its own transaction, so a
    300-page PDF is searchable as soon as it is read, and a file that can't be read (encrypted,
    corrupt, image-only, over the time limit) is remembered with its reason until it changes."""
    with reader:
        for n, e in enumerate(documents, start=1):
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                return
            try:
                ex = reader.read(e.abs_path, e.rel_path, cancel, expect=e.seen)
            except ExtractError as err:
                if err.reason == "cancelled":
                    report.cancelled = True
                    return
                stats.skip(err.reason)
                if err.reason == "changed" or err.reason in DOCUMENT_REASONS:
                    remembered[err.reason] += 1
                if err.reason == "changed":  # written or swapped since the walk: the next run reads it
                    continue
                with store.transaction():
                    if err.reason in DOCUMENT_REASONS:  # remembered until the file changes
                        report.chunks_removed += store.write_skipped(e.rel_path, e.mtime_ns, e.size, err.reason)
                    else:  # a link or a FIFO in its place, unreadable: dropped, looked at again next run
                        report.chunks_removed += store.delete_file(e.rel_path)
                continue
            text, masked = redact(ex.text)
            rows = chunk_fields(e.rel_path, chunker.chunk(e.rel_path, ex.language, text, blocks=ex.blocks))
            with store.transaction():
                priority = _priority(e.rel_path, e.mtime_ns, ex.language)
                added, removed = store.write_files(
                    [(e.rel_path, e.mtime_ns, e.size, ex.language, rows, priority, masked)]
                )
                store.put_document(e.rel_path, text, ex.locators)
            report.chunks_added += added
            report.chunks_removed += removed
            report.files_changed += 1
            report.secrets_masked += masked
            progress(e.rel_path, n)
