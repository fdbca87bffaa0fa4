"""``CodeSight``: the one object every surface (CLI, TUI, MCP, Python) drives.

    from codesight_tui import CodeSight
    cs = CodeSight("path/to/repo")
    cs.index(progress=print)
    for hit in cs.search("where do we retry failed uploads"):
        print(hit.path, hit.start_line, hit.scope)
"""

from __future__ import annotations

import errno
import functools
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from codesight_tui.core.errors import CodeSightError, IndexBusyError, VectorStoreError
from codesight_tui.core.fusion import rrf_fuse
from codesight_tui.core.indexer import (
    IndexReport,
    Progress,
    ProgressFn,
    drop_orphan_vectors,
    fill_from_cache,
    index_lexical,
    index_vectors,
    scan_changes,
)
from codesight_tui.core.languages import is_document
from codesight_tui.core.models import Models, nvidia_gpu
from codesight_tui.core.modes import MODES
from codesight_tui.core.paths import index_dir_for
from codesight_tui.core.related import RelatedSource
from codesight_tui.core.searcher import SearchResponse, SearchResult, search
from codesight_tui.core.status import ChangedFiles, DocumentsStatus, IndexStatus, SecretsStatus
from codesight_tui.core.storage import IndexStorage, mark
from codesight_tui.core.store import Store
from codesight_tui.core.text import LONE_SURROGATE
from codesight_tui.core.tokens import ModelInfo, resolve_model
from codesight_tui.core.vectors import VectorStore

if TYPE_CHECKING:
    from typing_extensions import Self

    from codesight_tui.core.ask import Answer, AskStream
    from codesight_tui.core.cache import EmbeddingCache
    from codesight_tui.core.config import Settings
    from codesight_tui.core.fleet import Fleet
    from codesight_tui.core.static import StaticEmbedder, StaticIndex
    from codesight_tui.core.store import ChunkRow
    from codesight_tui.core.tokens import TokenCounter
    from codesight_tui.core.watch import Batch, Watcher

# Longer queries are cut here: a pasted file or a hostile 100 KB string gets an answer in
# milliseconds instead of minutes of identifier splitting, and no question is that long.
MAX_QUERY_CHARS = 2000


def _readable(path: Path) -> bool:
    """Whether an index run could open ``path`` (as the indexer does: no link followed)."""
    from codesight_tui.core.walker import open_checked

    fd, why = open_checked(str(path))
    if fd is not None:
        os.close(fd)
    return why != "unreadable"


def _clean(text: str | None) -> str | None:
    return LONE_SURROGATE.sub("\ufffd", text) if text else text


def _check_glob(glob: str) -> None:
    """A path filter that is no gitignore-style pattern is a usage error, said in one line."""
    from codesight_tui.core.store import path_matches

    try:
        path_matches("probe", glob)
    except Exception as exc:
        raise CodeSightError(f"invalid path filter {glob!r}: {exc}", exit_code=2) from None
    # pathspec reads an unclosed "[" as a literal, so "[[[" matched nothing and looked like an
    # empty answer: a bracket is a character class, and one with no "]" is a mistake.
    plain = re.sub(r"\\.", "", glob)
    depth = 0
    for ch in plain:
        if ch == "[" and depth == 0:
            depth = 1
        elif ch == "]" and depth:
            depth = 0
    if depth:
        raise CodeSightError(f"invalid path filter {glob!r}: a '[' with no ']' (escape it as \\[ to match it)",
                             exit_code=2)


def _settings(settings: Settings | None, overrides: dict[str, Any]) -> Settings:
    from codesight_tui.core.config import load_settings

    if settings is None:
        return load_settings(**overrides)
    return settings.model_copy(update={k: v for k, v in overrides.items() if v is not None}) if overrides else settings


def _constant(value: Any, *_args: object) -> Any:
    """``value`` whatever it is asked: a stored vector standing in for a query embedding."""
    return value


