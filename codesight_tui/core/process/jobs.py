"""Background index runs of one repository: the one loop every surface uses, one per root in the
``core.apps.workspace.Workspace``.

An ``IndexJob`` runs ``CodeSight.index`` in a thread of its own and keeps what a caller needs to
say about it: the phase and its progress, the error in one line, whether the lexical phase has
committed (BM25 answers are complete from then on) and whether the run is over. It runs one run
at a time:

- ``start()`` starts a run unless one is going (which it then reuses);
- ``request()`` is for edits: a request during the lexical phase (seconds) is queued and runs
  next, with the paths of every request merged; one that comes later, during the embedding
  (minutes), cancels that run between batches and replaces it at once, and the new run waits
  for the writer lock its predecessor lets go. What was committed stays.

Another process's writer is not an error: ``busy`` says so, and search goes on over what that
writer has committed. ``on_idle`` hears how the last run ended once nothing is left to run (a run
that was replaced, or followed by a queued one, is not an ending anyone waits for).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from codesight_tui.core.errors import CodeSightError, IndexBusyError
from codesight_tui.core.index.indexer import IndexReport, Progress

if TYPE_CHECKING:
    from codesight_tui.core.engine import CodeSight

# The phases of a run after its lexical phase has committed.
LEXICAL_COMMITTED = ("distill", "static", "embed")
BUSY_MESSAGE = "another process is indexing this repository: searching what it has committed so far"


class Ending(NamedTuple):
    """How a job's last run ended: its report (None after an error; ``report.cancelled`` after
    ``cancel()``), the error in one line, and whether that error is another process's writer."""

    job: IndexJob
    report: IndexReport | None
    error: str | None
    busy: bool


class IndexJob:
    """Index runs of one engine, one at a time, in a background thread (see the module)."""

    def __init__(
        self,
        engine: CodeSight,
        *,
        embed: bool | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        on_idle: Callable[[Ending], None] | None = None,
        name: str | None = None,
    ) -> None:
        self.engine = engine
        self.embed = embed
        self.on_progress = on_progress
        self.on_idle = on_idle
        self.name = name or f"codesight-index-{engine.root.name}"
        self.phase = "idle"
        self.done = 0
        self.total = 0
        self.error: str | None = None
        self.busy = False
        self.report: IndexReport | None = None
        self.runs = 0
        self.lexical_done = threading.Event()
        self.finished = threading.Event()
        self.finished.set()
        self.lexical_done.set()
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._queued: tuple[bool, set[str] | None] | None = None  # (force, paths; None: the whole tree)
        self._replacing = False

    # --- asking for runs ------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return not self.finished.is_set()

    def start(self, *, force: bool = False) -> bool:
        """Start a run over the whole tree; False where one is already going (it is reused)."""
        with self._lock:
            if self.running:
                return False
            self._queued = (force, None)
            self._launch()
            return True

    def request(self, *, force: bool = False, paths: list[str] | None = None) -> None:
        """Index ``paths`` (None: walk the whole tree) now, or as soon as the run going allows."""
        with self._lock:
            wanted = None if paths is None else set(paths)
            if self._queued is not None:  # merge with what is waiting
                was_force, was_paths = self._queued
                merged = None if was_paths is None or wanted is None else was_paths | wanted
                self._queued = (was_force or force, merged)
            else:
                self._queued = (force, wanted)
            if not self.running:
                self._launch()
            elif self.phase in LEXICAL_COMMITTED:
                self._replacing = True  # the embedding may take minutes: cancel it, run the queue now
                self._cancel.set()

    def cancel(self, wait: float | None = None) -> bool:
        """Stop the run going (between batches; what it committed stays) and drop the queue.
        With ``wait``, wait that long for it; True when no run is going any more."""
        with self._lock:
            self._queued = None
            self._cancel.set()
        return self.finished.wait(wait) if wait is not None else not self.running

    def wait(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)

    @property
    def progress(self) -> str:
        return f"{self.phase} {self.done}/{self.total}"

    # --- the thread -----------------------------------------------------------------------------
    def _launch(self) -> None:
        self.finished.clear()
        self.lexical_done.clear()
        self.error, self.busy, self.phase, self.done, self.total = None, False, "scan", 0, 0
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._lock:
                if self._queued is None:
                    self.phase = "done"
                    ending = Ending(self, self.report, self.error, self.busy)  # before a new run resets them
                    self.lexical_done.set()
                    self.finished.set()
                    break
                (force, paths), self._queued = self._queued, None
                wait, self._replacing = self._replacing, False
                self._cancel.clear()
                self.phase, self.done, self.total = "scan", 0, 0
                self.runs += 1
            self._run(force, None if paths is None else sorted(paths), wait)
        if self.on_idle is not None:
            try:
                self.on_idle(ending)
            except Exception:  # noqa: BLE001 - a caller's hook never breaks the job
                pass  # a caller's hook never breaks the job

    def _run(self, force: bool, paths: list[str] | None, wait: bool) -> None:
        def progress(ev: Progress) -> None:
            self.phase, self.done, self.total = ev.phase, ev.done, ev.total
            if ev.phase in LEXICAL_COMMITTED:
                self.lexical_done.set()  # BM25 answers are complete from here on
            if self.on_progress is not None:
                self.on_progress(ev)

        self.error, self.busy, self.report = None, False, None
        try:
            # The static tier always (the fast answer); the full model's vectors where ``embed``.
            self.report = self.engine.index(
                progress, embed=self.embed, force=force, cancel=self._cancel, paths=paths, wait=wait, static=True
            )
        except IndexBusyError:
            self.busy, self.error = True, BUSY_MESSAGE
        except CodeSightError as exc:
            self.error = str(exc)
        except Exception as exc:  # never lose the caller to one repository  # noqa: BLE001
            self.error = f"indexing failed: {type(exc).__name__}: {exc}"
        finally:
            self.lexical_done.set()
