"""The codesight terminal UI: query box, ranked hits, highlighted preview, live index status.

Heavy work (indexing, searching, loading the model, watching files) runs in thread workers that
never touch widgets: they post messages, and the ``@on`` handlers here own every state change.
"""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, SuspendNotSupported, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, OptionList, Static
from textual.worker import get_current_worker

from codesight_tui.core.apps.workspace import EngineOptions, SearchRequest, Workspace
from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.modes import MODES, Vectors
from codesight_tui.core.process.jobs import LEXICAL_COMMITTED, Ending, IndexJob
from codesight_tui.core.text import printable
from codesight_tui.tui.editor import editor_argv, knows_line, viewer_argv
from codesight_tui.tui.keys import bindings_of, in_force, keymap_problems
from codesight_tui.tui.messages import (
    FilesChanged,
    IndexFailed,
    IndexFinished,
    IndexIdle,
    IndexProgress,
    ModelFailed,
    ModelOff,
    ModelReady,
    SearchFinished,
)
from codesight_tui.tui.screens.filter import FilterScreen
from codesight_tui.tui.screens.help import HelpScreen
from codesight_tui.tui.widgets.preview import LEX_FROM_TOP, Preview, render_hit
from codesight_tui.tui.widgets.results import ResultsList
from codesight_tui.tui.widgets.status import IndexState, StatusBar

if TYPE_CHECKING:
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.fleet import Fleet
    from codesight_tui.core.index.indexer import IndexReport, Progress
    from codesight_tui.core.search.navigate import Navigation
    from codesight_tui.core.search.searcher import SearchResult
    from codesight_tui.core.store.watch import Batch, Watcher

TOP_K = 50
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


BACK_HINT = "   Alt+← back"


def trail_text(steps: list[str], width: int) -> Text:
    """The breadcrumb's line within ``width`` cells: the way back is always said in full, and where
    the steps do not fit, the earliest give way first ("… › callers of x › callees of y")."""
    room = max(8, width - len(BACK_HINT))
    line = " › ".join(steps)
    while len(line) > room and len(steps) > 1:
        steps = steps[1:]
        line = "… › " + " › ".join(steps)
    if len(line) > room:
        line = "…" + line[len(line) - room + 1 :]
    return Text(line + BACK_HINT, no_wrap=True)


def navigation_hits(nav: Navigation, repo: str = "") -> list[SearchResult]:
    """A navigation answer as rows of the results list: a caller's or a reference's line, with the
    definition it is in as its name; a callee's definition, with its name."""
    from codesight_tui.core.search.searcher import SearchResult

    hits: list[SearchResult] = []
    for k, site in enumerate(nav.sites):
        shown = site.target if nav.action == "callees" and site.target else None
        path, line = (shown.path, shown.line) if shown else (site.path, site.line)
        around = shown or site.within
        scope = f"{around.kind} {around.qualified}" if around else ""
        if nav.action == "callees" and not shown:  # "name()": a bare lower-case word would read as a keyword
            scope = f"{site.name}() ({site.resolution})"
        hits.append(
            SearchResult(
                path, line, line, scope, "", 0.0, None, None, site.text, -(k + 1), definition=True, line=line, repo=repo
            )
        )
    return hits


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


