"""The terminal UI's navigation: ask (F3), more like this (F4), callers and callees (F5, F6) with a
breadcrumb, and back (Alt+Left)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.css.query import NoMatches
from textual.widgets import Input, Static

from codesight_tui.core.text import printable
from codesight_tui.tui.base import FOLLOW, LIKE, AppBase, follow_query
from codesight_tui.tui.widgets.results import ResultsList

if TYPE_CHECKING:
    from codesight_tui.core.search.contract import SearchResult
    from codesight_tui.core.search.navigate import Navigation


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
    from codesight_tui.core.search.contract import SearchResult

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


class NavigationPart(AppBase):
    """Following the code from a hit, and the way back."""

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
