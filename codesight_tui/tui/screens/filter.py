"""Ctrl+F: restrict results to a path glob and/or a language."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class FilterScreen(ModalScreen[tuple[str, str] | None]):
    """Returns ``(glob, language)`` (empty strings clear them) or None if cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="filter.cancel")]
    DEFAULT_CSS = """
    FilterScreen { align: center middle; }
    FilterScreen > Vertical { width: 70; height: auto; border: thick $accent; background: $surface; padding: 1 2; }
    FilterScreen Input { margin-bottom: 1; }
    """

    def __init__(self, glob: str = "", language: str = "") -> None:
        super().__init__()
        self.glob, self.language = glob, language

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Path glob (gitignore style: *.py, src/, lib/**/test_*.js)")
            yield Input(self.glob, placeholder="any path", id="filter-glob")
            yield Label("Language (python, javascript, go, rust, ...)")
            yield Input(self.language, placeholder="any language", id="filter-lang")
            yield Label("[dim]Enter applies · Esc cancels · empty clears[/dim]")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        glob = self.query_one("#filter-glob", Input).value.strip()
        lang = self.query_one("#filter-lang", Input).value.strip().lower()
        self.dismiss((glob, lang))

    def action_cancel(self) -> None:
        self.dismiss(None)