class CodeSightApp(App[int]):
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
        self.glob = ""
        self.language = ""
        self.hits: list[SearchResult] = []
        self._search_running = False
        self._search_pending = False
        self._shown_key: tuple[str, str, str, str] | None = None  # (query, mode, glob, language) of the hits on screen
        self._reindex_timer: Timer | None = None
        self._todo: dict[
            Path, tuple[CodeSight, bool, set[str] | None]
        ] = {}  # repositories waiting for a run: (engine, force, paths or None)
        self._report: IndexReport | None = None  # the last repository's report, for IndexFinished
        self._indexing = False
        self._stop = threading.Event()
        self._watching = False
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

    # --- layout -------------------------------------------------------------------------
    def notify(self, message: str, *, markup: bool = False, **kwargs: Any) -> None:
        """Notices carry paths and error text (``[/].py``, ``[x]``): plain text unless asked, and
        never a control character (a file name may hold an escape sequence)."""
        super().notify(printable(message), markup=markup, **kwargs)

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

    def refresh_status(self) -> None:
        try:
            bar = self.query_one(StatusBar)
        except NoMatches:  # a timer or a late message while the app is closing
            return
        bar.render_state(self.state, self.clock())

    # --- searching ----------------------------------------------------------------------
    # Live search without a fixed debounce: a keystroke searches at once when no search is
    # running; keystrokes typed while one runs coalesce into a single follow-up for the newest
    # text. At most one search is ever in flight, and a result for older text is never shown.
    @on(Input.Changed, "#query")
    def _query_changed(self, event: Input.Changed) -> None:
        if self.trail and not self._restoring and follow_query(event.value) is None:
            self.trail.clear()  # a new search of one's own: the way here is no longer the way back
            self._show_trail()
        self.run_search()

    def type_into_query(self, character: str | None) -> None:
        """A key typed anywhere else lands in the query (``None``: Backspace)."""
        box = self.query_one("#query", Input)
        box.focus()
        if character is None:
            box.action_delete_left()
        else:
            box.insert_text_at_cursor(character)

    @property
    def search_busy(self) -> bool:
        """True while a search runs or waits to run."""
        return self._search_running or self._search_pending

    def _search_key(self) -> tuple[str, str, str, str]:
        return (self.query_one("#query", Input).value, self.mode, self.glob, self.language)

    def run_search(self) -> None:
        if self._search_running:
            self._search_pending = True
            return
        self._search_pending = False
        key = self._search_key()
        query = key[0]
        if not query.strip():
            self.hits = []
            self._shown_key = key
            self.query_one(ResultsList).show([], set())
            self.query_one(Preview).clear("Type to search.")
            return
        self._search_running = True
        self.search_worker(key)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def search_worker(self, key: tuple[str, str, str, str]) -> None:
        query, mode, glob, language = key
        t0 = time.perf_counter()
        hits: list[SearchResult] = []
        try:
            roots = (self.root, *self.more_roots)
            followed = follow_query(query)
            if followed is not None:
                action, target = followed
                root = next((r for r in roots if target.startswith(str(r) + "/")), self.root)
                nav = self.workspace.follow(
                    root, action, target, TOP_K * 4, glob=glob or None, language=language or None
                )
                if action == "callers" and not nav.sites:  # a class or a type: where it is used instead
                    nav = self.workspace.follow(
                        root, "references", target, TOP_K * 4, glob=glob or None, language=language or None
                    )
                hits = navigation_hits(nav, str(root) if len(roots) > 1 else "")
                words = next(w for a, w in FOLLOW.values() if a == action)
                self.call_from_thread(
                    self._name_step, query, f"{words} {nav.symbol.qualified if nav.symbol else nav.name}"
                )
                if not hits:
                    self.call_from_thread(
                        self.notify, f"no {nav.action} of {nav.name} in the index", severity="warning"
                    )
                return
            like = query.startswith(LIKE)  # "more like this": like: PATH:LINE, a file or a symbol
            hits = self.workspace.search(
                SearchRequest(
                    query[len(LIKE) :].strip() if like else query,
                    roots,
                    TOP_K,
                    mode,
                    glob or None,
                    language or None,
                    vectors=Vectors.LOADED,
                    like=like,
                    fleet=None if like else self.fleet,
                )
            )
            if len(roots) == 1 and (like or self.fleet is None):  # one repository: its rows carry no name
                for hit in hits:
                    hit.repo = ""
        except Exception as exc:  # CodeSightError or a bug: show it, keep the app alive  # noqa: BLE001
            self.call_from_thread(self.notify, str(exc), severity="error")
        finally:  # always report back, or the next keystroke would wait forever
            self.post_message(
                SearchFinished(
                    key,
                    hits,
                    (time.perf_counter() - t0) * 1000,
                    list(getattr(hits, "notices", [])),
                    list(getattr(hits, "retrievers", [])),
                )
            )

    @on(SearchFinished)
    def _search_finished(self, msg: SearchFinished) -> None:
        self._search_running = False
        try:
            self._show_search(msg)
        except NoMatches:  # a late answer while the app closes, or while another screen is up
            return

    def _show_search(self, msg: SearchFinished) -> None:
        for note in msg.notices:  # a rebuilt index, a model that can't load: said once, not per keystroke
            if note not in self._told:
                self._told.add(note)
                self.notify(note, severity="warning", timeout=8)
        if msg.key == self._search_key():
            refresh = msg.key == self._shown_key
            self.hits = msg.results
            self.last_search_ms = msg.elapsed_ms
            self.state.retrievers = tuple(msg.retrievers)
            self.refresh_status()
            self._shown_key = msg.key
            results = self.query_one(ResultsList)
            if results.show(msg.results, self.state.stale, refresh=refresh):
                if self._back_to is not None and msg.results:
                    results.highlighted = min(self._back_to, len(msg.results) - 1)
                if msg.results:
                    self._show_preview(results.highlighted)
                else:
                    self.query_one(Preview).clear("No results.")
            self._back_to = None
        if self._search_pending or msg.key != self._search_key():
            self.run_search()  # the text or mode changed meanwhile: search the newest

    def _show_preview(self, index: int | None) -> None:
        if index is None or index >= len(self.hits):
            return
        hit = self.hits[index]
        preview = self.query_one(Preview)
        if preview.current is hit:
            return  # already on show (the list was refreshed around the same hit)
        preview.select(hit)
        self.preview_worker(hit, hit.path in self.state.stale, self._shown_key[0] if self._shown_key else "")

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False)
    def preview_worker(self, hit: SearchResult, stale: bool, query: str = "") -> None:
        """Read and highlight off the event loop; the preview drops it if the selection moved on."""
        try:
            engine = self.engine_of(hit)
            document = engine.document_text(hit.path) if hit.is_document else None
            far = not hit.is_document and not hit.commit and (hit.line or hit.start_line) > LEX_FROM_TOP
            title, body, row = render_hit(
                self.root_of(hit),
                hit,
                stale,
                terms=self.engine.query_terms(query),
                document=document,
                anchors=engine.definition_lines(hit.path) if far else (),
            )
        except Exception as exc:  # never lose the app over a preview  # noqa: BLE001
            title, body, row = Text(f"{hit.path}: cannot show this file: {exc}", style="dim"), [], 0
        if not get_current_worker().is_cancelled:

            def paint() -> None:
                with contextlib.suppress(NoMatches):  # the app is closing
                    self.query_one(Preview).update(hit, title, body, row)

            with contextlib.suppress(RuntimeError):  # the app closed meanwhile
                self.call_from_thread(paint)

    @on(OptionList.OptionHighlighted, "#results")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._show_preview(event.option_index)

    @on(OptionList.OptionSelected, "#results")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.action_open_editor()

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
            self.post_message(FilesChanged(set(batch.paths), root=engine.root))

        return engine.watcher(handle, quiet=0.2, scan=scan, poll_every=3.0).start()

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
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        self.state.mode = self.mode
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

    def action_ask(self) -> None:
        """F3: the Ask view, with the query as the question."""
        from codesight_tui.tui.screens.ask import AskScreen

        def back(result: Any) -> None:
            if not result:
                return
            sources, index = result
            self.hits = list(sources)
            results = self.query_one(ResultsList)
            results.show(self.hits, self.state.stale)
            results.highlighted = index
            self._show_preview(index)
            results.focus()

        self.push_screen(AskScreen(self.query_one("#query", Input).value), back)

    def action_related(self) -> None:
        """Code like the selected hit: the query becomes ``like: path:line`` (editable; Esc and a
        new query go back to plain search)."""
        hit = self._current_hit()
        if hit is None:
            return
        where = hit.path if len(self.engines) == 1 else str(Path(hit.repo) / hit.path)
        box = self.query_one("#query", Input)
        box.value = f"{LIKE} {where}:{hit.line or hit.start_line}"
        box.cursor_position = len(box.value)
        box.focus()

    def action_follow(self, action: str) -> None:
        """F5 (callers, or uses where nothing calls it) and F6 (callees) of the selected hit's
        definition: the list shows them, and the breadcrumb says how you got here (Alt+Left: back)."""
        hit = self._current_hit()
        if hit is None or hit.is_document or hit.commit:
            if hit is not None:
                self.notify("Callers and callees follow code in a local repository.", severity="warning")
            return
        box = self.query_one("#query", Input)
        where = hit.path if len(self.engines) == 1 else str(Path(hit.repo) / hit.path)
        results = self.query_one(ResultsList)
        label = FOLLOW[f"{action}:"][1] + " " + (hit.name.split(", ")[0] or f"{hit.path}:{hit.line or hit.start_line}")
        self.trail.append((box.value, results.highlighted, label))
        self._set_query(f"{action}: {where}:{hit.line or hit.start_line}")
        results.focus()

    def action_go_back(self) -> None:
        """Back to the list the last F5/F6 came from, with its row selected."""
        if not self.trail:
            self.notify("Nothing to go back to: F5 and F6 follow the code from a hit.", severity="information")
            return
        query, row, _ = self.trail.pop()
        self._back_to = row
        self._set_query(query)

    def _set_query(self, value: str) -> None:
        box = self.query_one("#query", Input)
        self._restoring = True
        try:
            box.value = value
            box.cursor_position = len(value)
        finally:
            self._restoring = False
        self._show_trail()

    def _name_step(self, query: str, label: str) -> None:
        """The breadcrumb names the step by what it resolved to (a hit may hold several definitions)."""
        if self.trail and self.query_one("#query", Input).value == query:
            prev, row, _ = self.trail[-1]
            self.trail[-1] = (prev, row, label)
            self._show_trail()

    def _show_trail(self) -> None:
        """The breadcrumb: the search you started from, then each step (F5/F6) since."""
        self.refresh_bindings()
        with contextlib.suppress(NoMatches):
            crumb = self.query_one("#trail", Static)
            if not self.trail:
                crumb.display = False
                return
            first = self.trail[0][0]
            steps = [f'"{first}"' if follow_query(first) is None else first] + [label for _, _, label in self.trail]
            crumb.update(trail_text([printable(s) for s in steps], (crumb.size.width or self.size.width) - 2))
            crumb.display = True

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

    def _current_hit(self) -> SearchResult | None:
        hit = self.query_one(ResultsList).current
        if hit is None:
            self.notify("No result selected.", severity="warning")
        return hit

    def action_open_editor(self) -> None:
        hit = self._current_hit()
        if hit is None:
            return
        if hit.is_document:
            self._open_document(hit)
            return
        if hit.commit:  # a fleet hit: nothing on this machine to open
            self.notify(
                f"{hit.repo}@{hit.commit[:10]} {hit.path}:{hit.line or hit.start_line} is in the fleet store,"
                " not on this machine (Ctrl+Y copies where)",
                timeout=8,
            )
            return
        argv = editor_argv(
            str(self.root_of(hit) / hit.path), hit.line or hit.start_line, template=self.engine.settings.editor
        )
        error: Exception | None = None
        try:
            with self.suspend():
                try:
                    subprocess.call(argv)
                except Exception as exc:  # anything escaping here would leave the terminal broken  # noqa: BLE001
                    error = exc
        except SuspendNotSupported:
            self.notify(
                f"This terminal can't be suspended to run an editor. Location: {hit.path}:{hit.line or hit.start_line}",
                severity="warning",
                timeout=8,
            )
            return
        if error is not None:
            self.notify(f"could not run {argv[0]}: {error}", severity="error", timeout=8)
        elif not knows_line(self.engine.settings.editor) and not self._told_line:
            self._told_line = True  # once: whether the editor took +LINE, codesight cannot tell
            self.notify(
                f"{os.path.basename(argv[0])} was given +{hit.line or hit.start_line} {hit.path}, the vi"
                " convention. If it did not open at that line, set CODESIGHT_EDITOR to a template, e.g."
                " 'myeditor --line {line} {path}'",
                severity="warning",
                timeout=12,
            )

    def _open_document(self, hit: SearchResult) -> None:
        """A PDF, DOCX or PPTX goes to the system's viewer (a window of its own: the terminal is
        not suspended), at the hit's page where the viewer takes one."""
        argv = viewer_argv(
            str(self.root_of(hit) / hit.path), hit.page or hit.slide, template=self.engine.settings.viewer
        )
        try:
            subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            self.notify(
                f"could not run {argv[0]}: {exc.strerror or exc}. Location: {hit.location}"
                " (set CODESIGHT_VIEWER, e.g. 'zathura --page={page} {path}')",
                severity="error",
                timeout=10,
            )
            return
        self.notify(f"Opened {hit.location} with {os.path.basename(argv[0])}")

    def _copy(self, text: str, what: str) -> None:
        """Copy, and say truthfully where it went. OSC 52 cannot be confirmed, so the text is also
        kept in a file the message names (and shown, when it is one line)."""
        self.copy_to_clipboard(text)  # OSC 52: works over ssh, and in tmux with set-clipboard on
        local = False
        try:
            import pyperclip

            pyperclip.copy(text)
            local = True
        except Exception:  # no local clipboard (headless, ssh, no xclip): say so below  # noqa: BLE001
            pass
        kept = ""
        try:
            from codesight_tui.core.private import private_dir, private_file

            path = Path(self.engine.settings.data_dir).expanduser() / "last-copy.txt"
            private_dir(path.parent)
            private_file(path).write_text(text, encoding="utf-8")  # the owner's alone, as the index is
            kept = f" Also saved to {path}."
        except OSError:
            pass
        shown = f" {text}" if "\n" not in text and len(text) <= 200 else f" {what}"
        if local:
            self.notify(f"Copied to the clipboard:{shown}")
            return
        tmux = tmux_clipboard()
        if tmux is not None and tmux != "on":
            self.notify(
                f"Not copied: tmux's set-clipboard is {tmux!r}, so the terminal never sees it"
                f" (add `set -g set-clipboard on` to ~/.tmux.conf).{shown}.{kept}",
                severity="warning",
                timeout=12,
            )
        else:
            self.notify(
                f"Sent to the terminal clipboard (OSC 52), if your terminal accepts it:{shown}.{kept}", timeout=8
            )

    def action_copy_location(self) -> None:
        hit = self._current_hit()
        if hit is not None:
            path = hit.path if not getattr(hit, "repo", "") else str(self.root_of(hit) / hit.path)
            if hit.commit:  # a fleet hit: its repository and commit name it
                path = f"{hit.repo}@{hit.commit[:10]}/{hit.path}"
            where = f"{path}:{hit.line or hit.start_line}"
            if hit.page is not None or hit.slide is not None:  # spec.pdf p.12, deck.pptx slide 4
                where = hit.location.replace(hit.path, path, 1)
            self._copy(where, where)

    def action_copy_snippet(self) -> None:
        hit = self._current_hit()
        if hit is not None:
            self._copy(hit.content, f"snippet ({hit.end_line - hit.start_line + 1} lines)")

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
        yield SystemCommand("Filter results", "By path glob and/or language (Ctrl+F)", self.action_filter)
        yield SystemCommand(
            "Zoom preview", "Give the preview most of the screen, and back (F2)", self.action_zoom_preview
        )
        yield SystemCommand("Show scores", "Show or hide each hit's fusion score (Alt+S)", self.action_toggle_scores)
        yield SystemCommand("Re-index", "Update the index now (Ctrl+R)", self.action_reindex)
        yield SystemCommand("Keys", "Show every key binding (F1)", self.action_help)


def tmux_clipboard() -> str | None:
    """tmux's ``set-clipboard`` option when running inside tmux (``on`` passes OSC 52 on to the
    terminal; the default ``external`` drops it), else None."""
    if not os.environ.get("TMUX"):
        return None
    try:
        out = subprocess.run(
            ["tmux", "show-options", "-gv", "set-clipboard"], capture_output=True, text=True, timeout=1.0, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


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
