"""Syntax-highlighted preview of the selected hit: only a window of lines is ever read into the
widget, the hit's lines are marked, the query's words are highlighted, and the view is centred on
the line Enter opens."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.syntax import Syntax
from rich.text import Text
from textual.containers import Vertical
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from codesight_tui.core.text import printable

if TYPE_CHECKING:
    from textual.app import ComposeResult

    from codesight_tui.core.search.contract import SearchResult

CONTEXT_BEFORE = 6
CENTRE_CONTEXT = 40  # lines read above the target line, so that a tall preview can centre it
CONTEXT_AFTER = 20
MAX_LINES = 400

LEXERS = {
    "pdf": "text",
    "docx": "text",
    "pptx": "text",
    "tsx": "tsx",
    "shell": "bash",
    "make": "make",
    "docker": "docker",
    "text": "text",
    "ini": "ini",
}


LEX_FROM_TOP = 4000  # a window starting within this many lines of the top is lexed from line 1


def read_lines(path: Path, first: int, last: int) -> list[str] | None:
    """Lines ``first..last`` of a file, streamed; None if unreadable."""
    out: list[str] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, start=1):
                if n > last:
                    break
                if n >= first:
                    out.append(line.rstrip("\r\n"))
    except OSError:
        return None
    return out


def read_window(
    path: Path, start: int, end: int, target: int = 0, text: str | None = None
) -> tuple[int, list[str]] | None:
    """Lines ``start - CONTEXT_BEFORE .. end + CONTEXT_AFTER`` (at most ``MAX_LINES``, always
    around ``target``) of a file, streamed so a huge file is never held whole; None if unreadable.
    ``text`` (a document's extracted text) is read instead of the file."""
    target = target or start
    first = max(1, min(start - CONTEXT_BEFORE, target - CENTRE_CONTEXT), target - MAX_LINES // 2)
    last = min(max(end, target) + CONTEXT_AFTER, first + MAX_LINES - 1)
    if text is not None:
        return first, text.split("\n")[first - 1 : last]
    out = read_lines(path, first, last)
    return None if out is None else (first, out)


TERM_STYLE = "bold reverse"


def _title(hit: SearchResult, target: int, stale: bool) -> Text:
    """The preview's title: where the hit is (a document's page or slide, else ``path:line`` and its
    lines), its definition, and whether the file changed on disk since it was indexed."""
    title = Text(no_wrap=True, overflow="ellipsis")
    if getattr(hit, "page", None) is not None or getattr(hit, "slide", None) is not None:
        title.append(printable(hit.location), style="bold")
        heading = hit.scope.split(": ", 1)[1] if ": " in hit.scope else ""  # a slide's title
        if heading:
            title.append(f"  {printable(heading)}")
        title.append("  (extracted text)", style="dim")
    else:
        title.append(f"{printable(hit.path)}:{target}", style="bold")
        title.append(f" ({hit.start_line}-{hit.end_line})", style="dim")
        if getattr(hit, "whole_file", False):
            what = "named file" if hit.grain == "file" else "module root"
            at = ", ".join(str(a) for a, _ in sorted(hit.parts))
            places = f", {len(hit.parts)} places: {at}" if len(hit.parts) > 1 else ""
            title.append(f"  ▤ {what}{places}", style="magenta")
        elif hit.name:
            title.append(f"  {printable(hit.name)}")
    if stale:
        title.append("  (changed on disk: showing indexed text)", style="bold red")
    return title


def render_hit(
    root: Path,
    hit: SearchResult,
    stale: bool = False,
    theme: str = "ansi_dark",
    terms: Sequence[str] = (),
    document: str | None = None,
    anchors: Sequence[int] = (),
) -> tuple[Text, list[Strip], int]:
    """(title, lines, target row) for a hit, all the expensive work done: Pygments runs once, and
    every line becomes a ``Strip`` with a line-number gutter, the hit's lines marked, the line
    Enter opens pointed at and ``terms`` highlighted. Meant for a worker thread; the widget then
    only ever paints the strips that are on screen. ``document`` is a PDF, DOCX or PPTX hit's
    extracted text (``CodeSight.document_text``), shown around the hit as plain text. ``anchors``:
    the file's definitions' first lines (``CodeSight.definition_lines``), where a window further
    down than ``LEX_FROM_TOP`` is lexed from."""
    target = hit.line or hit.start_line
    if getattr(hit, "commit", ""):
        window = None  # a fleet hit (core.fleet): its repository is not on this machine; the indexed text is
    elif document is not None:
        window = read_window(root / hit.path, hit.start_line, hit.end_line, target, text=document)
    elif getattr(hit, "is_document", False):
        window = None  # the file itself is binary: the indexed text is all there is to show
    else:
        window = None if stale else read_window(root / hit.path, hit.start_line, hit.end_line, target)
    if window is None or not window[1]:
        # Stale or unreadable on disk: show the indexed text, at its indexed lines.
        first, lines = hit.start_line, hit.content.split("\n")
    else:
        first, lines = window
    lexer = LEXERS.get(hit.language, hit.language or "text")
    # The lexer needs to know what the window starts inside: a window that opens in a docstring
    # was read as one long string, hit and all. Lines above it (up to LEX_FROM_TOP) are lexed too.
    # Further down, from the nearest definition's first line above it (never inside a string):
    # rich's render_lines at line 5,084, whose window opened in its docstring, was one colour.
    above: list[str] = []
    if window is not None and lexer != "text" and first > 1:
        start = 1 if first <= LEX_FROM_TOP else max((a for a in anchors if a <= first), default=0)
        if start and first - start <= LEX_FROM_TOP:
            above = read_lines(root / hit.path, start, first - 1) or []
    # Escape sequences in a file (OSC 52 writes the clipboard) are shown, never sent to the terminal.
    code = printable("\n".join(line.expandtabs(4) for line in above + lines))
    try:
        highlighted = Syntax(code, lexer, theme=theme, background_color="default").highlight(code)
    except Exception:  # an unknown lexer name: plain text is better than nothing  # noqa: BLE001
        highlighted = Text(code)
    if above:
        highlighted = Text("\n", end="").join(highlighted.split("\n", allow_blank=True)[len(above) :])
    console = Console(width=10_000, color_system="truecolor", force_terminal=True, legacy_windows=False)
    width = len(str(first + len(lines) - 1))
    # A hit for a whole file opens at its top and marks the chunks it holds; another hit, its lines.
    marked = hit.parts if getattr(hit, "whole_file", False) else ((hit.start_line, hit.end_line),)
    strips = []
    for i, line in enumerate(highlighted.split("\n", allow_blank=True)):
        n = first + i
        hit_line = any(a <= n <= b for a, b in marked)
        row = Text(no_wrap=True, end="")
        row.append(
            f"{n:>{width}} ", style="bold reverse yellow" if n == target else "bold yellow" if hit_line else "dim"
        )
        row.append("▶ " if n == target else "▌ " if hit_line else "  ", style="yellow")
        if n == target and hit.spans:  # an exact or regex hit: its matches, not words
            raw = lines[i] if i < len(lines) else ""
            for start, end in hit.spans:
                line.stylize(TERM_STYLE, len(raw[:start].expandtabs(4)), len(raw[:end].expandtabs(4)))
        elif terms:
            line.highlight_words(terms, TERM_STYLE, case_sensitive=False)
        row.append_text(line)
        strips.append(Strip(list(row.render(console)), row.cell_len))
    title = _title(hit, target, stale)
    return title, strips, max(0, min(len(strips) - 1, target - first))


class CodeView(ScrollView, can_focus=False):
    """Pre-rendered lines, painted a screen at a time (Textual's line API): a long preview costs
    the event loop nothing more than a short one."""

    DEFAULT_CSS = "CodeView { height: 1fr; scrollbar-size-horizontal: 0; }"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._strips: list[Strip] = []

    _focus_row = 0

    def set_lines(self, strips: list[Strip], focus_row: int = 0) -> None:
        """Show ``strips`` with row ``focus_row`` in the middle of the view."""
        self._strips = strips
        self._focus_row = focus_row
        width = max((s.cell_length for s in strips), default=0)
        self.virtual_size = Size(width, len(strips))
        self._centre()
        self.call_after_refresh(self._centre)  # again once the new size is laid out
        self.refresh()

    def _centre(self) -> None:
        height = self.scrollable_content_region.height
        self.scroll_to(0, max(0, self._focus_row - max(0, height - 1) // 2), animate=False, immediate=True)

    def on_resize(self) -> None:
        self._centre()

    def render_line(self, y: int) -> Strip:
        x, top = self.scroll_offset
        i = top + y
        width = self.scrollable_content_region.width
        if i >= len(self._strips):
            return Strip.blank(width, self.rich_style)
        return self._strips[i].crop_extend(x, x + width, self.rich_style).apply_style(self.rich_style)


class Preview(Vertical):
    """Shows one hit: ``current`` is set at once by ``select``; ``update`` paints what
    ``render_hit`` made for it (ignored if the selection has moved on meanwhile)."""

    DEFAULT_CSS = """
    Preview { height: 1fr; }
    Preview > #preview-title { height: 1; background: $boost; color: $text-muted; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="preview-title")
        yield CodeView(id="preview-body")

    current = None  # the hit selected for display, or None

    def clear(self, message: str = "") -> None:
        self.current = None
        self.query_one("#preview-title", Static).update("")
        text = Text(message, style="dim")
        self.query_one(CodeView).set_lines([Strip(list(text.render(Console())), text.cell_len)] if message else [])

    def select(self, hit: SearchResult | None) -> None:
        self.current = hit

    def update(self, hit: SearchResult, title: Text, strips: list[Strip], focus_row: int = 0) -> None:
        if hit is not self.current:
            return
        self.query_one("#preview-title", Static).update(title)
        self.query_one(CodeView).set_lines(strips, focus_row)

    def scroll_lines(self, n: int) -> None:
        """Scroll the code by ``n`` lines (negative: up)."""
        view = self.query_one(CodeView)
        view.scroll_to(y=max(0, view.scroll_offset.y + n), animate=False)

    def show(self, root: Path, hit: SearchResult, stale: bool = False, terms: Sequence[str] = ()) -> None:
        """Select and paint at once (on the calling thread)."""
        self.select(hit)
        self.update(hit, *render_hit(root, hit, stale, terms=terms))
