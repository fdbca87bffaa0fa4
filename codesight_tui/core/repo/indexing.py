"""One repository's index run, from the checks and repairs before it to the vectors after it:
what ``CodeSight.index``, ``watch`` and ``limit_vectors`` do. The phases themselves (walk, chunk,
embed) are ``core.index.indexer``'s; this decides which run, in what order, and what a failure costs."""

from __future__ import annotations

import errno
import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from codesight_tui.core.errors import CodeSightError, IndexBusyError, UsageError
from codesight_tui.core.index.embedding import drop_orphan_vectors, fill_from_cache, index_vectors
from codesight_tui.core.index.indexer import IndexReport, Progress, ProgressFn, index_lexical, scan_changes

# The index's meta key that says whether the full model's vectors were asked for on it ("1": by
# `index --full`, full_model = on or a GPU, and kept current from then on; "0": not asked, so the
# vectors the shared cache gives it are all it gets on a CPU).
FULL_ASKED = "full_asked"

if TYPE_CHECKING:
    from codesight_tui.core.index.cache import EmbeddingCache
    from codesight_tui.core.repo.context import RepoContext
    from codesight_tui.core.search.status import ChangedFiles
    from codesight_tui.core.store.store import Store
    from codesight_tui.core.store.watch import Batch, Watcher


def run(
    ctx: RepoContext,
    progress: ProgressFn | None = None,
    *,
    embed: bool = True,
    force: bool = False,
    cancel: threading.Event | None = None,
    wait: bool = False,
    paths: list[str] | None = None,
    static: bool | None = None,
) -> IndexReport:
    """Bring the index up to date (``CodeSight.index`` says how); a full disk is one clear
    ``CodeSightError``."""
    try:
        return _run(
            ctx,
            progress,
            embed=embed,
            force=force,
            cancel=cancel,
            wait=wait,
            paths=paths,
            static=embed if static is None else static,
        )
    except (sqlite3.OperationalError, OSError) as exc:
        full = isinstance(exc, OSError) and exc.errno == errno.ENOSPC or "full" in str(exc).lower()
        if not full:
            raise
        raise CodeSightError(
            f"no space left to write the index at {ctx.index_dir}: free some space and"
            " run it again (everything committed so far is kept and searchable)"
        ) from None


def _readable(path: Path) -> bool:
    """Whether an index run could open ``path`` (as the indexer does: no link followed)."""
    from codesight_tui.core.ingest.walker import open_checked

    fd, why = open_checked(str(path))
    if fd is not None:
        os.close(fd)
    return why != "unreadable"


def _repair(ctx: RepoContext, store: Store, force: bool, paths: list[str] | None) -> tuple[Store, bool]:
    """Before a run: damage a search met, or that a probe or the periodic integrity check finds,
    makes the run a rebuild (``force``); vectors that can't be read are rebuilt from the embedding
    cache. Returns the store to write (a new one after a wipe) and whether the run rebuilds."""
    check_vectors = False
    if ctx.storage.damaged_marker.exists() and not force:
        ctx.notices.note(
            f"index at {ctx.index_dir} was damaged (a search found a bad page); rebuilt it (cached vectors are reused)"
        )
        force = True
    elif not force and (found := store.probe()):
        ctx.notices.note(f"index at {ctx.index_dir} was damaged ({found}); rebuilt it (cached vectors are reused)")
        force = True
    elif not force and (paths is None or _integrity_due(ctx, store)):
        # Damage no query has touched yet (a bad page under rows nobody read) is found here:
        # on every run over the whole tree (0.9 ms/MB: 0.24 s for the 265 MB index of a
        # 10,000-file tree, benchmarks/bench_integrity.py), and every integrity_check_hours
        # for a watcher's batches, which come many a minute.
        check_vectors = _integrity_due(ctx, store)  # by the clock only: it imports LanceDB
        found = store.quick_check(deep=check_vectors)  # the full-text segments too, by the clock
        if found:
            ctx.notices.note(
                f"index at {ctx.index_dir} was damaged (integrity check: {found});"
                " rebuilt it (cached vectors are reused)"
            )
            force = True
        else:
            store.set_meta(checked_at=time.time())
    if force:
        ctx.storage.wipe()
        store = ctx.store
        ctx.storage.damaged_marker.unlink(missing_ok=True)
        store.set_meta(checked_at=time.time())
    elif not ctx.storage.vector_files_present() or (
        # a search met a failure, or the periodic check is due: vector damage no search
        # has read yet (a garbled manifest) is found here too, by reading every id back
        (ctx.storage.vectors_damaged_marker.exists() or check_vectors) and not ctx.storage.vectors_read_back()
    ):
        # Vectors that can't be read are rebuilt from the embedding cache: no model work.
        ctx.notices.note(f"vector index at {ctx.index_dir} was damaged or missing; rebuilt it from the embedding cache")
        ctx.vectors.drop()
        store.reset_embedded()
    ctx.storage.vectors_damaged_marker.unlink(missing_ok=True)
    return store, force


