"""The terminal UI's search: each keystroke's query searched in a worker (one at a time, the last
one kept), its hits shown with the selection kept, and the preview of the highlighted hit."""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.css.query import NoMatches
from textual.widgets import Input, OptionList
from textual.worker import get_current_worker

from codesight_tui.core.modes import Vectors, checked_mode
from codesight_tui.core.search.contract import (
    Cancel,
    Cancelled,
    Filters,
    GrepOptions,
    Lack,
    SearchRequest,
    SearchResponse,
)
from codesight_tui.tui.base import FOLLOW, GREP_LINES, KINDS, LIKE, QUESTION, TOP_K, AppBase, follow_query
from codesight_tui.tui.messages import (
    SearchFinished,
)
from codesight_tui.tui.navigation import navigation_hits
from codesight_tui.tui.widgets.preview import LEX_FROM_TOP, Preview, render_hit
from codesight_tui.tui.widgets.results import ResultsList

if TYPE_CHECKING:
    from codesight_tui.core.search.contract import SearchResult


def shown_notices(answer: SearchResponse) -> list[str]:
    """What the TUI tells of an answer, once each: what happened to the index, and what the answer
    lacks that the status bar does not show already (it shows the tiers and the model's loading)."""
    told_by_status = (Lack.FULL_UNUSED, Lack.MODEL_LOADING, Lack.PARTIAL_VECTORS)
    return answer.notices + [g.text for g in answer.gaps if g.lack not in told_by_status]


class SearchPart(AppBase):
    """Searching and previewing."""

    # --- searching ----------------------------------------------------------------------
    # Live search without a fixed debounce: a keystroke searches at once when no search is
    # running; a keystroke typed while one runs cancels it (at its next step: core.search.contract.Cancel),
    # and keystrokes coalesce into a single follow-up for the newest text. At most one search is
    # ever in flight, and a result for older text is never shown.
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
        mode = self.mode if self.kind == QUESTION else self.kind
        return (self.query_one("#query", Input).value, mode, self.glob, self.language)

    def run_search(self) -> None:
        if self._search_running:
            self._search_pending = True
            if self._search_cancel is not None:
                self._search_cancel.cancel()
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
        self._search_cancel = Cancel()
        self.search_worker(key, self._search_cancel)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def search_worker(self, key: tuple[str, str, str, str], cancel: Cancel) -> None:
        query, mode, glob, language = key
        t0 = time.perf_counter()
        hits: list[SearchResult] = []
        notices: list[str] = []
        retrievers: list[str] = []
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
            if mode in KINDS[1:]:  # an exact string or a regex: its matching lines, smart case
                options = GrepOptions(fixed=mode == "exact", case="smart")
                filters = Filters(glob or None, language or None)
                grep = SearchRequest(query, filters=filters, limit=GREP_LINES, grep=options, cancel=cancel)
                answer = self.workspace.search(grep, roots)
                hits, notices = answer.hits, shown_notices(answer)
                if len(roots) == 1:
                    for hit in hits:
                        hit.repo = ""
                return
            request = SearchRequest(
                "" if like else query,
                checked_mode(mode),
                Vectors.LOADED,
                Filters(glob or None, language or None),
                TOP_K,
                like=query[len(LIKE) :].strip() if like else None,
                cancel=cancel,
            )
            answer = self.workspace.search(request, roots, None if like else self.fleet)
            hits, notices, retrievers = answer.hits, shown_notices(answer), answer.retrievers
            if len(roots) == 1 and (like or self.fleet is None):  # one repository: its rows carry no name
                for hit in hits:
                    hit.repo = ""
        except Cancelled:
            pass
        except Exception as exc:  # CodeSightError or a bug: show it, keep the app alive  # noqa: BLE001
            self.call_from_thread(self.notify, str(exc), severity="error")
        finally:  # always report back, or the next keystroke would wait forever
            self.post_message(
                SearchFinished(
                    key,
                    hits,
                    (time.perf_counter() - t0) * 1000,
                    notices,
                    retrievers,
                    cancel.cancelled,
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
        if msg.key == self._search_key() and not msg.cancelled:
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
