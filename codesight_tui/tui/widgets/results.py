"""The ranked hit list: a virtualised OptionList, one line per hit.

Typing always reaches the query, as in fzf: the list binds no printable key, and a letter typed
while it has focus goes back to the query box. The selected hit is kept by identity when the list
is refreshed (vectors arriving, a re-index, coming back from the editor)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual import events
from textual.binding import BindingType
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from codesight_tui.core.text import printable

if TYPE_CHECKING:
    from textual.timer import Timer

    from codesight_tui.core.search.contract import SearchResult
    from codesight_tui.tui.app import CodeSightApp

BADGES = {
    "both": ("BV", "bold green"),
    "bm25": ("B ", "cyan"),
    "vector": (" V", "magenta"),
    "static": (" v", "magenta"),
    "symbol": ("S ", "bold yellow"),
    "grep": ("G ", "bold red"),
}  # v: the static tier's vectors


# The marker of a file-level hit (SearchResult.grain), where a chunk's name would be.
WHOLE_FILE = {"module": "▤ module", "file": "▤ file"}
NAME_ROOM = 16  # cells a hit's name keeps beside a path that must shrink


def _short_path(path: str, room: int) -> str:
    """Shorten leading directories to their first letter (``src/flask/sansio/app.py`` ->
    ``s/f/sansio/app.py``), from the left, until the path fits ``room`` cells or only the last
    directory and the file name are left whole."""
    parts = path.split("/")
    i = 0
    while len("/".join(parts)) > room and i < len(parts) - 2:
        parts[i] = parts[i][:1] if not parts[i].startswith(".") else parts[i][:2]
        i += 1
    return "/".join(parts)


def result_row(rank: int, hit: SearchResult, stale: bool = False, width: int = 0, scores: bool = False) -> Text:
    """``rank  badge  path:line  name`` as one non-wrapping line (``line``: where Enter opens).

    With a ``width``, the path's leading directories shrink first, so that the definition's name
    stays readable at 80 columns; the fusion score shows only when ``scores`` is on."""
    badge, style = BADGES[hit.found_by]
    if hit.found_by == "both" and not getattr(hit, "vector_rank", None) and getattr(hit, "static_rank", None):
        # BM25 and the static tier's vectors, not the full model's: a small v, as the README says
        badge = "Bv"
    loc = f":{hit.line or hit.start_line}"
    name = hit.name
    page, slide = getattr(hit, "page", None), getattr(hit, "slide", None)
    whole = getattr(hit, "grain", "chunk") != "chunk"
    if whole:  # a file-level hit: the whole file (a module's root, or a file the question names)
        name = ""
    elif page is not None:  # a PDF: its page, not a line of the extracted text
        loc, name = f" p.{page}", ""
    elif slide is not None:  # a deck: the slide, and its title as the name
        loc, name = f" slide {slide}", name.split(": ", 1)[1] if ": " in name else ""
    elif getattr(hit, "language", "") == "docx":  # Word has no stable pages: its heading says where
        loc = " §"
    name = printable(name)
    code = ""
    # No definition here: its first line of code says what it is. A file-level hit says so instead,
    # and how many places in the file it holds.
    if not name and page is None and slide is None and not whole:
        code = printable(next((ln.strip() for ln in (getattr(hit, "content", "") or "").split("\n") if ln.strip()), ""))
        code = code[:120]
    places = f" {len(hit.parts)} places" if whole and len(hit.parts) > 1 else ""
    shown = name or code or (WHOLE_FILE[hit.grain] + places if whole else "")
    # The path has the room it needs first; the name gets what is left, and at least NAME_ROOM
    # cells where the path must shrink (as fzf and Telescope abbreviate only what does not fit).
    tail = (
        (" stale" if stale else "")
        + (f" +{hit.translations}" if getattr(hit, "translations", 0) else "")
        + (f"  {shown[:NAME_ROOM]}" if shown else "")
        + (f"  {hit.score:.4f}" if scores else "")
    )
    path = printable(hit.path)
    repo = f"{printable(Path(hit.repo).name)}:" if getattr(hit, "repo", "") else ""  # several repositories: whose hit
    if getattr(hit, "commit", ""):  # a fleet hit: its repository there, at its commit
        repo = f"{printable(hit.repo)}@{hit.commit[:7]}:"
    if width:
        path = _short_path(path, max(12, width - 6 - len(repo) - len(loc) - len(tail)))
    row = Text(no_wrap=True, overflow="ellipsis")
    row.append(f"{rank:>2} ", style="dim")
    row.append(badge, style=style)
    if repo:
        row.append(f" {repo}", style="cyan")
    row.append(f" {path}" if not repo else path, style="bold")
    row.append(loc, style="yellow")
    if stale:
        row.append(" stale", style="bold red")
    if getattr(hit, "translations", 0):
        row.append(f" +{hit.translations}", style="dim")  # the same page in other languages
    if whole:
        row.append(f"  {WHOLE_FILE[hit.grain]}", style="bold magenta")
        row.append(places, style="dim")  # the places in it that matched, held by this one hit
    elif name:
        row.append(f"  {name}", style="italic")
    elif code:
        row.append(f"  {code}", style="dim")
    if scores:
        row.append(f"  {hit.score:.4f}", style="dim")
    return row


def grep_row(rank: int, hit: SearchResult, first_of_file: bool, count: int, width: int = 0) -> Text:
    """A matching line of an exact or regex search, grouped by file: the file's first line names
    the file and how many of its lines match; the rest show only their line number. The matches
    in the line are marked."""
    text = printable(hit.match_text.strip())
    lead = len(hit.match_text) - len(hit.match_text.lstrip())
    row = Text(no_wrap=True, overflow="ellipsis")
    row.append(f"{rank:>2} ", style="dim")
    row.append("G ", style=BADGES["grep"][1])
    if first_of_file:
        path = printable(hit.path)
        repo = f"{printable(Path(hit.repo).name)}:" if hit.repo else ""
        tag = f" ({count})"
        if width:
            path = _short_path(path, max(12, width // 2 - len(repo) - len(tag)))
        if repo:
            row.append(repo, style="cyan")
        row.append(path, style="bold")
        row.append(tag, style="dim")
    else:
        row.append("  ↳", style="dim")
    row.append(f":{hit.line}  ", style="yellow")
    at = len(row.plain)
    row.append(text)
    for start, end in hit.spans:  # offsets in the line before its indent was cut
        if end > lead:
            row.stylize("bold red", at + max(0, start - lead), at + max(0, end - lead))
    return row


def hit_identity(hit: SearchResult) -> tuple[str, str, str | int]:
    """What makes two hits of two searches "the same result" for the cursor: the file and the
    definition (chunk ids change when a file is re-indexed, line numbers when it is edited)."""
    return (hit.repo, hit.path, hit.scope or hit.start_line)


FIRST_ROWS = 100  # rows listed at once: more than a screen holds
MORE_ROWS = 150  # rows added after each repaint (about 35 ms of Textual's measuring)


class ResultsList(OptionList):
    """Hits for the current query. Arrows, PgUp/PgDn move; Enter opens; any printable key goes
    back to the query box."""

    BINDINGS: ClassVar[list[BindingType]] = []  # Up/Down/PgUp/PgDn/Home/End and Enter come from OptionList

    hits: Sequence[SearchResult] = ()
    show_scores = False
    filters = ""  # "glob:src/ lang:python", as the app has them set

    def show(self, hits: list[SearchResult], stale: set[str], refresh: bool = False) -> bool:
        """List ``hits``; returns False (and repaints nothing) when they are the ones on show.
        A ``refresh`` (the same query searched again) keeps the highlighted hit highlighted when
        it is still in the list, and says so when the list changed under it; a new query starts
        at the top."""
        sig = [(h.chunk_id, h.path, h.score, h.start_line, h.end_line, h.path in stale) for h in hits]
        if (
            sig == getattr(self, "_shown", None)
            and getattr(self, "_listed", -1) == len(hits)
            and self.filters == getattr(self, "_shown_filters", None)
        ):
            self.hits = hits  # one more key, the same hits: nothing to repaint
            return False
        keep, before = (self.current, self.highlighted) if refresh else (None, None)
        old = [hit_identity(h) for h in self.hits]
        want = hit_identity(keep) if keep is not None else None
        found = next((i for i, h in enumerate(hits) if hit_identity(h) == want), None) if want else None
        self.hits = hits
        self._shown = sig
        self._shown_filters = self.filters
        self._stale = stale
        self._fill(found or 0)
        # The filter is said where the results are: at 80 columns the status bar can lose it.
        where = f" · {self.filters}" if self.filters else ""
        if hits and hits[0].spans:  # an exact or regex search: lines, in files
            files = len({(h.repo, h.path) for h in hits})
            counted = f"{len(hits)} line{'s' if len(hits) != 1 else ''} in {files} file{'s' if files != 1 else ''}"
        else:
            counted = f"{len(hits)} result{'s' if len(hits) != 1 else ''}"
        self.border_title = f"{counted}{where}" if hits else ""
        if hits:
            index = found or 0
            self.highlighted = index
            # The selection kept, but the list shown from its top wherever the selection still fits
            # on screen: new hits that came in above it must not stay scrolled out of sight.
            self.scroll_home(animate=False, immediate=True)
            self.call_after_refresh(self.scroll_to_highlight)
            # The user had moved off the top and the list changed under the cursor: say so.
            if before and old and [hit_identity(h) for h in hits[: len(old)]] != old[: len(hits)]:
                self.border_subtitle = "updated: re-ranked" if found is not None else "updated: selection gone"
                if self._subtitle_timer is not None:
                    self._subtitle_timer.stop()
                self._subtitle_timer = self.set_timer(4.0, self._clear_subtitle)
        return True

    _subtitle_timer: Timer | None = None

    def action_cursor_up(self) -> None:
        """Up stops at the first hit: wrapping round to the last one puts the worst hit under the
        cursor of someone who only meant to go back to the best."""
        if self.highlighted:
            super().action_cursor_up()

    def action_cursor_down(self) -> None:
        """Down stops at the last hit, for the same reason."""
        if self.highlighted is None or self.highlighted < self.option_count - 1:
            super().action_cursor_down()

    def _clear_subtitle(self) -> None:
        self.border_subtitle = ""

    _generation = 0  # each fill's; a later fill stops the rows an earlier one still had to add

    def _fill(self, at_least: int = 0) -> None:
        """List the hits: the first ``FIRST_ROWS`` (and up to ``at_least``) at once, the rest
        ``MORE_ROWS`` at a time after each repaint. Measuring a thousand rows held the event loop
        for 170-190 ms, and the next key waited; a newer list stops an older one's rows."""
        width = self.scrollable_content_region.width or self.size.width or 80
        stale: set[str] = getattr(self, "_stale", set())
        hits = list(self.hits)
        counts: dict[tuple[str, str], int] = {}
        for h in hits:
            if h.spans:
                counts[h.repo, h.path] = counts.get((h.repo, h.path), 0) + 1

        def rows(lo: int, hi: int) -> list[Option]:
            out = []
            for i in range(lo + 1, min(hi, len(hits)) + 1):
                h = hits[i - 1]
                if h.spans:  # a matching line: grouped under its file
                    first = i == 1 or (hits[i - 2].repo, hits[i - 2].path) != (h.repo, h.path)
                    out.append(Option(grep_row(i, h, first, counts[h.repo, h.path], width), id=str(i - 1)))
                else:
                    out.append(Option(result_row(i, h, h.path in stale, width, self.show_scores), id=str(i - 1)))
            return out

        self._generation += 1
        generation = self._generation
        upto = max(FIRST_ROWS, at_least + 1)
        self.set_options(rows(0, upto))
        self._listed = len(hits)

        def more(at: int) -> None:
            if generation != self._generation or at >= len(hits):
                return
            self.add_options(rows(at, at + MORE_ROWS))
            self.call_after_refresh(more, at + MORE_ROWS)

        self.call_after_refresh(more, upto)

    def toggle_scores(self) -> None:
        self.show_scores = not self.show_scores
        keep = self.highlighted
        self._fill(keep or 0)
        if self.hits and keep is not None:
            self.highlighted = min(keep, len(self.hits) - 1)

    def on_resize(self, event: events.Resize) -> None:
        if self.hits:
            keep = self.highlighted
            self._fill(keep or 0)
            if keep is not None:
                self.highlighted = min(keep, len(self.hits) - 1)

    def on_key(self, event: events.Key) -> None:
        # fzf: whatever is typed goes to the query, wherever the focus is.
        if event.is_printable and event.character or event.key == "backspace":
            event.stop()
            event.prevent_default()
            cast("CodeSightApp", self.app).type_into_query(event.character if event.key != "backspace" else None)

    @property
    def current(self) -> SearchResult | None:
        hits = self.hits
        if self.highlighted is None or not hits or self.highlighted >= len(hits):
            return None
        return hits[self.highlighted]