def full_pass(ctx: RepoContext) -> bool:
    """Whether index runs of ``ctx`` embed every chunk with the full model (``CodeSight.full_pass``
    says when)."""
    if ctx.models.full_pass():
        return True
    if not ctx.has_index():
        return False
    asked = ctx.store.get_meta(FULL_ASKED)
    if asked is not None:
        return asked == "1"
    counts = ctx.store.counts()  # an index from before FULL_ASKED: asked, where it is complete
    return counts["vectors"] > 0 and counts["pending"] == 0


def _lexical(
    ctx: RepoContext,
    store: Store,
    progress: ProgressFn | None,
    cancel: threading.Event | None,
    paths: list[str] | None,
) -> IndexReport:
    """The lexical phase of a run (``paths``: a watcher's, where the index is not new)."""
    from codesight_tui.core.ingest.chunker import Chunker
    from codesight_tui.core.ingest.tokens import TokenCounter

    report = IndexReport()
    info = ctx.model_info
    chunker = Chunker(TokenCounter(info.tokenizer_file), info.max_seq_length - 2)
    if store.get_meta("last_indexed") is None:
        paths = None  # a first or rebuilt index walks the whole tree
    store.retry_documents()
    settings = ctx.settings
    return index_lexical(
        ctx.root,
        store,
        chunker,
        max_file_size=settings.max_file_size,
        exclude=ctx.exclude(),
        progress=progress,
        cancel=cancel,
        report=report,
        processes=ctx.lexical_processes,
        paths=paths,
        max_document_size=settings.max_document_size,
        document_timeout=settings.document_timeout,
        secret_files=tuple(settings.secret_files),
        document_memory_mb=settings.document_memory_mb,
    )


def _full_pass(
    ctx: RepoContext,
    store: Store,
    progress: ProgressFn | None,
    cancel: threading.Event | None,
    report: IndexReport,
    static: bool,
    static_later: bool,
) -> bool:
    """The full model's vectors (a model that cannot load is a warning: the tiers below answer);
    whether the static tier is still to come after it (it goes first where the model is on a CPU)."""
    if progress:  # the lexical phase has committed: say so now, not once the model is up
        progress(Progress("embed", 0, report.vectors_pending, "loading the model"))
    try:
        embedder = ctx.models.embedder()
    except CodeSightError as exc:
        tiers = "BM25 and the static tier only" if static and ctx.models.static_error is None else "lexical search only"
        report.warnings.append(f"{exc}; {tiers}")
        return static_later
    if static_later and getattr(embedder, "device", "cpu") != "cuda":
        static_later = False  # the guess was wrong: the model runs on the CPU
        ctx.models.index_static(store, progress, cancel, report)
    cache = _embed(ctx, embedder, progress=progress, cancel=cancel, report=report)
    if getattr(embedder, "device", "cpu") != "cuda":
        ctx.models.record_full_rate(report.embedded, report.embed_seconds)
    report.warnings.extend(cache.notices)
    _bound_cache(ctx, cache)
    return static_later


