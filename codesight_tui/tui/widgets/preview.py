"""Syntax-highlighted preview of the selected hit: only a window of lines is ever read into the
widget, the hit's lines are marked, and the view starts just above the hit."""

from __future__ import annotations

from pathlib import Path

from rich.syntax import Syntax
from rich.text import Text
from textual.containers import VerticalScroll
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


class Preview(VerticalScroll):
    """Shows one hit. ``show(root, hit, stale)``."""

    DEFAULT_CSS = """
    Preview { height: 1fr; }
    Preview > #preview-title { height: 1; background: $boost; color: $text-muted; padding: 0 1; }
    """

    def compose(self):
        yield Static(id="preview-title")
        yield Static(id="preview-body")

    current = None  # the hit on show, or None

    def clear(self, message: str = "") -> None:
        self.current = None
        self.query_one("#preview-title", Static).update("")
        self.query_one("#preview-body", Static).update(Text(message, style="dim"))

    def show(self, root: Path, hit, stale: bool = False, theme: str = "ansi_dark") -> None:
        self.current = hit
        window = None if stale else read_window(root / hit.path, hit.start_line, hit.end_line)
        if window is None or not window[1]:
            # Stale or unreadable on disk: show the indexed text, at its indexed lines.
            first, lines = hit.start_line, hit.content.split("\n")
        else:
            first, lines = window
        lexer = LEXERS.get(hit.language, hit.language or "text")
        syntax = Syntax(
            "\n".join(lines), lexer, theme=theme, line_numbers=True, start_line=first,
            highlight_lines=set(range(hit.start_line, hit.end_line + 1)), word_wrap=False,
            indent_guides=False, background_color="default",
        )
        title = Text(no_wrap=True, overflow="ellipsis")
        title.append(f"{hit.path}:{hit.start_line}-{hit.end_line}", style="bold")
        if hit.scope:
            title.append(f"  {hit.scope}")
        if stale:
            title.append("  (changed on disk: showing indexed text)", style="bold red")
        self.query_one("#preview-title", Static).update(title)
        self.query_one("#preview-body", Static).update(syntax)
        self.scroll_home(animate=False)
