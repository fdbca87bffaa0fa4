"""Syntax-highlighted preview of the selected hit: only a window of lines is ever read into the
widget, the hit's lines are marked, and the view starts just above the hit."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.syntax import Syntax
from rich.text import Text
from textual.containers import Vertical
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

CONTEXT_BEFORE = 6
CONTEXT_AFTER = 20
MAX_LINES = 400

LEXERS = {"tsx": "tsx", "shell": "bash", "make": "make", "docker": "docker", "text": "text", "ini": "ini"}


def read_window(path: Path, start: int, end: int) -> tuple[int, list[str]] | None:
    """Lines ``start - CONTEXT_BEFORE .. end + CONTEXT_AFTER`` (capped) of a file, streamed so a
    huge file is never held whole; None if unreadable."""
    first = max(1, start - CONTEXT_BEFORE)
    last = min(end + CONTEXT_AFTER, first + MAX_LINES - 1)
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
    return first, out


def render_hit(root: Path, hit, stale: bool = False, theme: str = "ansi_dark") -> tuple[Text, list[Strip]]:
    """(title, lines) for a hit, all the expensive work done: Pygments runs once, and every line
    becomes a ``Strip`` with a line-number gutter, the hit's lines marked. Meant for a worker
    thread; the widget then only ever paints the strips that are on screen."""
    window = None if stale else read_window(root / hit.path, hit.start_line, hit.end_line)
    if window is None or not window[1]:
        # Stale or unreadable on disk: show the indexed text, at its indexed lines.
        first, lines = hit.start_line, hit.content.split("\n")
    else:
        first, lines = window
    lexer = LEXERS.get(hit.language, hit.language or "text")
    code = "\n".join(line.expandtabs(4) for line in lines)
    try:
        highlighted = Syntax(code, lexer, theme=theme, background_color="default").highlight(code)
    except Exception:  # an unknown lexer name: plain text is better than nothing
        highlighted = Text(code)
    console = Console(width=10_000, color_system="truecolor", force_terminal=True, legacy_windows=False)
    width = len(str(first + len(lines) - 1))
    strips = []
    for i, line in enumerate(highlighted.split("\n", allow_blank=True)):
        n = first + i
        hit_line = hit.start_line <= n <= hit.end_line
        row = Text(no_wrap=True, end="")
        row.append(f"{n:>{width}} ", style="bold yellow" if hit_line else "dim")
        row.append("▌ " if hit_line else "  ", style="yellow")
        row.append_text(line)
        strips.append(Strip(list(row.render(console)), row.cell_len))
    title = Text(no_wrap=True, overflow="ellipsis")
    title.append(f"{hit.path}:{hit.start_line}-{hit.end_line}", style="bold")
    if hit.scope:
        title.append(f"  {hit.scope}")
    if stale:
        title.append("  (changed on disk: showing indexed text)", style="bold red")
    return title, strips


class CodeView(ScrollView, can_focus=False):
    """Pre-rendered lines, painted a screen at a time (Textual's line API): a long preview costs
    the event loop nothing more than a short one."""

    DEFAULT_CSS = "CodeView { height: 1fr; }"

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._strips: list[Strip] = []

    def set_lines(self, strips: list[Strip]) -> None:
        self._strips = strips
        width = max((s.cell_length for s in strips), default=0)
        self.virtual_size = Size(width, len(strips))
        self.scroll_to(0, 0, animate=False)
        self.refresh()

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

    def compose(self):
        yield Static(id="preview-title")
        yield CodeView(id="preview-body")

    current = None  # the hit selected for display, or None

    def clear(self, message: str = "") -> None:
        self.current = None
        self.query_one("#preview-title", Static).update("")
        text = Text(message, style="dim")
        self.query_one(CodeView).set_lines([Strip(list(text.render(Console())), text.cell_len)] if message else [])

    def select(self, hit) -> None:
        self.current = hit

    def update(self, hit, title: Text, strips: list[Strip]) -> None:
        if hit is not self.current:
            return
        self.query_one("#preview-title", Static).update(title)
        self.query_one(CodeView).set_lines(strips)

    def show(self, root: Path, hit, stale: bool = False) -> None:
        """Select and paint at once (on the calling thread)."""
        self.select(hit)
        self.update(hit, *render_hit(root, hit, stale))