def _tidy(ctx: RepoContext, store: Store, report: IndexReport) -> None:
    """After a run: the vector table's old versions gone, the file's free pages given back after
    big deletions, and the index's files narrowed to their owner."""
    if ctx.vectors.dirty:  # deletions (a file changed or removed) leave versions too
        ctx.vectors.optimize()
    if not report.cancelled and report.chunks_removed:
        try:
            store.maybe_vacuum()  # mostly free pages after big deletions: give them back
        except sqlite3.OperationalError:  # busy readers or no space: the next run tries again
            pass
    tighten(ctx)


def _run(
    ctx: RepoContext,
    progress: ProgressFn | None,
    *,
    embed: bool,
    force: bool,
    cancel: threading.Event | None,
    wait: bool,
    paths: list[str] | None,
    static: bool,
) -> IndexReport:
    t0 = time.perf_counter()
    store = ctx.store
    if store.readonly:
        raise UsageError(f"index at {ctx.index_dir} is read-only: cannot update it")
    ctx.storage.acquire_writer(wait)
    ctx.indexing.set()
    try:
        ctx.vectors.refresh()  # another process may have written since this one last looked
        tighten(ctx)
        store, force = _repair(ctx, store, force, paths)
        store.ensure_grams()  # exact search's trigrams (core.store.grams), kept with the chunks from now on
        report = _lexical(ctx, store, progress, cancel, None if force else paths)
        info = ctx.model_info
        report.vectors_pending = store.counts()["pending"]
        if embed:  # asked for here (--full, full_model = on, a GPU): kept current from now on
            store.set_meta(**{FULL_ASKED: "1"})
        elif store.get_meta(FULL_ASKED) is None:
            store.set_meta(**{FULL_ASKED: "0"})
        model_changed = store.get_meta("model") not in (None, info.vectors_name)
        full_work = embed and (report.vectors_pending or model_changed)
        # On a CPU the static tier goes first, before even the cache fill: semantic search in
        # seconds, not hours, and a surface that answers once the "embed" phase starts (MCP's
        # first search) answers with it. On a GPU the full model is done about as soon, so it
        # goes first and keeps its speed.
        gpu = static and ctx.models.gpu_likely()
        if static and not gpu and not report.cancelled:
            ctx.models.index_static(store, progress, cancel, report)
        cache_only = not embed and static and report.vectors_pending and not report.cancelled
        if ((full_work and not (ctx.models.loaded is not None)) or cache_only) and not report.cancelled:
            # What the shared cache holds needs no model: a re-clone or a rebuilt index may
            # need no torch at all, and a static-only run (--force --static-only included)
            # keeps the full model's vectors the cache has, embedding nothing.
            _fill_from_cache(ctx, store, progress, cancel, report)
            report.vectors_pending = store.counts()["pending"]
            full_work = embed and bool(report.vectors_pending) and not report.cancelled
        static_later = bool(gpu and full_work)
        if gpu and not static_later and not report.cancelled:
            ctx.models.index_static(store, progress, cancel, report)
        if full_work and not report.cancelled:
            static_later = _full_pass(ctx, store, progress, cancel, report, static, static_later)
        elif report.chunks_removed and ctx.vectors.directory.exists():
            # Nothing to embed, but vectors of removed chunks must go; no model needed.
            drop_orphan_vectors(store, ctx.vectors)
        if static_later and not report.cancelled:
            ctx.models.index_static(store, progress, cancel, report)
        _tidy(ctx, store, report)
        report.seconds = time.perf_counter() - t0
        report.warnings[:0] = ctx.notices.take()
        return report
    finally:
        ctx.indexing.clear()
        ctx.storage.release_writer()


