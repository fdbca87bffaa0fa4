"""Index runs a command makes on the way: the progress a user sees (bars on a terminal, a plain
line a minute in a log), and the first index a search needs before it can answer."""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any, cast

from codesight_tui.cli.context import current, err

if TYPE_CHECKING:
    from types import TracebackType
    from typing import IO

    from rich.progress import Progress
    from typing_extensions import Self

    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.index.indexer import IndexReport
    from codesight_tui.core.index.indexer import Progress as IndexProgress


def progress_wanted(show: bool = True) -> bool:
    """Progress bars go to a terminal, or anywhere with CODESIGHT_PROGRESS=1."""
    return show and (bool(current().err_tty) or os.environ.get("CODESIGHT_PROGRESS") == "1")


class ProgressView:
    """Rich progress bars with ETA on stderr, one per phase; where stderr is no terminal (a log, a
    pipe), one plain line at least every ``PLAIN_EVERY_S`` seconds of a long run instead, so that
    `index --full > log 2>&1` is not silent for the 17 minutes it may take."""

    PLAIN_EVERY_S = 60.0

    def __init__(self, enabled: bool, plain: bool = False) -> None:
        self.enabled = enabled
        self.plain = plain and not enabled
        self.progress: Progress | None = None
        self.tasks: dict[str, Any] = {}  # rich's TaskIDs, by phase
        self.said_at = time.monotonic()
        self.phase_at: tuple[str, float, int] = ("", self.said_at, 0)  # a phase, when it began, its count then

    def __enter__(self) -> Self:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(
                TextColumn("{task.description:<10}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TimeElapsedColumn(),
                console=Console(file=cast("IO[str]", current().err)),
                transient=False,
            )
            self.progress.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.progress is not None:
            self.progress.__exit__(kind, exc, tb)

    def suite(self, name: str, n: int, total: int) -> None:
        """A multi-repository run moves on to the next repository."""
        if self.progress is None or total < 2:
            return
        if "suite" not in self.tasks:
            self.tasks["suite"] = self.progress.add_task("repos", total=total)
        self.progress.update(self.tasks["suite"], completed=n - 1, description=f"{name[:10]:<10}")

    def __call__(self, ev: IndexProgress) -> None:
        if self.plain:
            self._line(ev)
        if self.progress is None:
            return
        label = {
            "scan": "scanning",
            "lexical": "lexical",
            "distill": "static model (once)",
            "static": "static vectors",
            "embed": "vectors",
        }[ev.phase]
        if ev.phase not in self.tasks:
            self.tasks[ev.phase] = self.progress.add_task(label, total=ev.total or None)
        self.progress.update(self.tasks[ev.phase], completed=ev.done, total=max(ev.total, 1))

    def _line(self, ev: IndexProgress) -> None:
        now = time.monotonic()
        if ev.phase != self.phase_at[0]:
            self.phase_at = (ev.phase, now, ev.done)
        if now - self.said_at < self.PLAIN_EVERY_S or not ev.total:
            return
        self.said_at = now
        _, began, at_start = self.phase_at
        rate = (ev.done - at_start) / max(now - began, 1e-6)
        left = f", about {max(1, round((ev.total - ev.done) / rate / 60))} min left" if rate > 0 else ""
        label = {"embed": "full model's vectors", "static": "static vectors", "lexical": "files"}.get(
            ev.phase, ev.phase
        )
        err(f"{label}: {ev.done:,}/{ev.total:,} ({ev.done / ev.total:.0%}){left}")


def run_index(
    cs: CodeSight,
    *,
    embed: bool,
    force: bool = False,
    wait: bool = False,
    show: bool = True,
    static: bool | None = None,
) -> IndexReport:
    cancel = threading.Event()
    with ProgressView(progress_wanted(show), plain=show) as view:
        try:
            return cs.index(progress=view, embed=embed, force=force, cancel=cancel, wait=wait, static=static)
        except KeyboardInterrupt:
            cancel.set()
            raise


def ready(cs: CodeSight, mode: str, full: bool) -> None:
    """Index a repository that has none yet before searching it (what a first search needs): the
    lexical phase and the static tier for a hybrid search, which answers from those in seconds;
    the full model's vectors only for ``--full`` or vector mode, or where the static tier is off.
    An index made without the static tier (a first search in bm25 mode, ``index --no-embed``) gets
    it before a hybrid search, which would otherwise load the full model to answer from BM25."""
    from codesight_tui.core.errors import IndexBusyError

    static = mode == "hybrid" and cs.static_path() is not None
    if cs.is_indexed():
        if not static or full or cs.static_ready() or cs.counts()["vectors"]:
            return
        err(f"no static vectors for {cs.root} yet: computing them first")
    else:
        err(f"no index for {cs.root} yet: indexing first")
    try:
        report = run_index(cs, embed=mode == "vector" or (mode == "hybrid" and (full or not static)), static=static)
    except IndexBusyError:
        # Another process is building it: search what it has committed so far.
        err("another codesight process is indexing this repository: searching what it has indexed so far")
    else:
        for w in report.warnings:
            err(w)
