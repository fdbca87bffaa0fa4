"""``CodeSight``: the one object every surface (CLI, TUI, MCP, Python) drives.

    from codesight_tui import CodeSight
    cs = CodeSight("path/to/repo")
    cs.index(progress=print)
    for hit in cs.search("where do we retry failed uploads"):
        print(hit.path, hit.start_line, hit.scope)

A facade: the work is done by the modules under it, over one ``core.repo.context.RepoContext`` --
index runs by ``core.repo.indexing``, searches by ``core.repo.retrieval``, reports by ``core.repo.report``,
answers by ``core.search.ask``, and what answers cost by ``core.search.stats``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import UsageError
from codesight_tui.core.index.storage import IndexStorage
from codesight_tui.core.ingest.paths import index_dir_for
from codesight_tui.core.ingest.tokens import ModelInfo, resolve_model
from codesight_tui.core.languages import is_document
from codesight_tui.core.modes import Mode, Vectors, checked_mode
from codesight_tui.core.process.models import Models, nvidia_gpu
from codesight_tui.core.repo import indexing, report, retrieval
from codesight_tui.core.repo.context import RepoContext
from codesight_tui.core.search.contract import Filters, SearchRequest
from codesight_tui.core.search.navigate import MAX_SITES, Navigation, Navigator
from codesight_tui.core.search.related import RelatedSource
from codesight_tui.core.search.status import Notices
from codesight_tui.core.store import symbols as symbol_tables

if TYPE_CHECKING:
    from typing_extensions import Self

    from codesight_tui.core.config import Settings
    from codesight_tui.core.index.embedder import Embedder
    from codesight_tui.core.index.indexer import IndexReport, ProgressFn
    from codesight_tui.core.index.static import StaticEmbedder
    from codesight_tui.core.ingest.tokens import TokenCounter
    from codesight_tui.core.search.ask import Answer, AskStream
    from codesight_tui.core.search.contract import SearchResponse
    from codesight_tui.core.search.status import ChangedFiles, IndexStatus
    from codesight_tui.core.store.store import Store
    from codesight_tui.core.store.watch import Batch, ChangeSource, Watcher

MAX_QUERY_CHARS = retrieval.MAX_QUERY_CHARS


def _settings(settings: Settings | None, overrides: dict[str, Any]) -> Settings:
    from codesight_tui.core.config import load_settings

    if settings is None:
        return load_settings(**overrides)
    return settings.model_copy(update={k: v for k, v in overrides.items() if v is not None}) if overrides else settings


class CodeSight:
    """A repository's index: build it, search it, report on it.

    ``embedder`` may be injected (any ``core.index.embedder.Embedder``: ``name``, ``dim``, ``encode``
    and ``encode_query``); otherwise the configured model loads on first need. The options are
    fixed for the engine's life: ``model_process`` runs the full model in a child process (the
    interactive apps); ``lexical_processes`` chunks big change sets in worker processes
    (multiprocessing "spawn", which re-imports the caller's main module: a script without a
    ``__main__`` guard can't survive it, so it is off by default); ``resident_bm25`` answers
    BM25 from memory once a copy of the FTS index is read (a process that answers many queries).
    ``core.apps.workspace.EngineOptions`` is what the surfaces set them from.
    """

    def __init__(
        self,
        path: str | Path = ".",
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        *,
        model_process: bool = False,
        lexical_processes: bool = False,
        resident_bm25: bool = False,
        **overrides: Any,
    ) -> None:
        root = Path(path).expanduser()
        if not root.exists():
            raise UsageError(f"no such directory: {path}")
        if not root.is_dir():
            raise UsageError(f"not a directory: {path}")
        self.root = root.resolve()
        self.settings = _settings(settings, overrides)
        self.index_dir = index_dir_for(self.root, self.settings.data_dir)
        notices = Notices()
        if embedder is not None:
            self.model_info = ModelInfo(embedder.name, embedder.name, None, getattr(embedder, "max_seq_length", 256))
        else:
            from codesight_tui.core.index.onnx_model import for_backend

            self.model_info = for_backend(
                resolve_model(self.settings.embedding_model),
                self.settings.embedding_backend,
                self.settings.device,
                nvidia_gpu(),
                self.settings.cache_dir,
            )
        self.storage = IndexStorage(self.root, self.index_dir, notices.note)
        self.models = Models(self.settings, self.model_info, embedder, in_child=model_process, note=notices.note)
        self.context = RepoContext(
            self.root,
            self.settings,
            self.index_dir,
            self.storage,
            self.models,
            self.model_info,
            notices,
            lexical_processes,
            resident_bm25,
        )
        self._token_counter: TokenCounter | None = None  # made on first need

    # --- the index and its options ----------------------------------------------------------
    @property
    def store(self) -> Store:
        return self.storage.store

    def has_index(self) -> bool:
        """Whether an index database exists (it may be partial: search whatever it holds)."""
        return self.context.has_index()

    def is_indexed(self) -> bool:
        """Whether a lexical pass has completed at least once (a rebuilt index has not)."""
        return self.context.is_indexed()

    # --- models (core.process.models) ---------------------------------------------------------------
    def embedder(self) -> Embedder:
        """The full model, loaded on first need and shared by every ``CodeSight`` of this process
        that uses the same model (thread-safe). Raises ``CodeSightError`` if it can't load."""
        model: Embedder = self.models.embedder()
        return model

    @property
    def embedder_loaded(self) -> bool:
        return self.models.loaded is not None

    @property
    def model_error(self) -> str | None:
        """Why the model could not load, once it has been tried and failed; else None."""
        return self.models.error

    def static_path(self) -> Path | None:
        """The static model's folder, or None when the tier is off (``Models.static_path``)."""
        return self.models.static_path()

    def static_model(
        self,
        *,
        create: bool = False,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
        report: IndexReport | None = None,
    ) -> StaticEmbedder | None:
        """The static model, or None where the tier is off or its model is not there; with
        ``create`` distilled first where it is missing (``Models.static_model``)."""
        return self.models.static_model(create=create, progress=progress, cancel=cancel, report=report)

    def static_ready(self) -> bool:
        """Whether hybrid search can use the static tier now (its vectors exist, from the model
        configured): what lets a fresh process answer without the full model."""
        return self.has_index() and self.models.static_index(self.store) is not None

    def full_pass(self) -> bool:
        """Whether index runs embed every chunk with the full model: where ``full_model`` says so
        (``Models.full_pass``: on a GPU, by default), or where the full model was asked for on this
        index once (``codesight index --full``), whose vectors are then kept current. Vectors the
        shared cache gave it are used, and ask for nothing more: on a CPU the rest is the user's
        to ask for (an index from before this was recorded counts as asked where it is complete)."""
        return indexing.full_pass(self.context)

    def full_estimate(self, pending: int | None = None) -> str:
        """How long ``index --full`` takes to embed ``pending`` chunks (default: this index's
        chunks without the full model's vectors) on this machine, in words ("about 12 min")."""
        return self.models.full_estimate(self.store.counts()["pending"] if pending is None else pending)

    def release_model(self) -> None:
        """End a model running in a child process (at once, even mid-batch, or still loading)."""
        self.models.release()

    # --- indexing (core.repo.indexing) -----------------------------------------------------------
    def index(
        self,
        progress: ProgressFn | None = None,
        *,
        embed: bool | None = None,
        force: bool = False,
        cancel: threading.Event | None = None,
        wait: bool = False,
        paths: list[str] | None = None,
        static: bool | None = None,
    ) -> IndexReport:
        """Bring the index up to date: lexical phase first (BM25 works after it), then vectors.

        ``embed``: the full model's vectors too (default: ``full_pass()``, so that on a CPU only
        an explicit ``embed=True`` starts the model); ``embed=False`` stops after the lexical phase
        and the static tier. ``force`` rebuilds from scratch (the shared
        embedding cache still spares re-embedding). ``cancel`` stops between batches; everything
        committed so far stays valid and the next run resumes. Raises ``IndexBusyError`` if another
        process is indexing and ``wait`` is false. A full disk is one clear ``CodeSightError``.
        ``paths`` (relative, from a file watcher) limits the lexical phase to those files where
        that is enough to tell what changed; the tree is walked otherwise. ``static`` (default: on,
        unless ``embed=False``) gives every chunk a static-tier vector right after the lexical
        phase, before the full model starts (``core.index.static``; the first run on a machine distils
        its model).
        """
        full = self.full_pass() if embed is None else embed
        return indexing.run(
            self.context,
            progress,
            embed=full,
            force=force,
            cancel=cancel,
            wait=wait,
            paths=paths,
            static=static if static is not None else embed is not False,
        )

    def watch(
        self,
        on_batch: Callable[[Batch, IndexReport], None] | None = None,
        *,
        embed: bool | None = None,
        quiet: float = 0.3,
        catch_up: bool = True,
        poll: bool | None = None,
        static: bool | None = None,
    ) -> Watcher:
        """Keep the index current as files change: returns a started ``core.store.watch.Watcher``.

        Each batch of changes is one ``index(paths=...)`` run: only the named files are looked
        at, re-chunked and (their new text only) embedded, and the vector store gets one version
        per batch. A change that arrives while a batch is embedding interrupts the embedding, so a
        save is searchable in about a second even during a long first embedding; the next batch
        resumes it. Another process's writer makes the batch wait (``RetryLater``), not fail.
        ``embed`` as ``index``'s (default: ``full_pass()``); ``static`` (default: on, unless
        ``embed=False``) keeps the static tier current too.
        ``on_batch(batch, report)`` is called after each batch. ``catch_up`` first brings the
        index up to date with a full walk. ``poll`` forces a stat poll instead of inotify (the
        default polls only where the tree has symlinked directories).
        """
        full = self.full_pass() if embed is None else embed
        return indexing.watch(
            self.context,
            on_batch,
            embed=full,
            quiet=quiet,
            catch_up=catch_up,
            poll=poll,
            static=static if static is not None else embed is not False,
        )

    def watcher(
        self,
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
        return indexing.watcher(
            self.context, handler, quiet=quiet, poll=poll, scan=scan, on_event=on_event, poll_every=poll_every
        )

    def track_changes(self, source: ChangeSource) -> None:
        """Where exact search learns which files changed and are not indexed yet, for a surface
        that runs its own watcher and index runs (the TUI: ``core.store.watch.ChangesSince``); those
        files are read from disk, the rest trusted to the index. ``watch`` needs none: its batches
        are indexed as they are taken. Kept while ``source`` lives (a weak reference)."""
        self.context.watchers.add(source)

    def limit_vectors(self, fraction: float, progress: ProgressFn | None = None) -> int:
        """Rebuild the vectors so that only ``fraction`` (0 to 1) of the chunks have one, the most
        valuable first, in the order indexing embeds them: search as it is part-way through a first
        index (``codesight eval --coverage``). Cached vectors make it cheap; the next ``index``
        embeds the rest. Returns how many chunks have a vector."""
        return indexing.limit_vectors(self.context, fraction, progress)

    def changed_files(self) -> ChangedFiles:
        """Files that differ on disk from the index: ``{"added", "modified", "deleted"}``."""
        return indexing.changed_files(self.context)

    # --- search (core.repo.retrieval) ------------------------------------------------------------
    def search(
        self,
        request: SearchRequest | str,
        top_k: int = 10,
        mode: str | None = None,
        *,
        glob: str | None = None,
        language: str | None = None,
        vectors: Vectors = Vectors.LOAD,
    ) -> SearchResponse:
        """Search the index: a ``SearchRequest`` (the ``Searcher`` contract), or, as the Python
        API's shorthand, a query with its options: ``cs.search("retry failed uploads", 5)``.
        ``mode`` is ``hybrid`` (default), ``bm25`` or ``vector``; ``vectors`` (``core.modes.Vectors``)
        the tier: ``LOAD`` (the default) loads the full model where it is wanted; with ``LOADED``
        one not loaded yet is not waited for (hybrid answers from BM25 and the static tier,
        vector mode returns nothing): no torch import, the fast path of a fresh CLI process.
        ``STATIC`` answers that way even where the full model is loaded. Any query is safe.

        Returns ``SearchResponse``: a list of ``SearchResult``, with ``notices`` (what happened to
        the index since the last call: rebuilt, read-only), ``retrievers`` (the lists fused:
        ``bm25``, ``static``, ``vector``), ``repos`` (this index's coverage and the model's part)
        and ``gaps`` (what the answer lacks, one line each). Hybrid search fuses whatever exists:
        BM25, the static tier's vectors and the full model's, each weighted by its coverage. A
        request's ``like`` searches for code like the chunk it names instead: see ``related``.
        """
        if isinstance(request, str):
            request = SearchRequest(
                request, checked_mode(mode) if mode else None, vectors, Filters(glob, language), top_k
            )
        return retrieval.search(self.context, request)

    def related_source(self, target: str) -> RelatedSource:
        """The chunk ``target`` names: ``path:line`` (``path:line:col`` too), a file (its first
        chunk) or a symbol (its definition). Raises ``CodeSightError`` (exit code 2) with one line
        where there is none."""
        return retrieval.related_source(self.context, target)

    def related(self, target: str | RelatedSource, top_k: int = 10, mode: str | None = None) -> SearchResponse:
        """Code most like the chunk ``target`` names (see ``related_source``), under the same
        ranking as ``search``: BM25 over the chunk's names, and the vector lists from the chunk's
        own vectors (static tier or full model; its code embedded where it has none). The chunk
        itself and what overlaps it are left out."""
        source = target if isinstance(target, RelatedSource) else self.related_source(target)
        return self.search(
            SearchRequest(source.terms, checked_mode(mode) if mode else None, limit=top_k, source=source)
        )

    def follow(
        self, action: str, target: str, limit: int = MAX_SITES, *, glob: str | None = None, language: str | None = None
    ) -> Navigation:
        """Follow a symbol (``core.search.navigate``): ``action`` is ``definitions``, ``references``,
        ``callers`` or ``callees``; ``target`` a name, ``Scope.name`` or ``path:line`` (the
        definition at or around it); ``glob``/``language`` keep the places in matching paths. Says
        how sure the answer is (``Navigation.resolution``, and each site's). Raises
        ``CodeSightError`` with one line where the target names nothing."""
        if glob:
            retrieval.check_glob(glob)
        return Navigator(self.store, self.root, glob, language).follow(action, target, limit)

    def definitions(self, target: str, **where: str | None) -> Navigation:
        return self.follow("definitions", target, MAX_SITES, **where)

    def references(self, target: str, limit: int = MAX_SITES, **where: str | None) -> Navigation:
        return self.follow("references", target, limit, **where)

    def callers(self, target: str, limit: int = MAX_SITES, **where: str | None) -> Navigation:
        return self.follow("callers", target, limit, **where)

    def callees(self, target: str, limit: int = MAX_SITES, **where: str | None) -> Navigation:
        return self.follow("callees", target, limit, **where)

    @staticmethod
    def query_terms(query: str) -> list[str]:
        """The words of ``query`` worth marking in a hit (names, their parts, plain words; no
        stopwords), longest first: what a preview highlights."""
        return retrieval.query_terms(query)

    def definition_lines(self, path: str) -> list[int]:
        """The first lines of ``path``'s definitions, in order (none before it is indexed): places
        where a lexer is between tokens, never inside a string, so a preview can lex from one."""
        if not self.has_index():
            return []
        return sorted({d.start_line for d in symbol_tables.file_definitions(self.store.conn, path)})

    def document_text(self, path: str) -> str | None:
        """A document's extracted text (PDF, DOCX, PPTX), as its hits' lines count it; None for
        anything else, or before it is indexed."""
        if not is_document(path) or not self.has_index():
            return None
        found = self.store.document(path)
        return found[0] if found else None

    # --- ask (core.search.ask) ---------------------------------------------------------------------
    def ask_stream(
        self,
        question: str,
        top_k: int | None = None,
        *,
        mode: Mode | None = None,
        glob: str | None = None,
        language: str | None = None,
        vectors: Vectors = Vectors.LOAD,
    ) -> AskStream:
        """``ask``, streamed: an ``AskStream`` whose iteration yields the answer's text as the LLM
        writes it, and whose ``answer`` is then the whole ``Answer``. The back end's configuration
        is checked before the search, and the search runs before any connection is opened.
        Raises ``AskError`` (a ``CodeSightError``) with one line."""
        from codesight_tui.core.search.ask import ask_stream

        request = SearchRequest(question, mode, vectors, Filters(glob, language), top_k or self.settings.ask_top_k)
        return ask_stream(self, self.settings, request)

    def ask(self, question: str, top_k: int | None = None, *, vectors: Vectors = Vectors.LOAD) -> Answer:
        """An ``Answer`` to ``question`` from the configured LLM, citing the hits it was given as
        ``[n]`` (see ``ask_stream``)."""
        stream = self.ask_stream(question, top_k, vectors=vectors)
        for _ in stream:
            pass
        return stream.answer

    # --- what an answer costs an agent (core.search.stats) -----------------------------------------
    def token_count(self, text: str) -> int:
        """Tokens in ``text`` by the tokenizer this installation ships (the embedding model's)."""
        if self._token_counter is None:
            from codesight_tui.core.ingest.tokens import TokenCounter

            self._token_counter = TokenCounter(self.model_info.tokenizer_file)
        return int(self._token_counter.count(text))

    def file_tokens(self, paths: list[str]) -> int:
        """Tokens of these indexed files, whole (the sum of their chunks): what reading them costs."""
        from codesight_tui.core.search import stats

        return stats.file_tokens(self.store, self.token_count, paths) if paths and self.has_index() else 0

    def record_served(self, kind: str, results: int, tokens: int, paths: list[str]) -> None:
        """Count one answer given to an agent (``codesight stats``): its tokens, and the tokens of
        the files its hits came from. Kept locally, in the data directory."""
        from codesight_tui.core.search import stats

        stats.record(
            self.settings.data_dir, str(self.root), kind, results, tokens, self.file_tokens(sorted(set(paths)))
        )

    @staticmethod
    def usage_stats(settings: Settings | None = None) -> list[Any]:
        """Per repository: searches served to agents, tokens returned, tokens of the files behind
        them (``core.search.stats.RepoUsage``)."""
        from codesight_tui.core.search import stats

        return stats.usage(_settings(settings, {}).data_dir)

    # --- status (core.repo.report) ---------------------------------------------------------------
    def take_notices(self, reader: str = "answers") -> list[str]:
        """What happened to the index (rebuilt after damage, format change, read-only) that this
        reader ("answers" or "status") has not told yet (``core.search.status.Notices``)."""
        return self.context.notices.take(reader)

    def counts(self) -> dict[str, int]:
        """``files``, ``chunks``, ``vectors`` and ``pending`` (chunks without a vector); zeros
        before the first index. Cheap: for status lines and progress."""
        return report.counts(self.context)

    def last_indexed(self) -> float | None:
        """When a lexical pass last completed (a Unix time), or None."""
        return report.last_indexed(self.context)

    def indexing_now(self) -> bool:
        """Whether an indexer (this process's or another's) is writing this index now."""
        return report.indexing_now(self.context)

    def status(self, check_disk: bool = True) -> IndexStatus:
        """Counts, model, freshness and size of the index (``core.search.status.IndexStatus``); never
        loads the model. ``check_disk`` also compares the files on disk with the index."""
        return report.status(self.context, check_disk)

    def cache_status(self) -> dict[str, Any] | None:
        """Stats of this model's cache file, if it exists (never creates one or loads the model)."""
        return report.cache_status(self.context)

    def close(self) -> None:
        """Release the index and the model's child process, if any."""
        self.release_model()
        self.storage.close_store()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