def watch(
    ctx: RepoContext,
    on_batch: Callable[[Batch, IndexReport], None] | None = None,
    *,
    embed: bool = True,
    quiet: float = 0.3,
    catch_up: bool = True,
    poll: bool | None = None,
    static: bool | None = None,
) -> Watcher:
    """Keep the index current as files change (``CodeSight.watch`` says how): one ``run`` per
    batch of changes, whose embedding a newer change interrupts."""
    from codesight_tui.core.store.watch import RetryLater

    embedding = threading.Event()
    interrupt = threading.Event()

    def progress(ev: Progress) -> None:
        if ev.phase == "embed":
            embedding.set()

    def on_event() -> None:
        if embedding.is_set():
            interrupt.set()  # the lexical phase of the next batch goes first

    def handle(batch: Batch) -> None:
        embedding.clear()
        interrupt.clear()
        try:
            report = run(
                ctx, progress, embed=embed, cancel=interrupt, paths=None if batch.full else batch.paths, static=static
            )
        except IndexBusyError:
            raise RetryLater from None
        finally:
            embedding.clear()
        if on_batch is not None:
            on_batch(batch, report)

    started = watcher(ctx, handle, quiet=quiet, poll=poll, on_event=on_event).start(full=catch_up)
    ctx.watchers.add(started)  # its batches are indexed as they are handled: it knows what is not yet
    return started


def watcher(
    ctx: RepoContext,
    handler: Callable[[Batch], None],
    *,
    quiet: float = 0.3,
    poll: bool | None = None,
    scan: Callable[[], dict[str, list[str]]] | None = None,
    on_event: Callable[[], None] | None = None,
    poll_every: float = 2.0,
) -> Watcher:
    """A ``core.store.watch.Watcher`` of this repository (not started) that hands its batches to
    ``handler(batch)``, with this index's ignore rules. It polls (``scan``, by default
    ``changed_files``) where the tree has symlinked directories, which inotify watchers follow
    into loops or out of the repository, or where ``poll`` says so."""
    from codesight_tui.core.store.watch import Watcher

    if poll is None:
        try:
            poll = int(ctx.store.get_meta("symlink_dirs") or 0) > 0 if ctx.is_indexed() else False
        except Exception:  # noqa: BLE001 - an index that can't be read now: poll, which works on any tree
            poll = True
    return Watcher(
        ctx.root,
        handler,
        exclude=ctx.exclude(),
        secret_files=tuple(ctx.settings.secret_files),
        quiet=quiet,
        poll=poll,
        scan=scan or cast(Callable[[], dict[str, list[str]]], functools.partial(changed_files, ctx)),
        on_event=on_event,
        poll_every=poll_every,
    )


def tighten(ctx: RepoContext) -> None:
    """Owner-only modes on everything codesight keeps (``core.private``): this index, the data
    and cache directories, whatever an older version or a library created wider."""
    from codesight_tui.core.private import private_dir, tighten

    for d in (ctx.settings.data_dir, ctx.settings.cache_dir):
        d = Path(d).expanduser()
        try:
            if d.parent.name == ".codesight":
                private_dir(d.parent)
            private_dir(d)
        except OSError:
            pass
    tighten(ctx.index_dir)
    tighten(Path(ctx.settings.cache_dir).expanduser())


def _integrity_due(ctx: RepoContext, store: Store) -> bool:
    """Whether this run checks the file for damage: once every ``integrity_check_hours``."""
    try:
        last = float(store.get_meta("checked_at") or 0)
    except (ValueError, sqlite3.DatabaseError):
        return True
    return bool(time.time() - last >= ctx.settings.integrity_check_hours * 3600)


def _cached_dim(ctx: RepoContext, store: Store) -> int | None:
    """The full model's vector size without loading it: from the index, or from the one
    cache file of this model (None where neither tells)."""
    from codesight_tui.core.index.cache import cache_files, cache_path

    name = ctx.model_info.vectors_name
    dim = store.get_meta("dim") or ""
    if store.get_meta("model") == name and dim.isdigit():
        return int(dim)
    stem = cache_path(ctx.settings.cache_dir, name, 0).stem.rsplit("-", 1)[0]
    dims = {p.stem.rsplit("-", 1)[1] for p in cache_files(ctx.settings.cache_dir) if p.stem.rsplit("-", 1)[0] == stem}
    return int(dims.pop()) if len(dims) == 1 and next(iter(dims)).isdigit() else None


