"""The ranked hit list: a virtualised OptionList, one line per hit."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import OptionList
from textual.widgets.option_list import Option

BADGES = {"both": ("BV", "bold green"), "bm25": ("B ", "cyan"), "vector": (" V", "magenta"), "symbol": ("S ", "bold yellow")}


def result_row(rank: int, hit, stale: bool = False) -> Text:
    """``rank  badge  path:line  scope  score`` as one non-wrapping line (``line``: where Enter opens)."""
    badge, style = BADGES[hit.found_by]
    row = Text(no_wrap=True, overflow="ellipsis")
    row.append(f"{rank:>2} ", style="dim")
    row.append(badge, style=style)
    row.append(f" {hit.path}", style="bold")
    row.append(f":{hit.line or hit.start_line}", style="yellow")
    if stale:
        row.append(" stale", style="bold red")
    if hit.scope:
        row.append(f"  {hit.scope}", style="italic")
    row.append(f"  {hit.score:.4f}", style="dim")
    return row


class ResultsList(OptionList):
    """Hits for the current query. j/k and arrows move; Esc goes back to the query."""

    BINDINGS = [
        Binding("o", "app.open_editor", "Open", id="results.open"),
        Binding("y", "app.copy_location", "Copy path:line", id="results.copy_location"),
        Binding("Y", "app.copy_snippet", "Copy snippet", id="results.copy_snippet"),
        Binding("j", "cursor_down", "Down", show=False, id="results.down"),
        Binding("k", "cursor_up", "Up", show=False, id="results.up"),
        Binding("question_mark", "app.help", "Help", show=False, id="results.help"),
        Binding("q", "app.quit", "Quit", show=False, id="results.quit"),
    ]

    def show(self, hits: list, stale: set[str]) -> bool:
        """List ``hits``; returns False (and repaints nothing) when they are the ones on show."""
        sig = [(h.chunk_id, h.score, h.start_line, h.end_line, h.path in stale) for h in hits]
        if sig == getattr(self, "_shown", None) and self.option_count == len(hits):
            self.hits = hits  # one more key, the same hits: nothing to repaint
            return False
        self.hits = hits
        self._shown = sig
        self.set_options(
            Option(result_row(i, h, h.path in stale), id=str(i - 1)) for i, h in enumerate(hits, start=1)
        )
        if hits:
            self.highlighted = 0
        return True

    @property
    def current(self):
        hits = getattr(self, "hits", [])
        if self.highlighted is None or not hits or self.highlighted >= len(hits):
            return None
        return hits[self.highlighted]
