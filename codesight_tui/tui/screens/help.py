"""F1: every key binding of the app and its widgets, with the key in force and its id for remapping
(a ``[keymap]`` table in the config, ``tui/keys.py``)."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

_NAMES = {
    "escape": "Esc",
    "enter": "Enter",
    "tab": "Tab",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "question_mark": "?",
    "up": "Up",
    "down": "Down",
    "backspace": "Backspace",
}


def key_label(key: str) -> str:
    """One spelling for every key: ``Esc``, ``Tab``, ``Ctrl+C``, ``Alt+Y``, ``Shift+Up``, ``F1``."""
    out = []
    for k in key.split(","):
        *mods, base = k.strip().split("+")
        base = _NAMES.get(
            base, base.upper() if len(base) == 1 or base[0] == "f" and base[1:].isdigit() else base.capitalize()
        )
        out.append("+".join([m.capitalize() for m in mods] + [base]))
    return ", ".join(out)


ID_MIN_WIDTH = 76  # the ids (for remapping keys) are shown where they fit beside key and action


def bindings_table(groups: list[tuple[str, list[Binding]]], ids: bool = True) -> Table:
    table = Table(box=None, expand=True, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("Key", style="bold cyan", no_wrap=True)
    table.add_column("Action")
    if ids:
        table.add_column("Id", style="dim", no_wrap=True)
    for title, bindings in groups:
        table.add_row(f"[b]{title}[/b]", "", *([""] if ids else []))
        for b in bindings:
            table.add_row(key_label(b.key), b.description, *([b.id or ""] if ids else []))
    return table


class HelpScreen(ModalScreen[None]):
    """Lists all bindings; Esc, F1, q or ? closes it (nothing is typed here)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,f1,question_mark", "dismiss", "Close help", id="help.close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%; border: thick $accent; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, groups: list[tuple[str, list[Binding]]]) -> None:
        super().__init__()
        self.groups = groups

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(
                "[b]codesight keys[/b]  (Esc closes)\n"
                "Letters always go to the query; every action is on Enter, Tab, Esc, Ctrl, Alt,"
                " Shift+arrows or an F-key.\n"
            )
            yield Static(bindings_table(self.groups, ids=self.app.size.width >= ID_MIN_WIDTH), id="help-table")
            yield Static(
                "\nIn the query box, type words, a question or an identifier. Results update as you type."
                "\nBadges: [b green]BV[/] found by BM25 and the full model's vectors, [b green]Bv[/] by BM25"
                " and the static tier's, [cyan]B[/] BM25 (words) only, [magenta]V[/] the full model's vectors"
                " (meaning) only, [magenta]v[/] the static tier's only, [b yellow]S[/] a definition of the"
                " name you typed, found by its name alone."
                "\nRows: rank, badge, path:line (where Enter opens), the definition's name."
                " [b]stale[/b]: the file changed since it was indexed."
            )