def _fill_from_cache(
    ctx: RepoContext, store: Store, progress: ProgressFn | None, cancel: threading.Event | None, report: IndexReport
) -> None:
    """Before the model loads: every pending chunk whose vectors the shared cache holds gets
    them (``embedding.fill_from_cache``)."""
    from codesight_tui.core.index.cache import EmbeddingCache, cache_path

    dim = _cached_dim(ctx, store)
    if dim is None or not cache_path(ctx.settings.cache_dir, ctx.model_info.vectors_name, dim).is_file():
        return
    cache = EmbeddingCache(ctx.settings.cache_dir.expanduser(), ctx.model_info.vectors_name, dim)
    fill_from_cache(
        store, ctx.vectors, cache, ctx.model_info.vectors_name, dim, progress=progress, cancel=cancel, report=report
    )
    report.warnings.extend(cache.notices)


def _embed(ctx: RepoContext, embedder: Any, **kwargs: Any) -> EmbeddingCache:
    """Embed pending chunks through the shared cache (on a GPU in big overlapped batches);
    returns the cache. ``kwargs`` go to ``index_vectors``."""
    from codesight_tui.core.index.cache import EmbeddingCache

    cache = EmbeddingCache(ctx.settings.cache_dir.expanduser(), embedder.name, embedder.dim)
    gpu = getattr(embedder, "device", "cpu") == "cuda"
    index_vectors(ctx.store, ctx.vectors, embedder, cache, batch=4096 if gpu else 128, overlap=gpu, **kwargs)
    return cache


def limit_vectors(ctx: RepoContext, fraction: float, progress: ProgressFn | None = None) -> int:
    """Rebuild the vectors so that only ``fraction`` (0 to 1) of the chunks have one, the most
    valuable first, in the order indexing embeds them: search as it is part-way through a first
    index (``codesight eval --coverage``). Cached vectors make it cheap; the next ``index``
    embeds the rest. Returns how many chunks have a vector."""
    store = ctx.store
    ctx.storage.acquire_writer(wait=True)
    try:
        total = store.counts()["chunks"]
        store.reset_embedded()
        ctx.vectors.drop()
        want = round(max(0.0, min(1.0, fraction)) * total)
        if want:
            _embed(ctx, ctx.models.embedder(), progress=progress, limit=want)
        return store.counts()["vectors"]
    finally:
        ctx.storage.release_writer()


def changed_files(ctx: RepoContext) -> ChangedFiles:
    """Files that differ on disk from the index: ``{"added", "modified", "deleted"}``."""
    if not ctx.has_index():
        return {"added": [], "modified": [], "deleted": []}
    known = ctx.store.file_states()
    _entries, changed, deleted = scan_changes(
        ctx.root,
        ctx.store,
        ctx.settings.max_file_size,
        ctx.exclude(),
        max_document_size=ctx.settings.max_document_size,
        secret_files=tuple(ctx.settings.secret_files),
    )
    # A file no index run can read (chmod 000) is not news: it was skipped as unreadable, and
    # counting it as added would say "changed" forever. Only the few changed ones are tried.
    changed = [e for e in changed if _readable(ctx.root / e.rel_path)]
    added = [e.rel_path for e in changed if e.rel_path not in known]
    modified = [e.rel_path for e in changed if e.rel_path in known]
    return {"added": added, "modified": modified, "deleted": deleted}


def _bound_cache(ctx: RepoContext, cache: EmbeddingCache) -> None:
    """Keep the shared cache under ``cache_max_mb``: drop the least recently used vectors (down
    to 90% of the cap) when a run leaves it larger."""
    cap = ctx.settings.cache_max_mb * 1024 * 1024
    try:
        if cache.stats()["bytes"] > cap:
            done = cache.prune(max_bytes=int(cap * 0.9))
            ctx.notices.note(
                f"embedding cache over {ctx.settings.cache_max_mb} MB: dropped"
                f" {done['removed']:,} least recently used vectors"
            )
    except Exception as exc:  # a cache that can't be pruned now is not worth failing an index run for  # noqa: BLE001
        ctx.notices.note(f"could not prune the embedding cache: {exc}")
