"""The state every part of the terminal UI shares: the engines, the hits, the index's status,
and the small helpers each part calls (``AppBase``, which ``CodeSightApp`` is made of)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.css.query import NoMatches
from textual.timer import Timer
from textual.widgets import Input

from codesight_tui.core.apps.workspace import Workspace
from codesight_tui.core.text import printable
from codesight_tui.tui.widgets.results import ResultsList
from codesight_tui.tui.widgets.status import IndexState, StatusBar

if TYPE_CHECKING:
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.fleet import Fleet
    from codesight_tui.core.index.indexer import IndexReport
    from codesight_tui.core.search.contract import Cancel, SearchResult
    from codesight_tui.core.store.watch import ChangesSince


TOP_K = 50
GREP_LINES = 1000  # matching lines an exact or regex search lists
QUESTION = "question"
KINDS = (QUESTION, "exact", "regex")  # what the query box holds: a question, an exact string, a regex
LIKE = "like:"  # a query that starts so asks for code like a place: like: src/app.py:42
# Queries that follow the code from a place (F5, F6): "callers: src/app.py:42", "callees: ...",
# "refs: ..." (what calls it, what it calls, where it is named), with their breadcrumb's words.
FOLLOW = {
    "callers:": ("callers", "callers of"),
    "callees:": ("callees", "callees of"),
    "refs:": ("references", "uses of"),
}


def follow_query(query: str) -> tuple[str, str] | None:
    """``(action, target)`` for a query that follows the code, else None."""
    for prefix, (action, _) in FOLLOW.items():
        if query.startswith(prefix):
            return action, query[len(prefix) :].strip()
    return None


class AppBase(App[int]):
    """The app's shared state and helpers; ``CodeSightApp`` sets the state in its ``__init__``."""

    # Set in CodeSightApp.__init__, shared by every part of the app.
    fleet: Fleet | None
    root: Path
    workspace: Workspace
    more_roots: list[Path]
    auto_index: bool
    watch_files: bool
    clock: Callable[[], float]
    state: IndexState
    mode: str
    kind: str
    glob: str
    language: str
    hits: list[SearchResult]
    _search_running: bool
    _search_pending: bool
    _search_cancel: Cancel | None
    _shown_key: tuple[str, str, str, str] | None
    _reindex_timer: Timer | None
    _todo: dict[Path, tuple[CodeSight, bool, set[str] | None]]
    _report: IndexReport | None
    _indexing: bool
    _stop: threading.Event
    _watching: bool
    _changes: list[ChangesSince]  # what each watcher has seen and no run has indexed (exact search reads it)
    _watched: dict[Path, set[str]]
    _told: set[str]
    index_idle: threading.Event
    _follow_writer: bool
    _told_line: bool
    last_search_ms: float | None
    trail: list[tuple[str, int | None, str]]
    _restoring: bool
    _back_to: int | None

    if TYPE_CHECKING:  # what one part calls of another: each is defined in its own part

        def run_search(self) -> None: ...

        def _show_preview(self, index: int | None) -> None: ...

        def _name_step(self, query: str, label: str) -> None: ...

        def _show_trail(self) -> None: ...

        def action_open_editor(self) -> None: ...

    # --- engine -------------------------------------------------------------------------
    @property
    def engine(self) -> CodeSight:
        return self.workspace.engine(self.root)

    @property
    def engines(self) -> list[CodeSight]:
        """Every repository's engine, the first one's first."""
        return [self.engine, *(self.workspace.engine(r) for r in self.more_roots)]

    def _release_models(self) -> None:
        """A model batch in flight ends now, not when it is done."""
        for engine in self.workspace.engines():
            engine.release_model()

    def root_of(self, hit: SearchResult) -> Path:
        return Path(hit.repo) if getattr(hit, "repo", "") and not getattr(hit, "commit", "") else self.root

    def engine_of(self, hit: SearchResult) -> CodeSight:
        """The engine whose index holds ``hit`` (several repositories: the one of its repo)."""
        if getattr(hit, "repo", ""):
            for engine in self.engines:
                if engine.root == Path(hit.repo):
                    return engine
        return self.engine

    # --- layout -------------------------------------------------------------------------
    def notify(self, message: str, *, markup: bool = False, **kwargs: Any) -> None:
        """Notices carry paths and error text (``[/].py``, ``[x]``): plain text unless asked, and
        never a control character (a file name may hold an escape sequence)."""
        super().notify(printable(message), markup=markup, **kwargs)

    def refresh_status(self) -> None:
        try:
            bar = self.query_one(StatusBar)
        except NoMatches:  # a timer or a late message while the app is closing
            return
        bar.render_state(self.state, self.clock())

    def _current_hit(self) -> SearchResult | None:
        hit = self.query_one(ResultsList).current
        if hit is None:
            self.notify("No result selected.", severity="warning")
        return hit

    def _set_query(self, value: str) -> None:
        box = self.query_one("#query", Input)
        self._restoring = True
        try:
            box.value = value
            box.cursor_position = len(value)
        finally:
            self._restoring = False
        self._show_trail()
