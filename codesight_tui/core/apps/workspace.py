"""One workspace behind every surface: the engines of the repositories a process serves, their
index jobs and watchers, the full model's warm-up, and the one search entry point.

The CLI, the TUI, the MCP server and the warm service each hold a ``Workspace`` and keep no
registry of their own: an engine is made here, once per root, with the options the process was
started with (``EngineOptions``), never changed after. A search is a ``SearchRequest`` over some
roots (and a fleet store); the workspace answers it with the same ``SearchResponse`` every surface
renders in its own way, hits and what the answer lacks alike.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import CodeSightError, UsageError
from codesight_tui.core.modes import checked_mode
from codesight_tui.core.process.jobs import IndexJob
from codesight_tui.core.search.navigate import MAX_SITES

if TYPE_CHECKING:
    from codesight_tui.core.config import Settings
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.fleet import Fleet
    from codesight_tui.core.repo.retrieval import Several
    from codesight_tui.core.search.contract import RepoState, SearchRequest, SearchResponse
    from codesight_tui.core.search.navigate import Navigation
    from codesight_tui.core.search.status import IndexStatus
    from codesight_tui.core.store.watch import Watcher


@dataclass(frozen=True)
class EngineOptions:
    """How this process's engines run, fixed when each is made.

    ``model_process``: the full model in a child process shared by every engine (long-lived
    processes: the GIL stays the UI's, and a model that dies takes no engine with it).
    ``lexical_processes``: big change sets chunked in spawned worker processes, which re-import
    the main module: only for guarded entry points (``codesight``, ``python -m ...``).
    ``resident_bm25``: BM25 answered from memory once the FTS index is read, for a process
    that answers many queries. ``exclude``: extra gitignore-style patterns every engine skips (``codesight
    index --exclude``)."""

    model_process: bool = False
    lexical_processes: bool = False
    resident_bm25: bool = False
    exclude: tuple[str, ...] = ()


class Workspace:
    """Engines per root, their index jobs and watchers, the model's warm-up (see the module).
    Thread-safe: the MCP server's tools and the service's requests run in parallel threads.

    ``reload_on``: a stamp of what the engines were made from (the service: the config file's
    mtime and size); when it changes, every engine is closed and made afresh on next use."""

    def __init__(self, options: EngineOptions | None = None, *, reload_on: Callable[[], object] | None = None) -> None:
        self.options = options or EngineOptions()
        self._lock = threading.RLock()
        self._engines: dict[Path, CodeSight] = {}
        self._jobs: dict[Path, IndexJob] = {}
        self._watchers: dict[Path, Watcher] = {}
        self._fleets: dict[tuple[str, str | None], Fleet] = {}
        self._model_thread: threading.Thread | None = None
        self._reload_on = reload_on
        self._stamp = reload_on() if reload_on is not None else None

    # --- fleet stores ---------------------------------------------------------------------------
    def fleet(self, uri: str, endpoint: str | None = None, settings: Settings | None = None) -> Fleet:
        """The fleet store at ``uri`` (``endpoint``: an S3-compatible one), made once and kept
        with the engines: a warm process's searches reuse its tables and model."""
        from codesight_tui.core.fleet import Fleet  # deferred: LanceDB's remote tables, for fleet users only

        with self._lock:
            found = self._fleets.get((uri, endpoint))
            if found is None:
                found = self._fleets[(uri, endpoint)] = Fleet(uri, endpoint, settings)
            return found

    # --- engines ------------------------------------------------------------------------------
    def engine(self, root: Path | str) -> CodeSight:
        """The engine of ``root``, made on first use with this workspace's options."""
        from codesight_tui.core.engine import CodeSight  # deferred: the engine imports this module's users

        root = Path(root)
        with self._lock:
            if self._reload_on is not None:
                stamp = self._reload_on()
                if stamp != self._stamp:
                    self._close_all()
                    self._stamp = stamp
            cs = self._engines.get(root)
            if cs is None:
                opts = self.options
                cs = self._engines[root] = CodeSight(
                    root,
                    exclude=list(opts.exclude) or None,
                    model_process=opts.model_process,
                    lexical_processes=opts.lexical_processes,
                    resident_bm25=opts.resident_bm25,
                )
            return cs

    def adopt(self, engine: CodeSight) -> CodeSight:
        """Serve ``engine`` (made by the caller: a test's, with its own embedder) for its root."""
        with self._lock:
            return self._engines.setdefault(engine.root, engine)

    def roots(self) -> list[Path]:
        with self._lock:
            return list(self._engines)

    def engines(self) -> list[CodeSight]:
        with self._lock:
            return list(self._engines.values())

    # --- index jobs ---------------------------------------------------------------------------
    def job(self, root: Path, **made_with: Any) -> IndexJob:
        """The one ``IndexJob`` of ``root``'s engine (``made_with``: its callbacks and name, used
        when it is first made)."""
        with self._lock:
            job = self._jobs.get(root)
            if job is None:
                engine = self.engine(root)
                job = self._jobs[root] = IndexJob(engine, **made_with)
            return job

    def job_of(self, root: Path) -> IndexJob | None:
        with self._lock:
            return self._jobs.get(root)

    def running(self, root: Path) -> IndexJob | None:
        job = self.job_of(root)
        return job if job is not None and job.running else None

    def jobs(self) -> list[IndexJob]:
        with self._lock:
            return list(self._jobs.values())

    def start_index(self, root: Path, force: bool = False) -> tuple[IndexJob, bool]:
        """A background index run of ``root``: ``(job, started)``; a run already going is reused.
        A watched repository is indexed by its watcher (asked for a full walk) instead."""
        with self._lock:
            job = self.job(root)
            if job.running:
                return job, False
            watcher = self._watchers.get(root)
            if watcher is not None and watcher.running and not force:
                watcher.request_full()
                told = IndexJob(job.engine)  # nothing to wait for: the watcher's batch is the run
                told.phase = "watch"
                return told, False
            return job, job.start(force=force)

    def cancel_jobs(self, wait: float | None = None) -> None:
        jobs = self.jobs()
        for job in jobs:
            job.cancel()
        if wait is not None:
            for job in jobs:
                job.wait(wait)

    # --- watchers -----------------------------------------------------------------------------
    def watch(self, root: Path, start: Callable[[CodeSight], Watcher] | None = None) -> Watcher:
        """``root``'s running watcher, or a new one: ``start(engine)`` (default: the engine's own
        ``watch()``, which indexes each batch). A start that fails raises and keeps nothing."""
        with self._lock:
            watcher = self._watchers.get(root)
            if watcher is not None and watcher.running:
                return watcher
            cs = self.engine(root)
            watcher = self._watchers[root] = start(cs) if start is not None else cs.watch()
            return watcher

    def watcher(self, root: Path) -> Watcher | None:
        with self._lock:
            return self._watchers.get(root)

    def watching(self, root: Path) -> bool:
        watcher = self.watcher(root)
        return watcher is not None and watcher.running

    def unwatch(self, root: Path, timeout: float = 2) -> Watcher | None:
        """Stop watching ``root``; the watcher that was stopped, or None."""
        with self._lock:
            watcher = self._watchers.pop(root, None)
        if watcher is not None:
            watcher.stop(timeout=timeout)
        return watcher

    def stop_watchers(self, timeout: float = 2) -> None:
        with self._lock:
            watchers = list(self._watchers.values())
        for watcher in watchers:
            watcher.stop(timeout=timeout)

    # --- the full model -----------------------------------------------------------------------
    def warm_model(self, cs: CodeSight) -> None:
        """Load the full model in the background, once (a first search never waits for it)."""
        with self._lock:
            if cs.embedder_loaded or cs.model_error or (self._model_thread and self._model_thread.is_alive()):
                return
            if not cs.full_pass():  # full_model: no full vectors here, so no query of it (a CPU)
                return

            def load() -> None:
                try:
                    cs.embedder()
                except CodeSightError:
                    pass  # model_error says why, and answers say they are BM25 + static

            self._model_thread = threading.Thread(target=load, name="codesight-model", daemon=True)
            self._model_thread.start()

    def model_state(self, cs: CodeSight) -> str:
        name = cs.model_info.name
        if cs.embedder_loaded:
            return f"{name} (ready)"
        if cs.model_error:
            return f"{name} (failed: {cs.model_error}; BM25 only)"
        return f"{name} (loading)" if self._model_thread else f"{name} (not loaded yet)"

    # --- search -------------------------------------------------------------------------------
    def searcher(self, roots: Sequence[Path], fleet: Fleet | None = None) -> Several:
        """The ``Searcher`` over ``roots``' indexes and a fleet store, as one ranked list."""
        from codesight_tui.core.repo.retrieval import Several

        engines = [self.engine(root) for root in roots]
        if engines:
            settings = engines[0].settings
        elif fleet is not None:
            settings = fleet.settings
        else:
            raise UsageError("nothing to search: no repository and no fleet store")
        return Several(engines, fleet, checked_mode(settings.default_mode))

    def search(self, request: SearchRequest, roots: Sequence[Path], fleet: Fleet | None = None) -> SearchResponse:
        """The answer to ``request`` over ``roots`` and ``fleet`` (``searcher``), each hit labelled
        with its repository; each repository's ``RepoState`` says where its index run is."""
        response = self.searcher(roots, fleet).search(request)
        response.repos = [self._with_progress(state) for state in response.repos]
        return response

    def _with_progress(self, state: RepoState) -> RepoState:
        """``state`` with where this process's index run of it is, if one runs."""
        job = self.running(Path(state.repo))
        return replace(state, indexing=f"{job.phase} {job.done}/{job.total}") if job is not None else state

    def follow(self, root: Path, action: str, target: str, limit: int = MAX_SITES, **where: str | None) -> Navigation:
        """Definitions, references, callers or callees of ``target`` in ``root``'s index
        (``CodeSight.follow``; ``where``: its glob and language)."""
        return self.engine(root).follow(action, target, limit, **where)

    def status(self, root: Path, check_disk: bool = True) -> IndexStatus:
        """``root``'s index: counts, model, freshness, size (``CodeSight.status``)."""
        return self.engine(root).status(check_disk)

    # --- the end --------------------------------------------------------------------------------
    def _close_all(self) -> None:
        self.stop_watchers(timeout=2)
        self.cancel_jobs(wait=2)
        for cs in self._engines.values():
            cs.close()
        self._watchers.clear()
        self._jobs.clear()
        self._engines.clear()
        self._fleets.clear()

    def close(self) -> None:
        """Stop every watcher and index run (each at its next batch) and close every engine."""
        with self._lock:
            self._close_all()
