"""The codesight terminal UI: query box, ranked hits, highlighted preview, live index status.

Heavy work (indexing, searching, loading the model, watching files) runs in thread workers that
never touch widgets: they post messages, and the ``@on`` handlers here own every state change.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, Static

from codesight_tui.core.apps.workspace import EngineOptions, Workspace
from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.modes import MODES
from codesight_tui.tui.base import KINDS, QUESTION
from codesight_tui.tui.indexing import IndexPart
from codesight_tui.tui.keys import bindings_of, in_force, keymap_problems
from codesight_tui.tui.navigation import NavigationPart
from codesight_tui.tui.opening import OpenPart
from codesight_tui.tui.screens.filter import FilterScreen
from codesight_tui.tui.screens.help import HelpScreen
from codesight_tui.tui.searching import SearchPart
from codesight_tui.tui.widgets.preview import Preview
from codesight_tui.tui.widgets.results import ResultsList
from codesight_tui.tui.widgets.status import IndexState, StatusBar

if TYPE_CHECKING:
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.fleet import Fleet
    from codesight_tui.core.index.indexer import IndexReport
    from codesight_tui.core.search.contract import Cancel, SearchResult
    from codesight_tui.core.store.watch import ChangesSince


class QueryInput(Input):
    """The query box keeps the focus, as in fzf: arrows and PgUp/PgDn move the selection in the
    results, Enter opens it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "app.open_editor", "Open", key_display="⏎", id="query.open"),
        Binding("down", "app.cursor('cursor_down')", "Next hit", show=False, id="query.next"),
        Binding("up", "app.cursor('cursor_up')", "Previous hit", show=False, id="query.previous"),
        Binding("pagedown", "app.cursor('page_down')", "Page down", show=False, id="query.page_down"),
        Binding("pageup", "app.cursor('page_up')", "Page up", show=False, id="query.page_up"),
    ]


