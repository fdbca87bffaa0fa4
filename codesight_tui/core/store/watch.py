"""Watch a repository and hand its changes over in batches: the one watcher behind the TUI,
``codesight watch`` and the MCP server's ``watch`` tool.

Events (inotify through watchfiles, or a stat poll where the tree has symlinked directories,
which inotify watchers follow into loops or out of the root) are filtered by the ignore rules and
coalesced per path: a path's changes within a batch collapse to one, deleted over added over
modified. A batch is handed over once the tree has been quiet for ``quiet`` seconds (at least
0.1; 0.3 s once it holds ``BULK_EVENTS`` changes), or ``max_delay`` seconds after its first
event, so a branch switch that rewrites thousands of files is one batch (two where the writer
stalls for longer than that mid-way), not thousands. Events that arrive while a batch is being handled make the
next batch.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from codesight_tui.core.ingest.walker import ALWAYS_SKIPPED_DIRS, IGNORE_FILES, IgnoreMatcher

ADDED, MODIFIED, DELETED = "added", "modified", "deleted"
_PRECEDENCE = {MODIFIED: 0, ADDED: 1, DELETED: 2}
MIN_QUIET = 0.1
BULK_EVENTS = 200  # a batch this big so far waits for BULK_QUIET seconds of silence
BULK_QUIET = 0.3
RETRY_FIRST, RETRY_MAX = 1.0, 60.0  # seconds before a failed batch is tried again, doubling


class RetryLater(Exception):
    """Raised by a batch handler that cannot take the batch now (another process holds the
    index's writer lock): the watcher keeps the batch and hands it over again later."""


class ChangeSource(Protocol):
    """What knows which files changed and are not indexed yet: a ``Watcher`` whose batches are
    indexed as it takes them, or a surface's own watcher and index runs (the TUI's)."""

    @property
    def running(self) -> bool: ...

    def unindexed(self) -> set[str] | None: ...


class ChangesSince:
    """A ``ChangeSource`` for a watcher whose batches are indexed later, by whoever takes them: the
    paths of each batch are kept (``take``, in the handler) until an index run that read them has
    committed (``indexed``)."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self._paths: set[str] = set()
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        return self.watcher.running

    def take(self, paths: Iterable[str]) -> None:
        with self._lock:
            self._paths.update(paths)

    def indexed(self, paths: Iterable[str]) -> None:
        with self._lock:
            self._paths.difference_update(paths)

    def unindexed(self) -> set[str] | None:
        seen = self.watcher.unindexed()
        if seen is None:
            return None
        with self._lock:
            return seen | self._paths


@dataclass
class Batch:
    """Changed paths (relative, POSIX) with what happened to each; ``full`` asks for a walk of the
    whole tree (the first run, or a poll that could not name the files)."""

    changes: dict[str, str] = field(default_factory=dict)
    events: int = 0  # raw events coalesced into it
    first_event: float = 0.0  # time.monotonic() of its first and last events
    last_event: float = 0.0
    full: bool = False

    @property
    def paths(self) -> list[str]:
        return sorted(self.changes)

    def add(self, path: str, kind: str, at: float) -> None:
        old = self.changes.get(path)
        if old is None or _PRECEDENCE[kind] > _PRECEDENCE[old]:
            self.changes[path] = kind
        self.events += 1
        self.first_event = self.first_event or at
        self.last_event = at

    def merge(self, older: Batch) -> None:
        """Take back a batch that could not be handled: this (newer) batch's kinds win."""
        for path, kind in older.changes.items():
            self.changes.setdefault(path, kind)
        self.events += older.events
        self.full |= older.full
        self.first_event = min(self.first_event or older.first_event, older.first_event or self.first_event)
        self.last_event = max(self.last_event, older.last_event)

    def __bool__(self) -> bool:
        return bool(self.changes) or self.full


_KINDS = {1: ADDED, 2: MODIFIED, 3: DELETED}  # watchfiles.Change values


class Watcher:
    """Runs two daemon threads: one collects events, one hands batches to ``handler(batch)``.

    ``handler`` runs in the watcher's own thread, one batch at a time; it may raise
    ``RetryLater``. ``on_event`` (optional) is called from the event thread whenever a change
    arrives, e.g. to interrupt long work the next batch should not wait behind. ``scan`` (for
    poll mode) returns ``{"added": [...], "modified": [...], "deleted": [...]}`` against the index.
    """

    def __init__(
        self,
        root: str | Path,
        handler: Callable[[Batch], None],
        *,
        exclude: list[str] | None = None,
        secret_files: tuple[str, ...] | None = None,
        quiet: float = 0.3,
        max_delay: float = 10.0,
        poll: bool = False,
        poll_every: float = 2.0,
        scan: Callable[[], dict[str, list[str]]] | None = None,
        on_event: Callable[[], None] | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        self.handler = handler
        self.quiet = max(MIN_QUIET, quiet)
        self.max_delay = max(self.quiet, max_delay)
        self.poll = poll
        self.poll_every = poll_every
        self.scan = scan
        self.on_event = on_event
        self.ignored = (
            IgnoreMatcher(self.root, exclude)
            if secret_files is None
            else IgnoreMatcher(self.root, exclude, secret_files)
        )
        self.batches = 0  # batches handled
        self.events = 0  # raw events kept (after the ignore rules)
        self.errors: list[str] = []
        self.failures = 0  # batches that failed and were kept to try again
        self.mode = "poll" if poll else "events"
        self._pending = Batch()
        self._handling: Batch | None = None  # the batch the handler has now
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._busy = threading.Event()  # a batch is being handled
        self._threads: list[threading.Thread] = []

    # --- life -----------------------------------------------------------------------------
    def start(self, full: bool = False) -> Watcher:
        """Start watching; ``full`` queues a walk of the whole tree first (catch up on what changed
        while nobody watched)."""
        if full:
            self.request_full()
        for target, name in ((self._collect, "codesight-watch-events"), (self._dispatch, "codesight-watch")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def request_full(self) -> None:
        """Queue a walk of the whole tree (an explicit re-index while watching)."""
        with self._cond:
            self._pending.full = True
            if not self._pending.first_event:
                self._pending.first_event = self._pending.last_event = time.monotonic() - self.quiet
            self._cond.notify_all()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout)

    @property
    def running(self) -> bool:
        return not self._stop.is_set() and any(t.is_alive() for t in self._threads)

    def unindexed(self) -> set[str] | None:
        """The paths changed since the handler last took them in: pending, or in the batch it
        has now; None where that is not known (a walk of the whole tree is due, or this watcher
        polls, and sees changes only every few seconds). Exact search reads these from disk."""
        with self._cond:
            handling = self._handling
            if self.poll or not self.running or self._pending.full or (handling is not None and handling.full):
                return None
            return set(self._pending.changes) | (set(handling.changes) if handling is not None else set())

    def idle(self) -> bool:
        """Nothing pending and no batch being handled."""
        with self._cond:
            return not self._pending and not self._busy.is_set()

    # --- events ---------------------------------------------------------------------------
    def _keep(self, rel: str) -> bool:
        parts = rel.split("/")
        if any(p in ALWAYS_SKIPPED_DIRS for p in parts):
            return False
        if parts[-1] in IGNORE_FILES:
            self.ignored.forget()  # the rules changed: read them again
            return True
        return not self.ignored(rel)

    def push(self, changes: list[tuple[str, str]]) -> None:
        """Queue ``(relative path, kind)`` changes (what the event thread does; also for tests)."""
        now = time.monotonic()
        kept = [(p, k) for p, k in changes if self._keep(p)]
        if not kept:
            return
        with self._cond:
            for p, k in kept:
                self._pending.add(p, k, now)
            self.events += len(kept)
            self._cond.notify_all()
        if self.on_event is not None:
            with contextlib.suppress(Exception):
                self.on_event()

    def _relative(self, raw: set[tuple[Any, str]]) -> list[tuple[str, str]]:
        out = []
        for change, p in raw:
            try:
                rel = Path(p).relative_to(self.root).as_posix()
            except ValueError:
                continue
            if rel != ".":
                out.append((rel, _KINDS.get(int(change), MODIFIED)))
        return out

    def _collect(self) -> None:
        if not self.poll:
            try:
                from watchfiles import watch

                # step: what watchfiles itself groups (50 ms); the batch window is ours (quiet).
                for raw in watch(
                    self.root,
                    stop_event=self._stop,
                    debounce=200,
                    step=50,
                    raise_interrupt=False,
                    ignore_permission_denied=True,
                    rust_timeout=500,
                    yield_on_timeout=False,
                ):
                    self.push(self._relative(raw))
                return
            except Exception as exc:  # no inotify (limits, odd file systems): poll instead  # noqa: BLE001
                self.errors.append(f"file events unavailable ({type(exc).__name__}: {exc}); polling instead")
                self.mode = "poll"
        self._poll()

    def _poll(self) -> None:
        seen: set[str] = set()
        while not self._stop.wait(self.poll_every):
            if self._busy.is_set() or self.scan is None:
                continue
            try:
                found = self.scan()
            except Exception:  # noqa: BLE001 - a poll that fails (a tree moving under it) is tried again
                continue
            now = {(p, kind) for kind, paths in found.items() for p in paths}
            paths = {p for p, _ in now}
            self.push([(p, {"added": ADDED, "modified": MODIFIED}.get(k, DELETED)) for p, k in now if p not in seen])
            seen = paths

    # --- batches --------------------------------------------------------------------------
    def _next_batch(self) -> Batch | None:
        with self._cond:
            while not self._pending and not self._stop.is_set():
                self._cond.wait(0.5)
            while not self._stop.is_set():
                now = time.monotonic()
                # Many changes at once are a bulk operation (a branch switch, a build, an unpacked
                # archive) that may pause between files: wait for a longer silence before acting.
                quiet = self.quiet if self._pending.events < BULK_EVENTS else max(self.quiet, BULK_QUIET)
                quiet_left = self._pending.last_event + quiet - now
                age_left = self._pending.first_event + self.max_delay - now
                if quiet_left <= 0 or age_left <= 0:
                    break
                self._cond.wait(min(quiet_left, age_left))
            if self._stop.is_set():
                return None
            batch, self._pending = self._pending, Batch()
            self._handling = batch
            self._busy.set()
            return batch

    def _dispatch(self) -> None:
        backoff = RETRY_FIRST
        while not self._stop.is_set():
            batch = self._next_batch()
            if batch is None:
                return
            try:
                self.handler(batch)
                self.batches += 1
                backoff = RETRY_FIRST
            except RetryLater:
                with self._cond:
                    self._pending.merge(batch)
                self._busy.clear()
                self._stop.wait(1.0)
                continue
            except Exception as exc:  # noqa: BLE001 - a failed batch is kept and retried (below)
                # A batch that failed (a full disk, a read-only index for a while) is kept and tried
                # again, later each time, until it goes through: its files must not stay stale for good.
                message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                self.errors.append(f"{message} (will retry in {backoff:g} s)")
                self.failures += 1
                with self._cond:
                    self._pending.merge(batch)
                self._busy.clear()
                self._stop.wait(backoff)
                backoff = min(RETRY_MAX, backoff * 2)
                continue
            finally:
                with self._cond:
                    self._handling = None
                self._busy.clear()