class CodeSight:
    """A repository's index: build it, search it, report on it.

    ``embedder`` may be injected (any object with ``name``, ``dim``, ``encode`` and
    ``encode_query``); otherwise the configured sentence-transformers model loads on first need.
    """

    def __init__(self, path: str | Path = ".", settings: Settings | None = None, embedder: Any = None, *,
                 model_process: bool = False, lexical_processes: bool = False, resident_bm25: bool = False,
                 **overrides: Any) -> None:
        root = Path(path).expanduser()
        if not root.exists():
            raise CodeSightError(f"no such directory: {path}", exit_code=2)
        if not root.is_dir():
            raise CodeSightError(f"not a directory: {path}", exit_code=2)
        self.root = root.resolve()
        self.settings = _settings(settings, overrides)
        self.index_dir = index_dir_for(self.root, self.settings.data_dir)
        # What happened to the index (rebuilt, read-only, ...), numbered: searches and index runs
        # tell each one once, and status tells it once on its own (take_notices).
        self._events: list[tuple[int, str]] = []
        self._events_told: dict[str, int] = {}
        self._events_count = 0
        self._events_lock = threading.Lock()
        self._indexing = threading.Event()  # this process's writer is running
        self.storage = IndexStorage(self.root, self.index_dir, self._note)
        # Chunk big change sets in worker processes (multiprocessing "spawn"). Off by default: spawn
        # re-imports the caller's main module, which a script without a __main__ guard can't
        # survive. The CLI, the TUI, MCP and the service turn it on (core.workspace.EngineOptions).
        self.lexical_processes = lexical_processes
        # BM25 answered from memory (core.lexical) once a copy of the FTS index is read: for a
        # process that answers many queries (MCP, the warm service).
        self.resident_bm25 = resident_bm25
        self._search_cache: EmbeddingCache | None = None  # opened for lookups (see _read_cache)
        self._search_cache_tried = False
        self._token_counter: TokenCounter | None = None  # made on first need
        if embedder is not None:
            self.model_info = ModelInfo(embedder.name, embedder.name, None, getattr(embedder, "max_seq_length", 256))
        else:
            from codesight_tui.core.onnx_model import for_backend

            self.model_info = for_backend(resolve_model(self.settings.embedding_model), self.settings.embedding_backend,
                                          self.settings.device, nvidia_gpu(), self.settings.cache_dir)
        self.models = Models(self.settings, self.model_info, embedder, in_child=model_process, note=self._note)

    def _exclude(self) -> list[str]:
        """The walk's extra patterns: the configured ones, and codesight's own data and cache
        directories wherever they lie inside the root (indexing a home directory): an index must
        never index itself, nor a watcher wake on its own writes."""
        out = list(self.settings.exclude)
        for own in (self.settings.data_dir, self.settings.cache_dir):
            try:
                rel = Path(own).expanduser().resolve().relative_to(self.root)
            except (ValueError, OSError):
                continue
            if rel.parts:
                out.append("/" + rel.as_posix().replace("[", "\\[") + "/")
        return out

    # --- storage (core.storage) -------------------------------------------------------------
    @property
    def db_path(self) -> Path:
        return self.storage.db_path

    def has_index(self) -> bool:
        """Whether an index database exists (it may be partial: search whatever it holds)."""
        return self.storage.exists()

    def is_indexed(self) -> bool:
        """Whether a lexical pass has completed at least once (a rebuilt index has not)."""
        return self.has_index() and self.store.get_meta("last_indexed") is not None

    @property
    def store(self) -> Store:
        return self.storage.store

    @property
    def _vectors(self) -> VectorStore:
        return self.storage.vectors

    # --- models (core.models) ---------------------------------------------------------------
    def embedder(self) -> Any:
        """The embedding model, loaded on first need and shared by every ``CodeSight`` of this
        process that uses the same model (thread-safe). Raises ``CodeSightError`` if it can't load."""
        return self.models.embedder()

    @property
    def embedder_loaded(self) -> bool:
        return self.models.loaded is not None

    @property
    def model_error(self) -> str | None:
        """Why the model could not load, once it has been tried and failed; else None."""
        return self.models.error

    @property
    def _embedder(self) -> Any:
        return self.models.loaded

    @property
    def _embedder_error(self) -> str | None:
        return self.models.error

    @_embedder_error.setter
    def _embedder_error(self, value: str | None) -> None:
        self.models.error = value

    @property
    def model_process(self) -> bool:
        """Whether the full model runs in a child process (the interactive apps)."""
        return self.models.in_child

    def static_path(self) -> Path | None:
        """The static model's folder, or None when the tier is off (``Models.static_path``)."""
        return self.models.static_path()

    def static_model(self, *, create: bool = False, progress: ProgressFn | None = None,
                     cancel: threading.Event | None = None, report: IndexReport | None = None,
                     ) -> StaticEmbedder | None:
        """The static model, or None where the tier is off or its model is not there; with
        ``create`` distilled first where it is missing (``Models.static_model``)."""
        return self.models.static_model(create=create, progress=progress, cancel=cancel, report=report)

    def _static_index(self) -> tuple[StaticIndex, float] | None:
        return self.models.static_index(self.store)

    def static_ready(self) -> bool:
        """Whether hybrid search can use the static tier now (its vectors exist, from the model
        configured): what lets a fresh process answer without the full model."""
        return self.has_index() and self._static_index() is not None

    # --- indexing -------------------------------------------------------------------------
    def index(self, progress: ProgressFn | None = None, *, embed: bool = True, force: bool = False,
              cancel: threading.Event | None = None, wait: bool = False,
              paths: list[str] | None = None, static: bool | None = None) -> IndexReport:
        """Bring the index up to date: lexical phase first (BM25 works after it), then vectors.

        ``embed=False`` stops after the lexical phase. ``force`` rebuilds from scratch (the shared
        embedding cache still spares re-embedding). ``cancel`` stops between batches; everything
        committed so far stays valid and the next run resumes. Raises ``IndexBusyError`` if another
        process is indexing and ``wait`` is false. A full disk is one clear ``CodeSightError``.
        ``paths`` (relative, from a file watcher) limits the lexical phase to those files where
        that is enough to tell what changed; the tree is walked otherwise. ``static`` (default: as
        ``embed``) gives every chunk a static-tier vector right after the lexical phase, before
        the full model starts (``core.static``; the first run on a machine distils its model).
        """
        try:
            return self._index(progress, embed=embed, force=force, cancel=cancel, wait=wait, paths=paths,
                               static=embed if static is None else static)
        except (sqlite3.OperationalError, OSError) as exc:
            full = isinstance(exc, OSError) and exc.errno == errno.ENOSPC or "full" in str(exc).lower()
            if not full:
                raise
            raise CodeSightError(f"no space left to write the index at {self.index_dir}: free some space and"
                                 " run it again (everything committed so far is kept and searchable)") from None

    def _index(self, progress: ProgressFn | None, *, embed: bool, force: bool, cancel: threading.Event | None,
               wait: bool, paths: list[str] | None, static: bool) -> IndexReport:
        from codesight_tui.core.chunker import Chunker
        from codesight_tui.core.tokens import TokenCounter

        t0 = time.perf_counter()
        store = self.store
        if store.readonly:
            raise CodeSightError(f"index at {self.index_dir} is read-only: cannot update it", exit_code=2)
        self.storage.acquire_writer(wait)
        self._indexing.set()
        try:
            self._vectors.refresh()  # another process may have written since this one last looked
            self._tighten()
            check_vectors = False
            if self.storage.damaged_marker.exists() and not force:
                self._note(f"index at {self.index_dir} was damaged (a search found a bad page);"
                                    " rebuilt it (cached vectors are reused)")
                force = True
            elif not force and (found := store.probe()):
                self._note(f"index at {self.index_dir} was damaged ({found}); rebuilt it (cached vectors are reused)")
                force = True
            elif not force and (paths is None or self._integrity_due(store)):
                # Damage no query has touched yet (a bad page under rows nobody read) is found here:
                # on every run over the whole tree (0.9 ms/MB: 0.24 s for the 265 MB index of a
                # 10,000-file tree, benchmarks/bench_integrity.py), and every integrity_check_hours
                # for a watcher's batches, which come many a minute.
                check_vectors = self._integrity_due(store)  # by the clock only: it imports LanceDB
                found = store.quick_check()
                if found:
                    self._note(f"index at {self.index_dir} was damaged (integrity check: {found});"
                                        " rebuilt it (cached vectors are reused)")
                    force = True
                else:
                    store.set_meta(checked_at=time.time())
            if force:
                self.storage.wipe()
                store = self.store
                self.storage.damaged_marker.unlink(missing_ok=True)
                store.set_meta(checked_at=time.time())
            elif not self.storage.vector_files_present() or (
                    # a search met a failure, or the periodic check is due: vector damage no search
                    # has read yet (a garbled manifest) is found here too, by reading every id back
                    (self.storage.vectors_damaged_marker.exists() or check_vectors)
                    and not self.storage.vectors_read_back()):
                # Vectors that can't be read are rebuilt from the embedding cache: no model work.
                self._note(f"vector index at {self.index_dir} was damaged or missing; rebuilt it"
                                    " from the embedding cache")
                self._vectors.drop()
                store.reset_embedded()
            self.storage.vectors_damaged_marker.unlink(missing_ok=True)
            report = IndexReport()
            info = self.model_info
            chunker = Chunker(TokenCounter(info.tokenizer_file), info.max_seq_length - 2)
            if force or store.get_meta("last_indexed") is None:
                paths = None  # a first or rebuilt index walks the whole tree
            store.retry_documents()
            index_lexical(self.root, store, chunker, max_file_size=self.settings.max_file_size,
                          exclude=self._exclude(), progress=progress, cancel=cancel, report=report,
                          processes=self.lexical_processes, paths=paths,
                          max_document_size=self.settings.max_document_size,
                          document_timeout=self.settings.document_timeout,
                          secret_files=tuple(self.settings.secret_files),
                          document_memory_mb=self.settings.document_memory_mb)
            report.vectors_pending = store.counts()["pending"]
            model_changed = store.get_meta("model") not in (None, info.vectors_name)
            full_work = embed and (report.vectors_pending or model_changed)
            # On a CPU the static tier goes first, before even the cache fill: semantic search in
            # seconds, not hours, and a surface that answers once the "embed" phase starts (MCP's
            # first search) answers with it. On a GPU the full model is done about as soon, so it
            # goes first and keeps its speed.
            gpu = static and self.models.gpu_likely()
            if static and not gpu and not report.cancelled:
                self.models.index_static(store, progress, cancel, report)
            cache_only = not embed and static and report.vectors_pending and not report.cancelled
            if ((full_work and not self.embedder_loaded) or cache_only) and not report.cancelled:
                # What the shared cache holds needs no model: a re-clone or a rebuilt index may
                # need no torch at all, and a static-only run (--force --static-only included)
                # keeps the full model's vectors the cache has, embedding nothing.
                self._fill_from_cache(store, progress, cancel, report)
                report.vectors_pending = store.counts()["pending"]
                full_work = embed and bool(report.vectors_pending) and not report.cancelled
            static_later = gpu and full_work
            if gpu and not static_later and not report.cancelled:
                self.models.index_static(store, progress, cancel, report)
            if full_work and not report.cancelled:
                if progress:  # the lexical phase has committed: say so now, not once the model is up
                    progress(Progress("embed", 0, report.vectors_pending, "loading the model"))
                try:
                    embedder = self.embedder()
                except CodeSightError as exc:
                    report.warnings.append(f"{exc}; " + ("BM25 and the static tier only" if static and
                                                         self.models.static_error is None else "lexical search only"))
                else:
                    if static_later and getattr(embedder, "device", "cpu") != "cuda":
                        static_later = False  # the guess was wrong: the model runs on the CPU
                        self.models.index_static(store, progress, cancel, report)
                    cache = self._embed(embedder, progress=progress, cancel=cancel, report=report)
                    report.warnings.extend(cache.notices)
                    self._bound_cache(cache)
            elif report.chunks_removed and self._vectors.directory.exists():
                # Nothing to embed, but vectors of removed chunks must go; no model needed.
                drop_orphan_vectors(store, self._vectors)
            if static_later and not report.cancelled:
                self.models.index_static(store, progress, cancel, report)
            if self._vectors.dirty:  # deletions (a file changed or removed) leave versions too
                self._vectors.optimize()
            if not report.cancelled and report.chunks_removed:
                try:
                    store.maybe_vacuum()  # mostly free pages after big deletions: give them back
                except sqlite3.OperationalError:  # busy readers or no space: the next run tries again
                    pass
            self._tighten()
            report.seconds = time.perf_counter() - t0
            report.warnings[:0] = self.take_notices()
            return report
        finally:
            self._indexing.clear()
            self.storage.release_writer()

    def watch(self, on_batch: Callable[[Batch, IndexReport], None] | None = None, *, embed: bool = True,
              quiet: float = 0.3, catch_up: bool = True, poll: bool | None = None,
              static: bool | None = None) -> Watcher:
        """Keep the index current as files change: returns a started ``core.watch.Watcher``.

        Each batch of changes is one ``index(paths=...)`` run: only the named files are looked
        at, re-chunked and (their new text only) embedded, and the vector store gets one version
        per batch. A change that arrives while a batch is embedding interrupts the embedding, so a
        save is searchable in about a second even during a long first embedding; the next batch
        resumes it. Another process's writer makes the batch wait (``RetryLater``), not fail.
        ``static`` (default: as ``embed``) keeps the static tier current too.
        ``on_batch(batch, report)`` is called after each batch. ``catch_up`` first brings the
        index up to date with a full walk. ``poll`` forces a stat poll instead of inotify (the
        default polls only where the tree has symlinked directories).
        """
        from codesight_tui.core.watch import RetryLater

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
                report = self.index(progress, embed=embed, cancel=interrupt,
                                    paths=None if batch.full else batch.paths, static=static)
            except IndexBusyError:
                raise RetryLater from None
            finally:
                embedding.clear()
            if on_batch is not None:
                on_batch(batch, report)

        return self.watcher(handle, quiet=quiet, poll=poll, on_event=on_event).start(full=catch_up)

    def watcher(self, handler: Callable[[Batch], None], *, quiet: float = 0.3, poll: bool | None = None,
                scan: Callable[[], dict[str, list[str]]] | None = None, on_event: Callable[[], None] | None = None,
                poll_every: float = 2.0) -> Watcher:
        """A ``core.watch.Watcher`` of this repository (not started) that hands its batches to
        ``handler(batch)``, with this index's ignore rules. It polls (``scan``, by default
        ``changed_files``) where the tree has symlinked directories, which inotify watchers follow
        into loops or out of the repository, or where ``poll`` says so."""
        from codesight_tui.core.watch import Watcher

        if poll is None:
            try:
                poll = int(self.store.get_meta("symlink_dirs") or 0) > 0 if self.is_indexed() else False
            except Exception:
                poll = True
        return Watcher(self.root, handler, exclude=self._exclude(), secret_files=tuple(self.settings.secret_files),
                       quiet=quiet, poll=poll,
                       scan=scan or cast(Callable[[], dict[str, list[str]]], self.changed_files), on_event=on_event,
                       poll_every=poll_every)

    def _tighten(self) -> None:
        """Owner-only modes on everything codesight keeps (``core.private``): this index, the data
        and cache directories, whatever an older version or a library created wider."""
        from codesight_tui.core.private import private_dir, tighten

        for d in (self.settings.data_dir, self.settings.cache_dir):
            d = Path(d).expanduser()
            try:
                if d.parent.name == ".codesight":
                    private_dir(d.parent)
                private_dir(d)
            except OSError:
                pass
        tighten(self.index_dir)
        tighten(Path(self.settings.cache_dir).expanduser())

    def _integrity_due(self, store: Store) -> bool:
        """Whether this run checks the file for damage: once every ``integrity_check_hours``."""
        try:
            last = float(store.get_meta("checked_at") or 0)
        except (ValueError, sqlite3.DatabaseError):
            return True
        return bool(time.time() - last >= self.settings.integrity_check_hours * 3600)

    def _cached_dim(self, store: Store) -> int | None:
        """The full model's vector size without loading it: from the index, or from the one
        cache file of this model (None where neither tells)."""
        from codesight_tui.core.cache import cache_files, cache_path

        name = self.model_info.vectors_name
        dim = store.get_meta("dim") or ""
        if store.get_meta("model") == name and dim.isdigit():
            return int(dim)
        stem = cache_path(self.settings.cache_dir, name, 0).stem.rsplit("-", 1)[0]
        dims = {p.stem.rsplit("-", 1)[1] for p in cache_files(self.settings.cache_dir)
                if p.stem.rsplit("-", 1)[0] == stem}
        return int(dims.pop()) if len(dims) == 1 and next(iter(dims)).isdigit() else None

    def _fill_from_cache(self, store: Store, progress: ProgressFn | None, cancel: threading.Event | None,
                         report: IndexReport) -> None:
        """Before the model loads: every pending chunk whose vectors the shared cache holds gets
        them (``indexer.fill_from_cache``)."""
        from codesight_tui.core.cache import EmbeddingCache, cache_path

        dim = self._cached_dim(store)
        if dim is None or not cache_path(self.settings.cache_dir, self.model_info.vectors_name, dim).is_file():
            return
        cache = EmbeddingCache(self.settings.cache_dir.expanduser(), self.model_info.vectors_name, dim)
        fill_from_cache(store, self._vectors, cache, self.model_info.vectors_name, dim, progress=progress, cancel=cancel,
                        report=report)
        report.warnings.extend(cache.notices)

    def _embed(self, embedder: Any, **kwargs: Any) -> EmbeddingCache:
        """Embed pending chunks through the shared cache (on a GPU in big overlapped batches);
        returns the cache. ``kwargs`` go to ``index_vectors``."""
        from codesight_tui.core.cache import EmbeddingCache

        cache = EmbeddingCache(self.settings.cache_dir.expanduser(), embedder.name, embedder.dim)
        gpu = getattr(embedder, "device", "cpu") == "cuda"
        index_vectors(self.store, self._vectors, embedder, cache, batch=4096 if gpu else 128, overlap=gpu, **kwargs)
        return cache

    def limit_vectors(self, fraction: float, progress: ProgressFn | None = None) -> int:
        """Rebuild the vectors so that only ``fraction`` (0 to 1) of the chunks have one, the most
        valuable first, in the order indexing embeds them: search as it is part-way through a first
        index (``codesight eval --coverage``). Cached vectors make it cheap; the next ``index``
        embeds the rest. Returns how many chunks have a vector."""
        store = self.store
        self.storage.acquire_writer(wait=True)
        try:
            total = store.counts()["chunks"]
            store.reset_embedded()
            self._vectors.drop()
            want = round(max(0.0, min(1.0, fraction)) * total)
            if want:
                self._embed(self.embedder(), progress=progress, limit=want)
            return store.counts()["vectors"]
        finally:
            self.storage.release_writer()

    # --- search ---------------------------------------------------------------------------
    def search(self, query: str, top_k: int = 10, mode: str | None = None, *, glob: str | None = None,
               language: str | None = None, load_model: bool = True, fast: bool = False,
               like: RelatedSource | None = None) -> SearchResponse:
        """Search the index. ``mode`` is ``hybrid`` (default), ``bm25`` or ``vector``.

        Returns ``SearchResponse``: a list of ``SearchResult`` whose ``notices`` say what this answer lacks
        (no model: BM25 only; a damaged vector table) and what happened to the index since the
        last call (rebuilt, read-only), and whose ``retrievers`` say which lists were fused
        (``bm25``, ``static``, ``vector``). Hybrid search fuses whatever exists: BM25, the static
        tier's vectors and the full model's, each weighted by its coverage. With
        ``load_model=False`` a full model that is not loaded yet is not waited for (hybrid answers
        from BM25 and the static tier, vector mode returns nothing): no torch import, the fast
        path of a fresh CLI process. ``fast`` answers that way even where the full model is loaded.
        Any query string is safe. ``like`` (from ``related_source``) searches for code like that
        chunk instead of ``query``: see ``related``.
        """
        if like is not None:
            query = like.terms
        mode = str(mode or self.settings.default_mode)
        if mode not in MODES:
            raise CodeSightError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}", exit_code=2)
        # Arguments that were not valid UTF-8 arrive with lone surrogates, which neither the
        # tokenizer nor SQLite accepts: read those bytes as the replacement character.
        query = (_clean(query) or "")[:MAX_QUERY_CHARS]
        glob, language = _clean(glob), _clean(language)
        if language:
            from codesight_tui.core.languages import normalize_language

            language = normalize_language(language)
        if glob is not None:
            _check_glob(glob)
        if not self.has_index():
            return SearchResponse()
        if self.resident_bm25:
            self.store.keep_resident()
        notes: list[str] = []
        qfn = None
        full = mode == "vector" or (mode == "hybrid" and not fast)  # the full model's vectors are wanted
        if full and not load_model and self.models.borrow() is None:  # another repository's engine may have it
            if mode == "vector":
                return SearchResponse(notices=self.take_notices())
        elif full:
            try:
                qfn = self.embedder().encode_query
            except CodeSightError as exc:
                if mode == "vector":
                    raise
                notes.append(f"{exc}; showing BM25 results only")
        # The static tier has weight 0 once the full model answers over every chunk: its vectors
        # are not even loaded then (a 341k-chunk index holds 350 MB of them).
        static = (self._static_index() if mode == "hybrid" and not (qfn and self.store.vector_coverage() >= 1.0)
                  else None)
        used: list[str] = []
        extra: dict[str, Any] = {}
        if like is not None:
            own = like.root == str(self.root)  # the source's own vectors, where this index holds them
            stored = self._vectors_for(self.store.get_chunks([like.chunk_id]).values()) if own and qfn else {}
            if like.chunk_id in stored:
                qfn = functools.partial(_constant, stored[like.chunk_id])
            static_own = static[0].vectors([like.chunk_id]).get(like.chunk_id) if own and static else None
            extra = {"vector_query": like.content, "static_query_vector": static_own}
            top_k += 4  # room for the source and what overlaps it, left out below
        def run(query_vector_fn: Callable[[str], Any] | None, mode: str,
                static: tuple[StaticIndex, float] | None, **more: Any) -> list[SearchResult]:
            return search(self.store, self._vectors, query_vector_fn, query, top_k=top_k, mode=mode, glob=glob,
                          language=language, depth=self.settings.retriever_depth, rrf_k=self.settings.rrf_k,
                          ranking=self.settings.ranking, used=used, static=static, **extra, **more)

        try:
            try:
                hits = run(qfn, mode=mode, vectors_for=self._vectors_for, static=static)
            except VectorStoreError as exc:
                mark(self.storage.vectors_damaged_marker)
                if mode == "vector":
                    raise CodeSightError(f"{exc}: run `codesight index` to rebuild it from the embedding"
                                         " cache") from None
                notes.append(f"{exc}; showing BM25 results until `codesight index` rebuilds it")
                used.clear()
                hits = run(None, mode="hybrid", static=static or self._static_index())
        except sqlite3.DatabaseError as exc:
            # Damage inside the file (a bad page) shows only when a query reads it: as "malformed",
            # or as a row whose text is no longer UTF-8. Remember it, so that the next `index`
            # rebuilds instead of leaving every search to fail.
            damaged = not isinstance(exc, sqlite3.OperationalError) or "decode" in str(exc)
            if not damaged:
                raise CodeSightError(f"search failed: {str(exc).splitlines()[0][:200]}") from None
            mark(self.storage.damaged_marker)
            why = str(exc) if "decode" not in str(exc) else "a row's text is unreadable"
            raise CodeSightError(f"the index of {self.root} is damaged ({why.splitlines()[0][:120]}): run"
                                 " `codesight index` to rebuild it (cached vectors are reused)") from None
        if like is not None:
            hits = [h for h in hits if not like.overlaps(str(self.root), h.path, h.start_line, h.end_line)]
            hits = hits[: top_k - 4]
        return SearchResponse(hits, notices=self.take_notices() + notes, retrievers=used)

    def related_source(self, target: str) -> RelatedSource:
        """The chunk ``target`` names: ``path:line`` (``path:line:col`` too), a file (its first
        chunk) or a symbol (its definition). Raises ``CodeSightError`` (exit code 2) with one line
        where there is none."""
        from codesight_tui.core.ranking import definitions
        from codesight_tui.core.related import find_source

        if not self.has_index():
            raise CodeSightError(f"{self.root} is not indexed yet: run `codesight index`", exit_code=2)
        return find_source(self.store, self.root, _clean(target) or "", definitions)

    def related(self, target: str | RelatedSource, top_k: int = 10, mode: str | None = None,
                **kwargs: Any) -> SearchResponse:
        """Code most like the chunk ``target`` names (see ``related_source``), under the same
        ranking as ``search``: BM25 over the chunk's names, and the vector lists from the chunk's
        own vectors (static tier or full model; its code embedded where it has none). The chunk
        itself and what overlaps it are left out."""
        source = target if isinstance(target, RelatedSource) else self.related_source(target)
        return self.search(source.terms, top_k=top_k, mode=mode, like=source, **kwargs)

    @staticmethod
    def related_many(engines: list[CodeSight], target: str, top_k: int = 10, mode: str | None = None, *,
                     fleet: Fleet | None = None, repo: str | None = None, **kwargs: Any) -> SearchResponse:
        """``related`` across several repositories, as one list: the target is looked up in each
        in turn (the first that has it is the source; then ``fleet``, where none has it), then
        each, and the fleet, is searched for code like it."""
        source = None
        for engine in engines:
            try:
                source = engine.related_source(target)
                break
            except CodeSightError:
                if engine is engines[-1] and fleet is None:
                    raise
        if source is None and fleet is not None:
            source = fleet.find_source(target, repo)
        more: dict[str, Any] = {"fleet": fleet, "repo": repo} if fleet is not None else {}
        return CodeSight.search_many(engines, "", top_k=top_k, mode=mode, like=source, **more, **kwargs)

    @staticmethod
    def search_many(engines: list[CodeSight], query: str, top_k: int = 10, mode: str | None = None, *,
                    fleet: Fleet | None = None, repo: str | None = None, **kwargs: Any) -> SearchResponse:
        """One ranked list across several repositories: each is searched on its own, and the lists
        are fused by rank (the same RRF as hybrid search), each hit labelled with its repository
        (``SearchResult.repo``). Equal fused scores go to the better-scored hit.

        ``fleet`` (a ``Fleet``) is searched too, as one more list (``repo``: a glob over its
        repositories' names); its hits carry their repository's name and ``commit``. A fleet
        repository with the name of a local one searched here is left to the local index, which
        holds the uncommitted work too."""
        per_repo = [engine.search(query, top_k=top_k, mode=mode, **kwargs) for engine in engines]
        labels = [str(engine.root) for engine in engines]
        if fleet is not None:
            local = {Path(label).name for label in labels}
            try:
                found = fleet.search(query, top_k=top_k + 10, mode=str(mode or fleet.settings.default_mode),
                                     repo=repo, glob=kwargs.get("glob"), language=kwargs.get("language"),
                                     like=kwargs.get("like"))
            except CodeSightError as exc:
                if not engines:  # the fleet alone was asked: its failure is the answer
                    raise
                # An unreachable or damaged store costs its own hits, never the local ones.
                found = SearchResponse([], [f"{exc} (local hits only)"])
            per_repo.append(SearchResponse([h for h in found if h.repo not in local][:top_k], found.notices,
                                           found.retrievers))
            labels.append("")
        if len(per_repo) == 1:
            for hit in per_repo[0]:
                hit.repo = labels[0] or hit.repo
            return per_repo[0]
        hits: dict[tuple[int, int], SearchResult] = {}
        rankings: dict[str, list[tuple[int, int]]] = {}
        for n, (label, found) in enumerate(zip(labels, per_repo)):
            rankings[str(n)] = [(n, i) for i in range(len(found))]
            for i, hit in enumerate(found):
                hit.repo = label or hit.repo
                hits[(n, i)] = hit
        fused = rrf_fuse(rankings)
        order = sorted(fused, key=lambda f: (-f[1], -hits[f[0]].score))
        for key, score, _ in order:  # the score shown is the one the list is in order of
            hits[key].score = round(score, 6)
        names = [Path(label).name if label else "fleet" for label in labels]
        return SearchResponse([hits[key] for key, _, _ in order[:top_k]],
                    notices=[f"{name}: {n}" for name, found in zip(names, per_repo) for n in found.notices],
                    retrievers=[r for r in ("bm25", "static", "vector") if any(r in f.retrievers for f in per_repo)])

    # --- what an answer costs an agent ---------------------------------------------------------
    def token_count(self, text: str) -> int:
        """Tokens in ``text`` by the tokenizer this installation ships (the embedding model's)."""
        if self._token_counter is None:
            from codesight_tui.core.tokens import TokenCounter

            self._token_counter = TokenCounter(self.model_info.tokenizer_file)
        return int(self._token_counter.count(text))

    def file_tokens(self, paths: list[str]) -> int:
        """Tokens of these indexed files, whole (the sum of their chunks): what reading them costs."""
        if not paths or not self.has_index():
            return 0
        total = 0
        for k in range(0, len(paths), 500):
            part = paths[k : k + 500]
            rows = self.store.conn.execute(
                f"SELECT content FROM chunks WHERE path IN ({','.join('?' * len(part))})", part)
            total += sum(self.token_count(content) for (content,) in rows)
        return total

    def record_served(self, kind: str, results: int, tokens: int, paths: list[str]) -> None:
        """Count one answer given to an agent (``codesight stats``): its tokens, and the tokens of
        the files its hits came from. Kept locally, in the data directory."""
        from codesight_tui.core import stats

        stats.record(self.settings.data_dir, str(self.root), kind, results, tokens, self.file_tokens(sorted(set(paths))))

    @staticmethod
    def usage_stats(settings: Settings | None = None) -> list[Any]:
        """Per repository: searches served to agents, tokens returned, tokens of the files behind
        them (``core.stats.RepoUsage``)."""
        from codesight_tui.core import stats

        return stats.usage(_settings(settings, {}).data_dir)

    def take_notices(self, reader: str = "answers") -> list[str]:
        """What happened to the index (rebuilt after damage, format change, read-only) that this
        reader has not told yet: "answers" (searches and index runs, which share it: a notice an
        index run reported is not repeated by the search after it) or "status". Each reader tells
        each notice once, so a status call never takes the notice a search should have shown, even
        when both run at once (MCP's parallel calls)."""
        with self._events_lock:
            told = self._events_told.get(reader, 0)
            self._events_told[reader] = self._events_count
            return [message for n, message in self._events if n > told]

    def _note(self, message: str) -> None:
        with self._events_lock:
            told = self._events_told.get("answers", 0)
            if any(m == message for n, m in self._events if n > told):
                return  # the same thing again before it was told (a retried open): told once
            self._events_count += 1
            self._events.append((self._events_count, message))
            del self._events[:-64]  # the last 64 are plenty for any reader

    @staticmethod
    def query_terms(query: str) -> list[str]:
        """The words of ``query`` worth marking in a hit (names, their parts, plain words; no
        stopwords), longest first: what a preview highlights."""
        from codesight_tui.core.ranking import analyze

        q = analyze((_clean(query) or "")[:MAX_QUERY_CHARS])
        names = {i.split(".")[-1] for i in q.identifiers}
        return sorted({t for t in names | set(q.words) if len(t) > 1}, key=lambda t: (-len(t), t))

    def _vectors_for(self, rows: Iterable[ChunkRow]) -> dict[int, Any]:
        """Stored vectors of chunk rows, by id: from the embedding cache (a key lookup, well under
        a millisecond for a hundred rows), else from LanceDB (about 4 ms at 100,000 rows)."""
        rows = list(rows)
        out: dict[int, Any] = {}
        cache = self._read_cache()
        if cache is not None:
            try:
                found = cache.get_many([r.embed_key for r in rows], touch=False)
            except Exception:  # damaged, locked or gone: LanceDB has them all
                self._search_cache = None
                found = {}
            out = {r.id: found[r.embed_key] for r in rows if r.embed_key in found}
        rest = [r.id for r in rows if r.id not in out]
        if rest:
            out.update(self._vectors.vectors(rest))
        return out

    def _read_cache(self) -> EmbeddingCache | None:
        """The embedding cache of the model this index's vectors came from, opened for lookups
        only if its file exists (tried once per engine)."""
        if not self._search_cache_tried:
            self._search_cache_tried = True
            from codesight_tui.core.cache import EmbeddingCache

            path = self._cache_file(self.store.get_meta("model"))
            if path is not None:
                self._search_cache = EmbeddingCache.open_file(path)
        return self._search_cache

    def _cache_file(self, model: str | None) -> Path | None:
        """The existing cache file of ``model`` for this index's vector size, or None."""
        from codesight_tui.core.cache import cache_path

        dim = self.store.get_meta("dim") if self.has_index() else None
        if not model or not dim or not dim.isdigit():
            return None
        path = cache_path(self.settings.cache_dir, model, int(dim))
        return path if path.is_file() else None

    # --- status ---------------------------------------------------------------------------
    def ask_stream(self, question: str, top_k: int | None = None, *, mode: str | None = None,
                   glob: str | None = None, language: str | None = None, fast: bool = False,
                   load_model: bool = True) -> AskStream:
        """``ask``, streamed: an ``AskStream`` whose iteration yields the answer's text as the LLM
        writes it, and whose ``answer`` is then the whole ``Answer``. The back end's configuration
        is checked before the search, and the search runs before any connection is opened.
        Raises ``AskError`` (a ``CodeSightError``) with one line."""
        from codesight_tui.core.ask import AskError, AskStream, llm_config, prepare

        cfg = llm_config(self.settings)
        if not question or not question.strip():
            raise AskError("the question is empty", exit_code=2)
        started = time.perf_counter()
        importing = prepare(cfg.backend)  # the client library loads while the search runs
        hits = self.search(question, top_k=top_k or self.settings.ask_top_k, mode=mode, glob=glob,
                           language=language, fast=fast, load_model=load_model)
        hits = self._without_secrets(hits)
        if not hits:
            raise AskError("nothing in the index matches this question: there are no sources to answer from")
        importing.join()
        return AskStream(question, hits, cfg, search_seconds=time.perf_counter() - started, started=started)

    def _without_secrets(self, hits: SearchResponse) -> SearchResponse:
        """The hits that may go to an LLM: none from a file named like a secret, none whose text
        holds a key or a token (``core.redact``), even from an index built before secrets were
        masked. What was left out is said in a notice."""
        from codesight_tui.core.redact import flagged, secret_name

        names = tuple(self.settings.secret_files)
        kept = [h for h in hits if not secret_name(h.path, names) and not flagged(h.content)]
        notices = list(hits.notices)
        if len(kept) < len(hits):
            n = len(hits) - len(kept)
            notices.append(f"{n} source{'s' if n > 1 else ''} left out of the question: {'they hold' if n > 1 else 'it holds'}"
                           " a secret (a key or a token)")
        return SearchResponse(kept, notices=notices, retrievers=hits.retrievers)

    def ask(self, question: str, top_k: int | None = None, **kwargs: Any) -> Answer:
        """An ``Answer`` to ``question`` from the configured LLM, citing the hits it was given as
        ``[n]`` (see ``ask_stream``)."""
        stream = self.ask_stream(question, top_k, **kwargs)
        for _ in stream:
            pass
        return stream.answer

    def document_text(self, path: str) -> str | None:
        """A document's extracted text (PDF, DOCX, PPTX), as its hits' lines count it; None for
        anything else, or before it is indexed."""
        if not is_document(path) or not self.has_index():
            return None
        found = self.store.document(path)
        return found[0] if found else None

    def counts(self) -> dict[str, int]:
        """``files``, ``chunks``, ``vectors`` and ``pending`` (chunks without a vector); zeros
        before the first index. Cheap: for status lines and progress."""
        if not self.has_index():
            return {"files": 0, "chunks": 0, "vectors": 0, "pending": 0}
        return self.store.counts()

    def last_indexed(self) -> float | None:
        """When a lexical pass last completed (a Unix time), or None."""
        if not self.has_index():
            return None
        value = self.store.get_meta("last_indexed")
        return float(value) if value else None

    def indexing_now(self) -> bool:
        """Whether an indexer (this process's or another's) is writing this index now."""
        if self._indexing.is_set():
            return True
        return self.storage.writer_active()

    def changed_files(self) -> ChangedFiles:
        """Files that differ on disk from the index: ``{"added", "modified", "deleted"}``."""
        if not self.has_index():
            return {"added": [], "modified": [], "deleted": []}
        known = self.store.file_states()
        _entries, changed, deleted = scan_changes(self.root, self.store, self.settings.max_file_size,
                                                 self._exclude(), max_document_size=self.settings.max_document_size,
                                                 secret_files=tuple(self.settings.secret_files))
        # A file no index run can read (chmod 000) is not news: it was skipped as unreadable, and
        # counting it as added would say "changed" forever. Only the few changed ones are tried.
        changed = [e for e in changed if _readable(self.root / e.rel_path)]
        added = [e.rel_path for e in changed if e.rel_path not in known]
        modified = [e.rel_path for e in changed if e.rel_path in known]
        return {"added": added, "modified": modified, "deleted": deleted}

    def status(self, check_disk: bool = True) -> IndexStatus:
        """Counts, model, freshness and size of the index (``core.status.IndexStatus``); never
        loads the model."""
        out: IndexStatus = {"root": str(self.root), "index_dir": str(self.index_dir), "indexed": self.has_index(),
                            "backend": self.model_info.backend}
        if not self.has_index():
            out.update(IndexStatus(files=0, chunks=0, vectors=0, pending=0, model=self.model_info.vectors_name,
                                   static_vectors=0, last_indexed=None, changed=None, index_bytes=0,
                                   vector_coverage=0.0, indexing=self.indexing_now(), notices=[]))
            return out
        store = self.store
        meta = store.meta()
        counts = store.counts()
        out.update(IndexStatus(files=counts["files"], chunks=counts["chunks"], vectors=counts["vectors"],
                               pending=counts["pending"]))
        chunks = counts["chunks"]
        static = self.models.static_status(self.store, chunks)
        out.update(IndexStatus(
            model=meta.get("model") or self.model_info.vectors_name,
            dim=int(meta["dim"]) if meta.get("dim") else None,
            last_indexed=float(meta["last_indexed"]) if meta.get("last_indexed") else None,
            git_head=meta.get("git_head") or None,
            index_bytes=store.size_bytes() + self._vectors.size_bytes(),
            db_bytes=store.size_bytes(),
            vector_bytes=self._vectors.size_bytes(),
            vector_versions=self._vector_versions(),
            skipped=store.skipped(),
            secrets=self._secrets_status(store),
            documents=cast("DocumentsStatus", store.document_status()),
            read_only=store.readonly,
            static_model=static["static_model"],
            static_vectors=static["static_vectors"],
            static_coverage=static["static_coverage"],
            static_error=static["static_error"],
            vector_coverage=round(counts["vectors"] / chunks, 4) if chunks else 1.0,
            indexing=self.indexing_now(),
            notices=self.take_notices("status") + (["index is read-only: searching without updating"]
                                                   if store.readonly else []),
        ))
        try:
            out["cache"] = self.cache_status()
        except Exception:
            out["cache"] = None
        if check_disk:
            ch = self.changed_files()
            out["changed"] = len(ch["added"]) + len(ch["modified"]) + len(ch["deleted"])
            out["changed_files"] = ch
        return out

    def _secrets_status(self, store: Store) -> SecretsStatus:
        """Files never read because they are named like secrets, and secrets masked in the rest."""
        masked = store.masked()
        return {"files_skipped": store.skipped().get("secret", 0), "masked": masked["secrets"],
                "files_masked": masked["files"]}

    def _vector_versions(self) -> int:
        """LanceDB versions kept on disk (0 before any vector; never raises)."""
        if not self._vectors.directory.exists():
            return 0
        try:
            return int(self._vectors.version_count())
        except Exception:
            return 0

    def _bound_cache(self, cache: EmbeddingCache) -> None:
        """Keep the shared cache under ``cache_max_mb``: drop the least recently used vectors (down
        to 90% of the cap) when a run leaves it larger."""
        cap = self.settings.cache_max_mb * 1024 * 1024
        try:
            if cache.stats()["bytes"] > cap:
                done = cache.prune(max_bytes=int(cap * 0.9))
                self._note(f"embedding cache over {self.settings.cache_max_mb} MB: dropped"
                                    f" {done['removed']:,} least recently used vectors")
        except Exception as exc:  # a cache that can't be pruned now is not worth failing an index run for
            self._note(f"could not prune the embedding cache: {exc}")

    def cache_status(self) -> dict[str, Any] | None:
        """Stats of this model's cache file, if it exists (never creates one or loads the model)."""
        from codesight_tui.core.cache import EmbeddingCache

        path = self._cache_file(self.model_info.vectors_name)
        return EmbeddingCache.open_file(path).stats() if path is not None else None

    def release_model(self) -> None:
        """End a model running in a child process (at once, even mid-batch, or still loading)."""
        self.models.release()

    def close(self) -> None:
        """Release the index and the model's child process, if any."""
        self.release_model()
        self.storage.close_store()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