class CodeSightApp(SearchPart, IndexPart, NavigationPart, OpenPart):
    """``CodeSightApp(root)``; tests may inject ``engine`` (a ``CodeSight``) and turn off the
    automatic index run and the file watcher.

    Every action is on a key that cannot be typed into a query by accident (Enter, Tab, Esc,
    Ctrl+…, Alt+…, Shift+arrows, F-keys): letters always reach the query box."""

    CSS_PATH = "app.tcss"
    TITLE = "codesight"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]  # noqa: RUF012 (Textual reads it per instance)

    # The footer shows these in this order and drops the last that do not fit: at 60 columns, Help
    # and Ask must still be there (issue 35).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help", id="app.help"),
        Binding("f3", "ask", "Ask", id="app.ask"),
        Binding("f5", "follow('callers')", "Callers", id="app.callers"),
        Binding("f6", "follow('callees')", "Callees", id="app.callees"),
        Binding("alt+left,ctrl+o", "go_back", "Back", key_display="^o", id="app.back"),
        Binding("ctrl+y", "copy_location", "Copy", show=False, id="app.copy_location"),
        Binding("alt+y", "copy_snippet", "Copy snippet", show=False, priority=True, id="app.copy_snippet"),
        # not in the footer (the status bar names the mode; F1 lists the key): at 80 columns the
        # footer cut the filter key's name off ("^f Filt")
        Binding("tab", "cycle_mode", "Mode", show=False, priority=True, id="app.cycle_mode"),
        # a question, an exact string or a regex (core.search.grep): the status bar names which
        Binding("ctrl+g", "cycle_kind", "Exact/regex", show=False, priority=True, id="app.cycle_kind"),
        Binding("ctrl+f", "filter", "Filter", id="app.filter"),
        Binding("shift+down", "scroll_preview(3)", "Scroll preview down", show=False, id="app.preview_down"),
        Binding("shift+up", "scroll_preview(-3)", "Scroll preview up", show=False, id="app.preview_up"),
        Binding("f2", "zoom_preview", "Zoom", show=False, id="app.zoom_preview"),
        Binding("alt+s", "toggle_scores", "Show scores", show=False, priority=True, id="app.toggle_scores"),
        Binding("ctrl+r", "reindex", "Re-index", show=False, id="app.reindex"),
        Binding("f4", "related", "More like this", show=False, id="app.related"),
        Binding("escape", "focus_query", "Back to the query", show=False, id="app.focus_query"),
        Binding("ctrl+c", "quit", "Quit", priority=True, id="app.quit"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="app.quit_alt"),
    ]

    def __init__(
        self,
        root: Path,
        *,
        engine: CodeSight | None = None,
        auto_index: bool = True,
        watch: bool = True,
        clock: Callable[[], float] = time.time,
        more_roots: Sequence[Path] = (),
        more_engines: list[CodeSight] | None = None,
        fleet: Fleet | None = None,
        workspace: Workspace | None = None,
    ) -> None:
        super().__init__()
        self.fleet = fleet  # a codesight_tui.Fleet searched beside the repositories (--store), or None
        self.root = Path(root).resolve()
        # The engines, their index jobs and watchers. The model runs in a child process: torch
        # never shares this process's GIL with the UI.
        self.workspace = workspace or Workspace(EngineOptions(model_process=True))
        for given in (engine, *(more_engines or ())):  # engines made by the caller (a test's embedder)
            if given is not None:
                self.workspace.adopt(given)
        # Further repositories searched beside the first: one ranked list, each hit labelled.
        self.more_roots = [Path(r).resolve() for r in more_roots]
        self.auto_index = auto_index
        self.watch_files = watch
        self.clock = clock
        self.state = IndexState()
        self.mode = "hybrid"
        self.kind = QUESTION  # or "exact", "regex": what the query box holds (Ctrl+G)
        self.glob = ""
        self.language = ""
        self.hits: list[SearchResult] = []
        self._search_running = False
        self._search_pending = False
        self._search_cancel: Cancel | None = None
        self._shown_key: tuple[str, str, str, str] | None = None  # (query, mode, glob, language) of the hits on screen
        self._reindex_timer: Timer | None = None
        self._todo: dict[
            Path, tuple[CodeSight, bool, set[str] | None]
        ] = {}  # repositories waiting for a run: (engine, force, paths or None)
        self._report: IndexReport | None = None  # the last repository's report, for IndexFinished
        self._indexing = False
        self._stop = threading.Event()
        self._watching = False
        self._changes: list[ChangesSince] = []
        self._watched: dict[Path, set[str]] = {}  # files the watchers saw change since the last index run
        self._told: set[str] = set()  # notices already shown
        self.index_idle = threading.Event()  # clear while an index run is going or asked for
        self._follow_writer = False  # another process holds the writer lock: poll the index's counts
        self._told_line = False  # that the editor cannot be sent to a line: said once
        self.index_idle.set()
        self.last_search_ms: float | None = None
        # Where F5/F6 came from: each step's query and highlighted row, for Back (Alt+Left).
        self.trail: list[tuple[str, int | None, str]] = []  # (query, highlighted row, the breadcrumb's word for it)
        self._restoring = False
        self._back_to: int | None = None  # the row to select when Back's list arrives

    def _handle_signals(self) -> None:
        """SIGTERM (a kill, a service manager) and SIGHUP (the ssh session closed) end the app the
        way Ctrl+Q does: the terminal leaves the alternate screen and mouse mode, the index stops
        at a batch boundary, and the exit code says which signal it was (128 + its number)."""
        import asyncio
        import signal

        try:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(sig, self._on_signal, int(sig))
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread (tests), or no signals
            pass

    def _on_signal(self, number: int) -> None:
        self._stop.set()
        self._cancel_jobs()
        self.exit(return_code=128 + number)

    def compose(self) -> ComposeResult:
        yield QueryInput(
            placeholder="Search: words, a question, or an identifier…  (F1 help)", id="query", select_on_focus=False
        )
        with Horizontal(id="main"):
            with Vertical(id="results-pane"):
                yield Static("", id="trail")
                yield ResultsList(id="results")
            yield Preview(id="preview")
        yield StatusBar(id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._handle_signals()
        self._apply_keymap(self.engine.settings.keymap)
        self.state.mode = self.mode = self.engine.settings.default_mode
        self.state.model = self.engine.model_info.name
        self._load_counts()
        self.query_one(Preview).clear("Type to search. Results appear as you type.")
        self.set_interval(1.0, self.refresh_status)
        self.set_interval(2.0, self._poll_counts)
        self.refresh_status()
        if self.auto_index:
            self.start_index()
        elif self.watch_files:
            self.watch_worker()
        self.query_one("#query").focus()

    def _apply_keymap(self, keymap: dict[str, str]) -> None:
        """The config's ``[keymap]`` in force, and a warning for each remap that cannot be."""
        if not keymap:
            return
        from codesight_tui.tui.screens.ask import AskScreen  # deferred as where Ask opens

        self.set_keymap(keymap)
        every = bindings_of(CodeSightApp, QueryInput, HelpScreen, FilterScreen, AskScreen)
        for problem in keymap_problems(keymap, every):
            self.notify(problem, severity="warning", timeout=15)

    def on_unmount(self) -> None:
        # However the app ends, background threads must stop: the watcher waits on this event, the
        # index jobs on their cancel, and the workers on their cancelled_event (set by cancel_all).
        self._stop.set()
        self.workspace.stop_watchers(timeout=0)
        self._cancel_jobs()
        self.workers.cancel_all()
        self._release_models()

    # --- actions ------------------------------------------------------------------------
    def action_focus_results(self) -> None:
        results = self.query_one(ResultsList)
        if self.hits:
            results.focus()
            if results.highlighted is None:
                results.highlighted = 0

    def action_cursor(self, where: str) -> None:
        """Move the selection in the results while the query box keeps the focus."""
        results = self.query_one(ResultsList)
        if results.option_count:
            getattr(results, f"action_{where}")()

    def action_scroll_preview(self, lines: int) -> None:
        self.query_one(Preview).scroll_lines(lines)

    def action_zoom_preview(self) -> None:
        """F2: the preview takes most of the screen, and back."""
        self.screen.toggle_class("-zoom")

    def action_toggle_scores(self) -> None:
        self.query_one(ResultsList).toggle_scores()

    def action_focus_query(self) -> None:
        self.query_one("#query").focus()

    def action_cycle_mode(self) -> None:
        """The ranked modes in turn; from an exact or regex search, back to a question first."""
        if self.kind == QUESTION:
            self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        self.kind = QUESTION
        self.state.mode = self.mode
        self.refresh_status()
        self.run_search()

    def action_cycle_kind(self) -> None:
        """A question (ranked), an exact string, a regex, in turn (smart case, as fzf's)."""
        self.kind = KINDS[(KINDS.index(self.kind) + 1) % len(KINDS)]
        self.state.mode = self.mode if self.kind == QUESTION else self.kind
        self.refresh_status()
        self.run_search()

    def action_filter(self) -> None:
        def apply(result: tuple[str, str] | None) -> None:
            if result is None:
                return
            glob, language = result
            if language:
                from codesight_tui.core.languages import normalize_language

                try:
                    language = normalize_language(language)
                except CodeSightError as exc:
                    self.notify(str(exc), severity="error", timeout=10)
                    return
            self.glob, self.language = glob, language
            self.state.filters = " ".join(
                x for x in (self.glob and f"glob:{self.glob}", self.language and f"lang:{self.language}") if x
            )
            self.query_one(ResultsList).filters = self.state.filters
            self.refresh_status()
            self.run_search()

        self.push_screen(FilterScreen(self.glob, self.language), apply)

    def action_reindex(self) -> None:
        self.notify("Re-indexing…")
        self.start_index()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The search view's keys (Tab cycles the mode, F3 asks, ...) belong to the search view:
        over the Ask view, Tab moves between its question and its sources."""
        searching = action in (
            "cycle_mode",
            "cycle_kind",
            "filter",
            "ask",
            "zoom_preview",
            "copy_location",
            "copy_snippet",
            "toggle_scores",
            "scroll_preview",
            "follow",
            "go_back",
        )
        if action == "go_back" and not self.trail:
            return False  # in the footer only while there is a way back: at 80 columns it has no room to spare
        return not (searching and self.screen is not self.screen_stack[0])

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        keymap = self.engine.settings.keymap
        groups = [
            ("Everywhere", in_force(bindings_of(CodeSightApp), keymap)),
            (
                "Moving through the results",
                in_force(bindings_of(QueryInput), keymap)
                + [Binding("ctrl+p", "", "Command palette: every action by name", id="app.command_palette")],
            ),
        ]
        self.push_screen(HelpScreen(groups))

    async def action_quit(self) -> None:
        self._stop.set()
        self._cancel_jobs()
        self.workers.cancel_all()
        self._release_models()
        self.exit(0)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):
            if command.title != "Keys":  # ours lists every binding with its id; one "Keys" only
                yield command
        yield SystemCommand(
            "Ask a question", "Answer from the code and documents with an LLM, citing them (F3)", self.action_ask
        )
        yield SystemCommand(
            "More like this", "Code like the selected hit: the query becomes like: path:line (F4)", self.action_related
        )
        yield SystemCommand(
            "Open in editor", "Open the selected hit in $VISUAL / $EDITOR (Enter)", self.action_open_editor
        )
        yield SystemCommand("Copy path:line", "Copy the selected hit's location (Ctrl+Y)", self.action_copy_location)
        yield SystemCommand("Copy snippet", "Copy the selected hit's code (Alt+Y)", self.action_copy_snippet)
        yield SystemCommand("Cycle search mode", "hybrid → bm25 → vector (Tab)", self.action_cycle_mode)
        yield SystemCommand("Exact or regex", "question → exact → regex (Ctrl+G)", self.action_cycle_kind)
        yield SystemCommand("Filter results", "By path glob and/or language (Ctrl+F)", self.action_filter)
        yield SystemCommand(
            "Zoom preview", "Give the preview most of the screen, and back (F2)", self.action_zoom_preview
        )
        yield SystemCommand("Show scores", "Show or hide each hit's fusion score (Alt+S)", self.action_toggle_scores)
        yield SystemCommand("Re-index", "Update the index now (Ctrl+R)", self.action_reindex)
        yield SystemCommand("Keys", "Show every key binding (F1)", self.action_help)


def run_app(root: Path, more_roots: Sequence[Path] = (), fleet: Fleet | None = None) -> int:
    """Run the TUI on ``root`` (and ``more_roots``, searched beside it as one ranked list);
    returns the exit code. Quits promptly even mid-index."""

    # Our entry points are guarded, so a big first index can spawn workers (lexical_processes).
    workspace = Workspace(EngineOptions(model_process=True, lexical_processes=True))
    for r in (root, *more_roots):  # engines first: they validate the paths and settings before the screen changes
        workspace.engine(Path(r).resolve())
    app = CodeSightApp(root, more_roots=list(more_roots), fleet=fleet, workspace=workspace)
    # A loop of our own: asyncio.run() would end by joining every thread worker (Python 3.11 waits
    # for ever), so a worker blocked in a model that is still loading kept the user 28-38 s.
    import asyncio

    loop = asyncio.new_event_loop()
    app.run(loop=loop)
    rc = app.return_code or 0  # 128 + the signal's number after SIGTERM or SIGHUP
    app._stop.set()
    # A thread cannot be killed: the index stops at its next batch boundary. Don't keep the user
    # waiting longer than a moment for that: SQLite (WAL) and LanceDB commits are atomic, so
    # leaving mid-batch loses that batch and nothing else.
    if not app.index_stopped(1.0):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc
