"""The terminal UI's index runs, model and watchers: jobs started and queued per repository, their
progress in the status bar, the counts polled while another process writes, files that change."""

from __future__ import annotations

import contextlib
import gc
import time
from typing import TYPE_CHECKING

from textual import on, work
from textual.css.query import NoMatches
from textual.widgets import Input
from textual.worker import get_current_worker

from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.process.jobs import LEXICAL_COMMITTED, Ending, IndexJob
from codesight_tui.core.store.watch import ChangesSince
from codesight_tui.tui.base import AppBase
from codesight_tui.tui.messages import (
    FilesChanged,
    IndexFailed,
    IndexFinished,
    IndexIdle,
    IndexProgress,
    ModelFailed,
    ModelOff,
    ModelReady,
)
from codesight_tui.tui.widgets.results import ResultsList

if TYPE_CHECKING:
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.index.indexer import IndexReport, Progress
    from codesight_tui.core.store.watch import Batch, Watcher


class IndexPart(AppBase):
    """Index runs, the model's state, and the watchers."""

    def _counts(self) -> dict[str, int]:
        """Counts over every repository searched."""
        total = {"files": 0, "chunks": 0, "vectors": 0, "pending": 0}
        for engine in self.engines:
            for k, v in engine.counts().items():
                total[k] = total.get(k, 0) + v
        return total

    def _load_counts(self) -> None:
        if not any(e.has_index() for e in self.engines):
            return
        try:
            counts = self._counts()
            times = [t for t in (e.last_indexed() for e in self.engines) if t]
        except Exception:  # a corrupt index is rebuilt by the index worker  # noqa: BLE001
            return
        self.state.files, self.state.chunks, self.state.vectors = counts["files"], counts["chunks"], counts["vectors"]
        self.state.last_indexed = min(times) if times else None

    # --- indexing -----------------------------------------------------------------------
    def index_job(self, engine: CodeSight) -> IndexJob:
        """The ``IndexJob`` of ``engine``'s repository (the MCP server and the service use the same)."""
        return self.workspace.job(
            engine.root,
            on_progress=lambda ev, engine=engine: self._job_progress(engine, ev),
            on_idle=self._on_job_idle,
            name=f"codesight-tui-index-{engine.root.name}",
        )

    def _on_job_idle(self, ending: Ending) -> None:
        """On the job's thread: the UI decides what follows; an app that is closing only notes that
        its runs have stopped (its messages are no longer read)."""
        if self._stop.is_set():
            if not any(j.running for j in self.workspace.jobs()):
                self.index_idle.set()
            return
        self.post_message(IndexIdle(ending))

    def start_index(self, force: bool = False) -> None:
        """Index now: a request during a lexical phase (seconds) runs next, one during an embedding
        (minutes) replaces it at once (``IndexJob.request``). Changes the watchers named are looked
        at alone, in their repositories only; a first run, Ctrl+R or a rebuild walks every tree.
        Repositories are indexed one after another."""
        if force or not self._watched:
            todo: list[tuple[CodeSight, set[str] | None]] = [(e, None) for e in self.engines]
        else:
            todo = [(e, set(self._watched[e.root])) for e in self.engines if self._watched.get(e.root)]
        self._watched = {}
        for engine, paths in todo:
            _, was_force, was_paths = self._todo.get(engine.root, (engine, False, set()))
            merged = None if paths is None or was_paths is None else was_paths | paths
            self._todo[engine.root] = (engine, force or was_force, merged)
        self._indexing = True
        self.index_idle.clear()
        self._index_next()

    def _index_next(self) -> None:
        """Hand what is waiting to the job that runs, or start the next repository's."""
        going = next((j for j in self.workspace.jobs() if j.running), None)
        if going is None and self._todo:
            going = self.index_job(self._todo[next(iter(self._todo))][0])
            self._report = None
        if going is None:
            return
        wanted = self._todo.pop(going.engine.root, None)
        if wanted is not None:
            if not going.running or going.phase in LEXICAL_COMMITTED:
                self.state.phase = "scan"  # a new run now (one during an embedding replaces it)
            _, force, paths = wanted
            going.request(force=force, paths=None if paths is None else sorted(paths))

    def _job_progress(self, engine: CodeSight, ev: Progress) -> None:
        """A job's progress, on its thread: messages for the UI."""
        if self._stop.is_set():
            return
        if ev.phase == "scan":
            # Move every long-lived object out of the garbage collector's sight: a full collection
            # over them stalls every thread (85 ms here). Again once the vector store's libraries
            # are in, when the embedding starts.
            gc.freeze()
            # The scan says which files are stale until indexed (on a first run, all of them).
            if ev.paths and engine.is_indexed():
                self.post_message(FilesChanged(set(ev.paths), reindex=False))
        if ev.phase == "embed" and not ev.done:
            gc.freeze()
            if engine.embedder_loaded:  # the model is up: say so now, not when embedding ends
                self.post_message(ModelReady(engine.model_info.name))
        self.post_message(IndexProgress(ev.phase, ev.done, ev.total))

    @on(IndexIdle)
    def _job_idle(self, msg: IndexIdle) -> None:
        """A repository's job has nothing left to run: report a failure, go on to the next
        repository, or, after the last, finish (counts, and the model loaded for queries)."""
        ending: Ending = msg.ending
        if self._stop.is_set():
            return
        if ending.error is not None:
            self._todo.clear()  # as the run that failed would say for the next repository too
            self.index_idle.set()
            self._index_failed(IndexFailed(ending.error, busy=ending.busy))
            return
        if ending.report is not None and not ending.report.cancelled:
            self._report = ending.report
        if self._todo or any(j.running for j in self.workspace.jobs()):
            self._index_next()
            return
        if ending.report is None or ending.report.cancelled:
            self.index_idle.set()
            return
        self.finish_worker(self._report)

    @work(thread=True, exclusive=True, group="index", exit_on_error=False)
    def finish_worker(self, report: IndexReport | None) -> None:
        """Every repository's run is done: counts, and the model's state (loaded for queries)."""
        worker = get_current_worker()
        engine = self.engine
        try:
            self.post_message(IndexFinished(report, self._counts()))
            if engine.model_error:
                self.post_message(ModelFailed(engine.model_error))
            elif not engine.embedder_loaded and not engine.full_pass():
                self.post_message(ModelOff())  # full_model: the static tier answers; nothing to load
                return
            elif not engine.embedder_loaded:
                try:  # queries need the model even when nothing was left to embed
                    engine.embedder()
                except CodeSightError as exc:
                    self.post_message(ModelFailed(str(exc)))
                    return
            if not worker.is_cancelled and engine.embedder_loaded:
                self.post_message(ModelReady(engine.model_info.name))
        finally:
            if not any(j.running for j in self.workspace.jobs()) and not self._todo:
                self.index_idle.set()

    def index_stopped(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every index run to stop; True when none is going."""
        deadline = time.monotonic() + timeout
        return all(job.wait(max(0.0, deadline - time.monotonic())) for job in list(self.workspace.jobs()))

    def _cancel_jobs(self) -> None:
        """Stop every index run at its next batch boundary (what it committed stays)."""
        self._todo.clear()
        self.workspace.cancel_jobs()

    @on(IndexProgress)
    def _index_progress(self, msg: IndexProgress) -> None:
        with contextlib.suppress(NoMatches):  # a late message while the app is closing
            self._show_progress(msg)

    def _show_progress(self, msg: IndexProgress) -> None:
        st = self.state
        if msg.phase != st.phase:
            st.start_phase(msg.phase, self.clock(), msg.done)
            if msg.phase in LEXICAL_COMMITTED:  # the phase before committed: search again
                self._load_counts()
                self.run_search()
                if self.watch_files and not self._watching:  # edits count from now, not from the last vector
                    self.watch_worker()
        st.progress(msg.done, msg.total, self.clock())
        if msg.phase == "embed":
            st.vectors = max(st.vectors, st.chunks - (msg.total - msg.done))
            if msg.done and msg.done % 512 < 128 and self.query_one("#query", Input).value.strip():
                self.run_search()  # results improve as vectors arrive
        self.refresh_status()

    @on(IndexFinished)
    def _index_finished(self, msg: IndexFinished) -> None:
        if self._todo or any(j.running for j in self.workspace.jobs()):
            return  # asked for again meanwhile: that run's end will say so
        self._indexing = False
        gc.freeze()  # what the run left alive (caches, connections) lives on: keep it out of full GCs
        st = self.state
        st.phase = "idle"
        st.files, st.chunks, st.vectors = msg.counts["files"], msg.counts["chunks"], msg.counts["vectors"]
        st.last_indexed = self.clock()
        for changes in self._changes:  # what this run read; a batch taken since stays unindexed
            changes.indexed(st.stale)
        st.stale = set()
        for w in getattr(msg.report, "warnings", []):  # what the run met, a rebuilt index included
            self.notify(w, severity="warning", timeout=8)
        self.refresh_status()
        self.run_search()
        if self.watch_files and not self._watching:
            self.watch_worker()

    @on(IndexFailed)
    def _index_failed(self, msg: IndexFailed) -> None:
        self._indexing = False
        self.state.phase = "idle" if msg.busy else "failed"
        self.notify(msg.error, severity="warning" if msg.busy else "error", timeout=10)
        self.refresh_status()
        if msg.busy:
            # Another process writes this index (a TUI, `codesight index`, an MCP server): follow its
            # progress from the index itself, load the model for queries all the same, and notice
            # edits; our own run comes when the next change does.
            self._follow_writer = True
            if self.state.model_state not in ("ready", "failed"):
                self.model_worker()
            if self.watch_files and not self._watching:
                self.watch_worker()

    def _poll_counts(self) -> None:
        """While another process writes the index (or nobody does), what the status bar says comes
        from the index itself, every couple of seconds: its vectors arrive without a message."""
        if not self._indexing and self._follow_writer and not self._stop.is_set():
            self.counts_worker()

    @work(thread=True, exclusive=True, group="counts", exit_on_error=False)
    def counts_worker(self) -> None:
        try:
            counts = self._counts()
            busy = any(e.indexing_now() for e in self.engines)
        except Exception:  # a damaged or vanishing index: the next index run says what is wrong  # noqa: BLE001
            return
        self.call_from_thread(self._counts_read, counts, busy)

    def _counts_read(self, counts: dict[str, int], busy: bool) -> None:
        st = self.state
        changed = (counts["files"], counts["chunks"], counts["vectors"]) != (st.files, st.chunks, st.vectors)
        st.files, st.chunks, st.vectors = counts["files"], counts["chunks"], counts["vectors"]
        if not busy:
            self._follow_writer = False  # the other writer is done: the last counts stand
        if changed:
            self.refresh_status()
            if self.query_one("#query", Input).value.strip():
                self.run_search()

    @work(thread=True, exclusive=True, group="model", exit_on_error=False)
    def model_worker(self) -> None:
        """Load the model for queries when this app's own index run will not (another writer)."""
        engine = self.engine
        if not engine.full_pass():
            self.post_message(ModelOff())
            return
        try:
            engine.embedder()
        except CodeSightError as exc:
            self.post_message(ModelFailed(str(exc)))
            return
        if not self._stop.is_set():
            self.post_message(ModelReady(engine.model_info.name))

    @on(ModelReady)
    def _model_ready(self, msg: ModelReady) -> None:
        self.state.model_state = "ready"
        self.refresh_status()

    @on(ModelOff)
    def _model_off(self, msg: ModelOff) -> None:
        self.state.model_state = "off"
        self.refresh_status()
        self.run_search()

    @on(ModelFailed)
    def _model_failed(self, msg: ModelFailed) -> None:
        self.state.model_state = "failed"
        self.notify(f"{msg.error}. Falling back to lexical (BM25) search.", severity="warning", timeout=12)
        self.refresh_status()

    # --- freshness ------------------------------------------------------------------------
    def watch_worker(self) -> None:
        """Start noticing files changed on disk: the core's watcher (inotify, or a stat poll where
        the tree has symlinked directories), batched; its threads end with the app."""
        self._watching = True
        for engine in self.engines:
            self.workspace.watch(engine.root, self._watch_one)

    def _watch_one(self, engine: CodeSight) -> Watcher:
        def scan() -> dict[str, list[str]]:  # poll mode: what differs from the index, looked at only between index runs
            if not self.index_idle.is_set():
                return {}
            changed = engine.changed_files()
            return {"added": changed["added"], "modified": changed["modified"], "deleted": changed["deleted"]}

        def handle(batch: Batch) -> None:
            changes.take(batch.paths)  # read from disk by exact search until a run has indexed them
            self.post_message(FilesChanged(set(batch.paths), root=engine.root))

        watcher = engine.watcher(handle, quiet=0.2, scan=scan, poll_every=3.0)
        changes = ChangesSince(watcher)
        self._changes.append(changes)
        engine.track_changes(changes)
        return watcher.start()

    @on(FilesChanged)
    def _files_changed(self, msg: FilesChanged) -> None:
        self.state.stale |= msg.paths
        if self.hits:
            self.query_one(ResultsList).show(self.hits, self.state.stale, refresh=True)
        self.refresh_status()
        if not msg.reindex:
            return
        self._watched.setdefault(msg.root or self.root, set()).update(msg.paths)  # the next run looks at these only
        if self._reindex_timer is not None:
            self._reindex_timer.stop()
        self._reindex_timer = self.set_timer(0.1, self.start_index)
